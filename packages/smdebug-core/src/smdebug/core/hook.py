"""The framework-neutral hook: step and mode bookkeeping, deciding what is due, and saving it.

Framework plugins subclass :class:`BaseHook` and only translate framework events into four calls:
:meth:`BaseHook.begin_step` at a step boundary, :meth:`BaseHook.record` for each candidate tensor
(cheap when the tensor is not due: check :meth:`BaseHook.is_due` first to skip the conversion),
:meth:`BaseHook.end_step`, and :meth:`BaseHook.close` at the end.

Two promises to users:
* Saving never stalls training: tensors are snapshotted on the training thread and encoded/written on
  a background thread, with a bounded byte budget (back-pressure, not unbounded memory).
* The hook never breaks training: an internal error is logged once, clearly, and the hook disables
  itself; the training loop carries on. Bad configuration fails at construction with a specific error.
"""

from __future__ import annotations

import atexit
import functools
import inspect
import json
import os
import re
import signal
import socket
import threading
import time
import weakref
from typing import Dict, Iterable, List, NamedTuple, Optional, Sequence, Set, Tuple

import numpy as np

from smdebug.core import singleton
from smdebug.core.collection import (
    mutation_count,
    NON_HISTOGRAM_COLLECTIONS,
    SCALAR_COLLECTIONS,
    NON_REDUCTION_COLLECTIONS,
    TRAIN_ONLY_COLLECTIONS,
    Collection,
    CollectionKeys,
)
from smdebug.core.activations import ACTIVATION_COLLECTIONS
from smdebug.core.collection_manager import CollectionManager
from smdebug.core.locations import (
    CLAIM_FILE,
    END_OF_JOB_FILE,
    WORKERS_ENDED_DIR,
    collections_file_name,
    worker_end_file_name,
    worker_name_problem,
)
from smdebug.core.logger import WarnsOnce, get_logger
from smdebug.core.modes import ModeKeys
from smdebug.core.names import did_you_mean
from smdebug.core.reduction_config import ReductionConfig
from smdebug.core.reductions import compute_reduction, reduction_tensor_name
from smdebug.core.run_info import record_framework
from smdebug.core.save_config import SaveConfig, SaveConfigMode, schedule_changes
from smdebug.core.snapshot import POOL_MIN_BYTES, give_back, snapshot
from smdebug.core import stop_signal
from smdebug.core.state_store import StateStore
from smdebug.core.stop_signal import StopSignalWatcher
from smdebug.core.storage.base import Storage, is_s3_path, parse_s3_path
from smdebug.core.storage.factory import get_storage
from smdebug.core.storage.errors import StorageAccessDenied, StorageError, StorageUnavailable
from smdebug.core.legacy.hook_methods import LegacyHookMethods
from smdebug.core.tensorboard import TensorBoardWriter, histogram_tag
from smdebug.core.timeline import TraceTimeline
from smdebug.core.tfevent.tensor_codec import make_numpy_array
from smdebug.core.writer import BackgroundWriter, format_steps
from smdebug.exceptions import (
    InvalidConfigurationError,
    SMDebugError,
    SMDebugRuntimeError,
    SMDebugTypeError,
    SMDebugValueError,
    TrainingStopRequested,
)

SCALAR_PREFIX = "scalar/"
#: a claim file holds a pid (and a host); a larger one planted in out_dir is never read whole
_MAX_CLAIM_BYTES = 4096
#: built-in collections that may be empty without a configuration error
_QUIET_WHEN_EMPTY = frozenset((CollectionKeys.DEFAULT, CollectionKeys.ALL, CollectionKeys.INPUTS, CollectionKeys.OUTPUTS,
                               CollectionKeys.PREDICTIONS, CollectionKeys.LABELS, *ACTIVATION_COLLECTIONS))
logger = get_logger()


#: hooks not yet closed, closed by the SIGTERM handler below
_open_hooks: "weakref.WeakSet" = weakref.WeakSet()
_sigterm_pid: List[Optional[int]] = [None]  # the process that installed the handler


def _on_sigterm(signum, frame) -> None:
    """SIGTERM (what schedulers, ``docker stop`` and ``kill`` send): close every open hook, so the steps
    in flight are written and the run is marked as ended, then die of SIGTERM as the sender expects."""
    if os.getpid() == _sigterm_pid[0]:  # not in a forked child (DataLoader workers inherit handlers)
        for hook in list(_open_hooks):
            try:
                hook.close()
            except Exception:  # noqa: BLE001
                pass
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def _install_sigterm_handler() -> None:
    """Install :func:`_on_sigterm` unless the program handles SIGTERM itself (its handler usually ends
    with ``sys.exit``, which runs the at-exit close) or ``SMDEBUG_HANDLE_SIGTERM=false``."""
    if os.environ.get("SMDEBUG_HANDLE_SIGTERM", "true").strip().lower() in ("0", "false", "no", "off"):
        return
    if not hasattr(signal, "SIGTERM") or threading.current_thread() is not threading.main_thread():
        return
    try:
        current = signal.getsignal(signal.SIGTERM)
        if current is _on_sigterm and _sigterm_pid[0] == os.getpid():
            return
        if current not in (signal.SIG_DFL, None, _on_sigterm):
            return
        signal.signal(signal.SIGTERM, _on_sigterm)
    except (ValueError, OSError, RuntimeError):
        return
    _sigterm_pid[0] = os.getpid()


class _SavePlan(NamedTuple):
    """What saving one tensor at a step means, given the collections due then (see BaseHook._plans)."""

    write_raw: bool
    ops: Tuple[Tuple[str, bool], ...]  # reductions to store
    save_shape: bool
    tb: Tuple[bool, Optional[str]]  # TensorBoard: (a scalar?, histogram collection or None)
    member_of: Tuple[set, ...]  # the tensor-name sets of the collections it is saved for


def _guarded(default=None):
    """Wrap a public hook method so an error inside smdebug never reaches the training loop.

    Misuse of the API (an :class:`SMDebugError` from validating the caller's arguments) is logged and
    the call is skipped; anything else is an internal failure: logged once with its traceback, and the
    hook disables itself for the rest of the run.
    """

    def wrap(fn):
        @functools.wraps(fn)
        def inner(self, *args, **kwargs):
            if self._disabled:
                return default
            try:
                return fn(self, *args, **kwargs)
            except TrainingStopRequested:
                raise  # not a failure: a rule asked the loop to stop, and the hook already closed cleanly
            except SMDebugError as e:
                logger.error("smdebug: %s() ignored: %s", fn.__name__, e)
                return default
            except Exception as e:  # noqa: BLE001 - the whole point: never crash training
                self._fail(f"{fn.__name__}()", e)
                return default

        return inner

    return wrap


class BaseHook(WarnsOnce, LegacyHookMethods):
    """Base class of every framework hook (PyTorch/MXNet/XGBoost ``Hook``, Keras ``KerasHook``...)."""

    #: name used for plugin look-ups and in messages
    framework_name: str = "generic"
    #: collections saved whatever ``include_collections`` says
    default_include_collections: Sequence[str] = ()
    #: default save interval when no SaveConfig is given (XGBoost uses 10)
    default_save_interval: Optional[int] = None
    #: collections class; plugins subclass Collection to add helpers such as ``add_module_tensors``
    collection_class = Collection
    #: first step number minus one (callback hooks count from 0)
    init_step: int = -1
    #: keep ``:0`` device suffixes in reduction names (TF does)
    keep_device_suffix_in_reductions: bool = False
    #: what a stop signal from a rule does at the next step boundary: "raise" closes the hook and raises
    #: TrainingStopRequested out of the hook call (loops the hook cannot end any other way); "flag" only
    #: sets ``stop_requested`` (callback frameworks end training their own way; user loops may poll it)
    on_stop: str = "raise"

    def __init__(
        self,
        out_dir: Optional[str] = None,
        export_tensorboard: bool = False,
        tensorboard_dir: Optional[str] = None,
        dry_run: bool = False,
        reduction_config: Optional[ReductionConfig] = None,
        save_config=None,
        include_regex: Optional[Iterable[str]] = None,
        include_collections: Optional[Iterable[str]] = None,
        save_all: bool = False,
        include_workers: str = "one",
    ):
        self._disabled = False
        self._closed = False
        self._failure: Optional[str] = None
        self.out_dir = self._validate_out_dir(out_dir, dry_run)
        self._out_is_s3 = is_s3_path(self.out_dir)
        if include_workers not in ("one", "all"):
            raise InvalidConfigurationError(f"include_workers must be 'one' or 'all', got {include_workers!r}")
        if reduction_config is not None and not isinstance(reduction_config, ReductionConfig):
            raise InvalidConfigurationError(
                f"reduction_config must be a ReductionConfig, got {type(reduction_config).__name__}"
            )
        if save_config is None and self.default_save_interval is not None:
            save_config = SaveConfig(save_interval=self.default_save_interval)
        try:
            self.save_config = SaveConfig.parse(save_config)
        except SMDebugValueError as e:
            raise InvalidConfigurationError(f"Invalid save_config: {e}") from None
        self.reduction_config = reduction_config or ReductionConfig(save_raw_tensor=True)
        self.dry_run = bool(dry_run)
        self.include_workers = include_workers
        self.export_tensorboard = bool(export_tensorboard)
        self.tensorboard_dir = self._resolve_tensorboard_dir(export_tensorboard, tensorboard_dir)
        self.save_all = bool(save_all)

        # step bookkeeping
        self.mode = ModeKeys.GLOBAL
        self.step = self.init_step
        self.mode_steps: Dict[ModeKeys, int] = {m: self.init_step for m in ModeKeys}
        self._in_step = False
        self._wrote_this_step = False
        # Threads: ``record`` may be called from any thread (DataLoader-fed loops, a model called from
        # two threads, autograd's device threads); step boundaries come from one thread at a time. This
        # lock makes a step boundary atomic for the threads recording: without it a record that read
        # the step number just before another thread ended that step was queued after the step's files
        # were completed, reopened the step and replaced its files, losing what they held. It is taken
        # at step boundaries and once per tensor actually saved, never by ``is_due`` or skipped records.
        self._step_lock = threading.RLock()
        # The last step with data stays open until the next step begins (or flush/close), so values
        # logged between steps (e.g. save_scalar after end_step) still land in it.
        self._open_step: Optional[int] = None
        self._last_closed_step = -1
        self._pending_scalars: List[tuple] = []
        self.last_saved_step: Optional[int] = None
        #: set when a rule asked this job to stop (see smdebug.core.stop_signal)
        self.stop_requested = False
        self.stop_reason: Optional[str] = None
        self._stop_watcher = None if dry_run else _make_stop_watcher(self.out_dir)

        # resume numbering after a restart from a checkpoint (spot training)
        self._state_store = StateStore()
        self.training_run = 0
        latest = self._state_store.latest() if self._state_store.active else None
        if latest is not None:
            self.training_run = int(latest.get("training-run", 0)) + 1
            self.step = int(latest.get("latest-global-step-seen", self.init_step))
            for name, value in (latest.get("latest-mode-step") or {}).items():
                if name in ModeKeys.__members__ and value is not None:
                    self.mode_steps[ModeKeys[name]] = int(value)
            logger.info("smdebug: resuming from checkpoint state at global step %d", self.step)

        # collections
        self.collection_manager = CollectionManager()
        self.collection_manager.collection_class = self.collection_class
        record_framework(self.collection_manager, self.framework_name)  # how readers pick the run's rules
        for coll in self._core_collections() + list(self.default_collections()):
            self.collection_manager.add(coll)
        if include_regex:
            regexes = [include_regex] if isinstance(include_regex, str) else list(include_regex)
            self.collection_manager.get(CollectionKeys.DEFAULT).include(regexes)
        if save_all:
            self.collection_manager.get(CollectionKeys.ALL).include(".*")
        if include_collections is not None:
            if isinstance(include_collections, str) or not all(isinstance(c, str) for c in include_collections):
                raise InvalidConfigurationError("include_collections must be a list of collection names")
        self.include_collections: List[str] = list(include_collections or [])
        for name in self.default_include_collections:
            if name not in self.include_collections:
                self.include_collections.append(name)
        if include_regex and CollectionKeys.DEFAULT not in self.include_collections:
            self.include_collections.append(CollectionKeys.DEFAULT)
        if save_all and CollectionKeys.ALL not in self.include_collections:
            self.include_collections.append(CollectionKeys.ALL)
        self._prepared_token = None
        self._included: List[Collection] = []
        self._reported_collections: Set[str] = set()  # included names already reported as matching nothing
        self._match_cache: Dict[str, Tuple[Collection, ...]] = {}
        # (tensor name, due collections) -> what saving it means (_SavePlan); the due sets are interned
        # frozensets, equal from one step to the next, so a tensor's plan is worked out once per schedule
        # state instead of at every record
        self._plans: Dict[tuple, "_SavePlan"] = {}
        self._due_sets: Dict[frozenset, frozenset] = {}
        # (first mode step that may save, mode, prepared token, schedule changes, the empty due set):
        # the steps before it need no look at the schedules (see _compute_due)
        self._quiet: Optional[tuple] = None
        self._due: Set[str] = set()
        self._pending_user_tensors: List[Tuple[str, object]] = []

        # workers and writing (worker is detected at the first step: distributed runtimes are often
        # initialised after the hook is built)
        self.worker: Optional[str] = None
        self.rank = 0
        self.num_workers = 1
        self._is_writer = True
        self._storage: Optional[Storage] = None
        self._writer: Optional[BackgroundWriter] = None
        self._tb: Optional[TensorBoardWriter] = None
        self._claimed = False
        self._claim_payload = b""
        self._claim_refreshed = 0.0
        self._exported_collections = 0
        self._unsaved_steps: List[int] = []
        self._timeline: Optional[TraceTimeline] = None  # trace events (record_trace_events), made on use

        self._setup()
        singleton.set_hook(self)
        atexit.register(self._atexit_close)
        _open_hooks.add(self)
        _install_sigterm_handler()
        self._notify("smdebug_hook_created", hook=self)

    def _setup(self) -> None:
        """Framework hooks create their own state here, so they need no constructor of their own (the
        constructor's arguments are BaseHook's, :data:`ARGUMENTS`). Called once by ``__init__``, after the
        core's state exists and before the hook is registered and announced to plugins; an override calls
        ``super()._setup()``."""

    # ------------------------------------------------------------------------------------------
    # construction helpers
    # ------------------------------------------------------------------------------------------
    @staticmethod
    def _validate_out_dir(out_dir, dry_run) -> str:
        if out_dir is None or (isinstance(out_dir, str) and not out_dir.strip()):
            raise InvalidConfigurationError("out_dir is required: the directory (or s3:// path) to save to")
        if not isinstance(out_dir, (str, os.PathLike)):
            raise InvalidConfigurationError(f"out_dir must be a path string, got {type(out_dir).__name__}")
        out_dir = os.fspath(out_dir).strip()
        if is_s3_path(out_dir):
            bucket, _ = parse_s3_path(out_dir)
            if not bucket:
                raise InvalidConfigurationError(f"out_dir {out_dir!r} names no bucket: use s3://bucket/prefix")
            return out_dir
        out_dir = os.path.abspath(os.path.expanduser(out_dir))
        if os.path.exists(out_dir) and not os.path.isdir(out_dir):
            raise InvalidConfigurationError(f"out_dir {out_dir} exists and is not a directory")
        if os.path.exists(os.path.join(out_dir, END_OF_JOB_FILE)) and not _launched_as_one_of_many():
            # (In a multi-process job a slow worker may start after a fast one finished the run; it is
            # not refused here but at its first write, where non-writers never get.)
            raise SMDebugRuntimeError(
                f"out_dir {out_dir} already holds a finished run ({END_OF_JOB_FILE} exists). "
                "Use a new directory so that run's data is not mixed with this one."
            )
        if not dry_run:
            try:
                os.makedirs(out_dir, exist_ok=True)
            except OSError as e:
                raise InvalidConfigurationError(f"Cannot create out_dir {out_dir}: {e.strerror}") from None
            if not os.access(out_dir, os.W_OK | os.X_OK):
                raise InvalidConfigurationError(f"out_dir {out_dir} is not writable")
        return out_dir

    def _resolve_tensorboard_dir(self, export_tensorboard, tensorboard_dir) -> Optional[str]:
        if tensorboard_dir:
            return tensorboard_dir if is_s3_path(tensorboard_dir) else os.path.expanduser(tensorboard_dir)
        if export_tensorboard:
            return self.out_dir.rstrip("/") + "/tensorboard"
        return None

    def _core_collections(self) -> List[Collection]:
        return [
            self.collection_class(CollectionKeys.DEFAULT),
            self.collection_class(CollectionKeys.ALL),
            self.collection_class(CollectionKeys.SCALARS, include_regex=["^" + re.escape(SCALAR_PREFIX)]),
        ]

    def default_collections(self) -> List[Collection]:
        """Collections a framework creates with their default regexes. Plugins override this."""
        return []

    @classmethod
    def recommended(cls, out_dir: str, **kwargs) -> "BaseHook":
        """A hook that saves what the recommended rules for this framework need, so that
        ``smdebug rules run OUT_DIR`` (or ``smdebug.rules.run_rules(OUT_DIR)``), with no rule named, can
        judge the run::

            hook = smd.Hook.recommended("/tmp/run")      # then register the model as usual

        The collections come from the installed rule packs (smdebug-rules: weights, gradients, losses, the
        model's inputs, the activation collections...), saved on :meth:`SaveConfig.tapered`: every step
        until step 10, then steps 10, 20, 40... 320, then every 500 steps. Other keyword arguments are the
        constructor's; ``include_collections`` adds to the recommended ones, ``save_config`` replaces the
        schedule.

        :raises InvalidConfigurationError: no rule pack is installed that recommends rules for this framework.
        """
        from smdebug.core.presets import recommended_collections, recommended_save_config

        names = recommended_collections(cls.framework_name)
        extra = kwargs.pop("include_collections", None) or []
        if isinstance(extra, str):
            raise InvalidConfigurationError("include_collections must be a list of collection names")
        kwargs.setdefault("save_config", recommended_save_config())
        return cls(out_dir=out_dir, include_collections=names + [c for c in extra if c not in names], **kwargs)

    @classmethod
    def create_from_json_file(cls, json_file_path: Optional[str] = None):
        """Build a hook from the SageMaker JSON contract (``SMDEBUG_CONFIG_FILE_PATH``)."""
        from smdebug.core.json_config import apply_collection_configs, load_hook_config

        kwargs = load_hook_config(json_file_path, default_save_interval=cls.default_save_interval)
        coll_configs = kwargs.pop("collection_configs", {})
        hook = cls(**kwargs)
        apply_collection_configs(hook.get_collection, coll_configs)
        return hook

    # ------------------------------------------------------------------------------------------
    # failure handling
    # ------------------------------------------------------------------------------------------
    def _fail(self, where: str, exc: BaseException) -> None:
        if self._disabled:
            return
        self._disabled = True
        self._failure = f"{where}: {type(exc).__name__}: {exc}"
        if isinstance(exc, StorageError):
            # Not a bug of ours: permissions, credentials, a missing bucket. One clear line, no traceback.
            logger.error("smdebug: cannot save to %s: %s. The hook stops saving; training continues.",
                         self.out_dir, exc)
        else:
            logger.error(
                "smdebug hook disabled after an internal error in %s (%s: %s). Training continues; steps "
                "saved so far in %s are intact.",
                where, type(exc).__name__, exc, self.out_dir, exc_info=exc,
            )
        if self._writer is not None:
            try:
                self._writer.close(timeout=30)
            except Exception:  # noqa: BLE001
                pass
        self._release_claim()

    @property
    def disabled(self) -> bool:
        return self._disabled

    def _check_writer(self) -> None:
        if self._writer is not None and self._writer.error is not None:
            err = self._writer.error
            self._unsaved_steps = self._writer.unsaved_steps
            self._writer = None
            self._fail(f"writing to {self.out_dir}", err)

    @property
    def unsaved_steps(self) -> List[int]:
        """Steps that were due but did not reach storage (remote store unreachable or too slow)."""
        if self._writer is not None:
            return self._writer.unsaved_steps
        return list(self._unsaved_steps)

    _NOTIFICATIONS = ("smdebug_hook_created", "smdebug_step_end", "smdebug_hook_closed")

    def _listens(self, hook_name: str) -> bool:
        """False once plugins have been looked up (see :meth:`_notify`) and none listens to ``hook_name``."""
        listeners = self.__dict__.get("_listeners")
        return listeners is None or hook_name in listeners

    def _notify(self, hook_name: str, **kwargs) -> None:
        """Tell plugins about a hook event. Runs every step, so which notifications have listeners is
        looked up once, after plugin discovery (plugins registered later are not notified)."""
        listeners = self.__dict__.get("_listeners")
        if listeners is None:
            try:
                from smdebug.core.plugins import manager

                if not manager.plugins_loaded():
                    return
                pm = manager.get_plugin_manager()
                listeners = {n: getattr(pm.hook, n) for n in self._NOTIFICATIONS if getattr(pm.hook, n).get_hookimpls()}
            except Exception:  # noqa: BLE001 - plugins must not stop the hook
                return
            self._listeners = listeners
        caller = listeners.get(hook_name)
        if caller is None:
            return
        try:
            caller(**kwargs)
        except Exception as e:  # noqa: BLE001
            logger.warning("A plugin failed in %s: %s", hook_name, e)

    # ------------------------------------------------------------------------------------------
    # collections
    # ------------------------------------------------------------------------------------------
    def get_collection(self, name: str, create: bool = True) -> Collection:
        coll = self.collection_manager.get(name, create=create)
        self._prepared_token = None
        return coll

    def get_collections(self) -> Dict[str, Collection]:
        return self.collection_manager.get_collections()

    def add_collection(self, collection: Collection) -> None:
        if not isinstance(collection, Collection):
            raise SMDebugTypeError(f"add_collection expects a Collection, got {type(collection).__name__}")
        self.collection_manager.add(collection)
        self._prepared_token = None

    def add_to_collection(self, collection_name: str, args) -> None:
        """Add tensor names (a name or a list of names) to a collection, creating it if needed."""
        coll = self.get_collection(collection_name)
        names = [args] if isinstance(args, str) else list(args)
        for n in names:
            coll.add_tensor_name(n)
        if collection_name not in self.include_collections:
            self.include_collections.append(collection_name)
        self._prepared_token = None

    def _token(self):
        # Cheap on purpose (it runs every step): any change to any collection bumps mutation_count().
        return tuple(self.include_collections), mutation_count(), id(self.collection_manager.collections)

    def _prepare_collections(self) -> None:
        """Give every collection a full save config and reduction config; pick the included ones."""
        token = self._token()
        if token == self._prepared_token:
            return
        self._before_prepare()
        included = []
        for name in self.include_collections:
            coll = self.collection_manager.collections.get(name)
            known = coll is not None
            if coll is None:
                coll = self.collection_manager.get(name)
            if not coll.has_regex() and not coll.tensor_names:
                if name in _QUIET_WHEN_EMPTY:
                    # empty built-ins simply match nothing; those a framework hook fills from the model may
                    # be empty because the model has nothing of the kind (no tanh layer, no classification
                    # loss), which the run records (smdebug.core.activations), or not registered yet
                    continue
                self._report_empty_collection(name, known)
                continue
            included.append(coll)
        for coll in self.collection_manager.collections.values():
            if coll.save_config is None:
                coll.save_config = SaveConfig(
                    mode_save_configs={m: self.save_config.get_save_config(m) for m in ModeKeys}
                )
            coll.save_config.merge_default(self.save_config)
            if coll.name in NON_REDUCTION_COLLECTIONS:
                coll.reduction_config = ReductionConfig(save_raw_tensor=True)
            if coll.name in NON_HISTOGRAM_COLLECTIONS:
                coll.save_histogram = False
        self._included = included
        self._match_cache.clear()
        self._plans.clear()
        self._prepared_token = self._token()
        self._after_prepare()

    def _report_empty_collection(self, name: str, known: bool) -> None:
        """Once per name: an included collection that can match nothing, most often a typo."""
        if name in self._reported_collections:
            return
        self._reported_collections.add(name)
        usable = [c.name for c in self.collection_manager.collections.values() if c.has_regex() or c.tensor_names]
        hint = did_you_mean(name, usable)
        if known:
            logger.error("smdebug: collection %r has no include_regex and no tensor_names%s, so it can never match "
                         "a tensor; it is skipped (give it a regex or tensor names).", name, hint)
        else:
            logger.error("smdebug: include_collections names %r, which is not a collection of this hook%s; it is "
                         "skipped (collections: %s).", name, hint, ", ".join(sorted(usable)) or "none")

    def _before_prepare(self) -> None:
        """Plugins: resolve framework objects in collections (e.g. modules) before they are prepared."""

    def _after_prepare(self) -> None:
        """Plugins: react to the included collections having changed (e.g. attach framework hooks)."""

    def _matching(self, name: str) -> Tuple[Collection, ...]:
        colls = self._match_cache.get(name)
        if colls is None:
            colls = tuple(c for c in self._included if c.matches(name))
            if len(self._match_cache) > 100_000:
                self._match_cache.clear()
            self._match_cache[name] = colls
        return colls

    def _compute_due(self) -> frozenset:
        mode, mode_step = self.mode, self.mode_steps[self.mode]
        quiet = self._quiet
        # Most steps save nothing (the default saves every 500th): once a step is found to have nothing
        # due, the schedules say when something next is, and the steps until then skip them entirely.
        if (quiet is not None and mode_step < quiet[0] and quiet[1] is mode and quiet[2] is self._prepared_token
                and quiet[3] == schedule_changes()):
            return quiet[4]
        train_only_skip = mode in (ModeKeys.EVAL, ModeKeys.PREDICT)
        colls = [c for c in self._included if not (train_only_skip and c.name in TRAIN_ONLY_COLLECTIONS)]
        due = self._intern_due({c.name for c in colls if c.save_config.should_save_step(mode, mode_step)})
        if not due:
            upcoming = [scm.next_save_step(mode_step) for scm in (c.save_config.mode_save_configs[mode] for c in colls)
                        if scm is not None]
            upcoming = [n for n in upcoming if n is not None]
            self._quiet = (min(upcoming) if upcoming else float("inf"), mode, self._prepared_token,
                           schedule_changes(), due)
        return due

    def has_default_hook_configuration(self) -> bool:
        return set(self.include_collections) == set(self.default_include_collections)

    def should_save_tensor_or_collection(self, tensor_name: str, collection_name: str) -> bool:
        if self._prepared_token is None:
            return False
        if collection_name in self._due:
            return True
        return self.is_due(tensor_name)

    # ------------------------------------------------------------------------------------------
    # modes and steps
    # ------------------------------------------------------------------------------------------
    def set_mode(self, mode) -> None:
        """Switch to ``smd.modes.TRAIN``/``EVAL``/``PREDICT``/``GLOBAL``. Anything else raises
        ValueError (:class:`SMDebugValueError`) at once, as in smdebug 1.0.x: it is a mistake in the
        training script, not a failure of the hook, so it is not logged and ignored."""
        if not isinstance(mode, ModeKeys):
            raise SMDebugValueError(f"Invalid mode {mode!r}: use smd.modes.TRAIN/EVAL/PREDICT/GLOBAL")
        if not self._disabled:
            self.mode = mode

    @_guarded()
    def begin_step(self) -> None:
        """Start the next step of the current mode (closing the previous one if still open)."""
        with self._step_lock:
            self._begin_step()

    def _begin_step(self) -> None:
        if self._in_step:
            self._finish_step()
        self._close_open_step()
        self._check_writer()
        if self._disabled:
            return
        if self._stop_watcher is not None and not self.stop_requested:
            self._check_stop_signal()
        if self._claimed and self._out_is_s3 and self._writer is not None:
            self._refresh_s3_claim()
        self.step += 1
        self.mode_steps[self.mode] += 1
        self.mode_steps[ModeKeys.GLOBAL] = self.step
        self._in_step = True
        self._wrote_this_step = False
        if self._state_store.active and self._state_store.checkpoint_updated():
            # The user just checkpointed: the previous step is what a restart resumes after.
            self._state_store.record(self.training_run, self.step - 1, self.last_saved_step,
                                     {m: s - (1 if m in (self.mode, ModeKeys.GLOBAL) else 0)
                                      for m, s in self.mode_steps.items()})
        if self.worker is None:
            self._init_worker()
        self._prepare_collections()
        self._due = self._compute_due() if self._is_writer else set()
        if self._due and self._writer is None and not self.dry_run and self._is_writer:
            self._start_writing()
        if self._pending_user_tensors:
            pending, self._pending_user_tensors = self._pending_user_tensors, []
            for name, value in pending:
                self._record(name, value)
        if self._pending_scalars:
            pending, self._pending_scalars = self._pending_scalars, []
            for args in pending:
                self._write_scalar(*args)

    @_guarded()
    def end_step(self) -> None:
        """Finish the current step: its files are completed in the background."""
        with self._step_lock:
            if self._in_step:
                self._finish_step()
            self._check_writer()

    def _check_stop_signal(self) -> None:
        try:
            signal = self._stop_watcher.poll()
        except Exception as e:  # noqa: BLE001 - an unreadable signal location must not stop training
            logger.debug("smdebug: could not look for a stop signal in %s: %s", self.out_dir, e)
            return
        if signal is None:
            return
        self.stop_requested = True
        self.stop_reason = stop_signal.describe(signal)
        self._on_stop_requested(signal)

    def _on_stop_requested(self, signal: dict) -> None:
        """React to a stop signal at a step boundary, and say so once: the exception's message, or one
        log line. Plugins override this to stop their framework's loop their own way (Keras:
        ``model.stop_training``; XGBoost: the callback returns True), logging that line themselves."""
        if self.on_stop == "flag":
            logger.warning("smdebug: %s; stopping training at step %d", self.stop_reason, self.step)
            return
        self.close()
        self._disabled = True  # the run is complete: later hook calls (if the loop goes on) are no-ops
        raise TrainingStopRequested(
            f"{self.stop_reason}. smdebug stopped the training loop; everything up to step {self.step} is "
            f"saved in {self.out_dir}.", rule=signal.get("rule"), step=signal.get("step"),
            reason=signal.get("reason"))

    def _finish_step(self) -> None:
        self._in_step = False
        if self._wrote_this_step and self._writer is not None:
            self._open_step = self.step
            self.last_saved_step = self.step
        self._due = set()
        if self._listens("smdebug_step_end"):  # (every step: its arguments are not built for nobody)
            self._notify("smdebug_step_end", hook=self, step=self.step, mode=self.mode,
                         mode_step=self.mode_steps[self.mode])

    def _close_open_step(self) -> None:
        if self._open_step is not None and self._writer is not None:
            self._writer.close_step(self._open_step)
            if self._tb is not None:
                self._writer.call(self._tb.flush)
            self._last_closed_step = self._open_step
            if self._exported_collections < 2:
                self._export_collections()
        self._open_step = None

    @property
    def is_writing(self) -> bool:
        """True if anything is due at the current step (plugins use it to skip all work quickly)."""
        return bool(self._due) and not self._disabled

    # ------------------------------------------------------------------------------------------
    # workers and files
    # ------------------------------------------------------------------------------------------
    def _detect_worker(self):
        """(rank, size, name) of this process, from the plugins' ``smdebug_detect_worker``."""
        try:
            from smdebug.core.plugins import manager

            return manager.detect_worker(self.framework_name)
        except ImportError as e:  # plugin system unavailable: behave as a single worker
            logger.warning("smdebug: worker detection unavailable (%s); assuming a single worker", e)
            return _SingleWorker()

    def _init_worker(self) -> None:
        info = self._detect_worker()
        self.rank, size = info.rank, info.size
        self.worker = info.name or f"worker_{info.rank}"
        problem = worker_name_problem(self.worker)
        if problem is not None:
            # (a name the reader cannot read back would make a run that looks empty)
            logger.warning("smdebug: worker name %r (SMDEBUG_WORKER_NAME or the framework's) cannot name "
                           "files: %s; this worker writes as 'worker_%d' instead", self.worker[:100], problem,
                           info.rank)
            self.worker = f"worker_{info.rank}"
        if self.include_workers == "one":
            self._is_writer = self.rank == 0
            self.num_workers = 1
        else:
            self._is_writer = True
            self.num_workers = size

    def _start_writing(self) -> None:
        s3 = is_s3_path(self.out_dir)
        try:
            self._storage = get_storage(self.out_dir)
            if s3:
                self._storage.ensure_bucket()
            finished = self._storage.exists(END_OF_JOB_FILE)
        except (StorageUnavailable, StorageAccessDenied) as e:
            # Unreachable right now (uploads wait for S3 in the background), or credentials that may
            # write but not read (a HEAD of a missing key is then 403): save anyway; if writing is
            # refused too, the first write says so.
            logger.warning("smdebug: could not look at %s before saving (%s); saving anyway.", self.out_dir, e)
            finished = False
        except StorageError as e:
            self._fail(f"opening {self.out_dir}", e)
            return
        if finished:
            logger.warning("smdebug: %s was marked as a finished run by another process; this hook will not "
                           "write to it.", self.out_dir)
            self._is_writer = False
            self._due = set()
            return
        if self.num_workers == 1:
            # Several processes sharing out_dir that each believe they are the only worker would
            # overwrite each other's files: the first to claim the directory writes, others don't.
            try:
                claimed = self._claim_s3() if s3 else self._claim()
            except StorageError as e:
                self._fail(f"claiming {self.out_dir}", e)
                return
            if not claimed:
                self._is_writer = False
                self._due = set()
                return
        self._writer = BackgroundWriter(self._storage, self.worker)
        if self.tensorboard_dir and self._tb is None:
            if is_s3_path(self.tensorboard_dir):
                logger.warning("smdebug: TensorBoard output to S3 is not supported; no TensorBoard files written")
            else:
                self._tb = TensorBoardWriter(self.tensorboard_dir)
        self._export_collections()

    def _claim(self) -> bool:
        data = str(os.getpid()).encode()
        if self._storage.create_exclusive(CLAIM_FILE, data):
            self._claimed = True
            return True
        try:
            owner = int(self._storage.read(CLAIM_FILE, 0, _MAX_CLAIM_BYTES).strip() or 0)
        except FileNotFoundError:
            owner = None  # released since we looked: just try again
        except (OSError, ValueError):
            owner = 0  # unreadable: treat as stale
        if owner and owner != os.getpid() and _pid_alive(owner):
            logger.warning(
                "smdebug: another process (pid %s) is already writing to %s as the only worker; this "
                "process (pid %s) will not write. Use a distinct out_dir per process or include_workers='all' "
                "with a distributed runtime.", owner, self.out_dir, os.getpid(),
            )
            return False
        if owner is not None:
            self._storage.remove(CLAIM_FILE)  # a claim left by a dead process
        self._claimed = self._storage.create_exclusive(CLAIM_FILE, data)
        if not self._claimed:
            logger.warning("smdebug: another process claimed %s first; this process (pid %s) will not write.",
                           self.out_dir, os.getpid())
        return self._claimed

    def _claim_s3(self) -> bool:
        """The claim on S3: a conditional PUT (``If-None-Match: *``) creates it atomically.

        A process on another machine cannot be asked whether it is alive, so the owner refreshes its
        claim every ``SMDEBUG_S3_CLAIM_REFRESH`` seconds (60) and a claim left alone for
        ``SMDEBUG_S3_CLAIM_STALE`` seconds (300) is stale; taking it over is a conditional PUT on the
        stale claim's ETag, so two processes cannot both take it over.
        """
        storage = self._storage
        host = socket.gethostname()
        self._claim_payload = json.dumps({"pid": os.getpid(), "host": host}).encode()
        try:
            for _ in range(2):
                if storage.create_exclusive(CLAIM_FILE, self._claim_payload):
                    return self._claim_taken()
                stat = storage.stat(CLAIM_FILE)
                if stat is not None:
                    break
            else:
                return self._claim_taken()  # created and removed under us twice: just write
            etag, age = stat
            try:
                owner = json.loads(storage.read(CLAIM_FILE, 0, _MAX_CLAIM_BYTES))
                owner_pid, owner_host = int(owner.get("pid", 0)), str(owner.get("host", ""))
            except (FileNotFoundError, ValueError, TypeError, AttributeError, StorageAccessDenied):
                owner_pid, owner_host = 0, ""
            if owner_host == host and owner_pid == os.getpid():
                return self._claim_taken()
            stale_after = float(os.environ.get("SMDEBUG_S3_CLAIM_STALE", 300))
            alive = age < stale_after and not (owner_host == host and owner_pid and not _pid_alive(owner_pid))
            if alive:
                logger.warning(
                    "smdebug: another process (pid %s on %s) is already writing to %s as the only worker; this "
                    "process (pid %s on %s) will not write. Use a distinct out_dir per process or "
                    "include_workers='all' with a distributed runtime.",
                    owner_pid or "?", owner_host or "?", self.out_dir, os.getpid(), host)
                return False
            if storage.replace_if_unchanged(CLAIM_FILE, self._claim_payload, etag):
                return self._claim_taken()
            logger.warning("smdebug: another process claimed %s first; this process (pid %s) will not write.",
                           self.out_dir, os.getpid())
            return False
        except StorageUnavailable as e:
            logger.warning("smdebug: could not claim %s (%s); saving without the claim.", self.out_dir, e)
            return True
        except StorageAccessDenied as e:
            if e.operation == "PutObject":
                raise  # may not write at all: reported once by the caller
            logger.warning("smdebug: could not check the claim on %s (%s); saving without it.", self.out_dir, e)
            return True

    def _claim_taken(self) -> bool:
        self._claimed = True
        self._claim_refreshed = time.monotonic()
        return True

    def _refresh_s3_claim(self) -> None:
        now = time.monotonic()
        if now - self._claim_refreshed >= float(os.environ.get("SMDEBUG_S3_CLAIM_REFRESH", 60)):
            self._claim_refreshed = now
            self._writer.call(self._storage.write_atomic, CLAIM_FILE, self._claim_payload)

    def _release_claim(self) -> None:
        if self._claimed and self._storage is not None:
            try:
                self._storage.remove(CLAIM_FILE)
            except OSError:
                pass
            self._claimed = False

    def _export_collections(self) -> None:
        if self._writer is None:
            return
        self.collection_manager.set_num_workers(self.num_workers)
        payload = self.collection_manager.dumps().encode("utf-8")
        self._writer.call(self._storage.write_atomic, collections_file_name(self.worker), payload)
        self._exported_collections += 1

    def export_collections(self) -> None:
        self._export_collections()

    # ------------------------------------------------------------------------------------------
    # saving
    # ------------------------------------------------------------------------------------------
    def is_due(self, tensor_name: str) -> bool:
        """Would a tensor of this name be saved at the current step?"""
        if not self._due or self._disabled:
            return False
        due = self._due
        return any(c.name in due for c in self._matching(tensor_name))

    def to_numpy(self, value) -> np.ndarray:
        """Convert a framework tensor to numpy (through the plugins' ``smdebug_tensor_to_numpy``)."""
        if isinstance(value, np.ndarray):
            return value
        if isinstance(value, (list, tuple, int, float, bool, np.generic, str)):
            return make_numpy_array(value)
        if isinstance(value, dict):  # (make_numpy_array gives a 0-d object array, which no record holds)
            raise SMDebugTypeError("A dict cannot be saved as a tensor; save its values one by one")
        from smdebug.core.plugins import manager

        return make_numpy_array(manager.tensor_to_numpy(value))

    @_guarded(default=False)
    def record(self, tensor_name: str, value) -> bool:
        """Save ``value`` as ``tensor_name`` if a due collection includes it. Returns True if saved."""
        return self._record(tensor_name, value)

    def _record(self, tensor_name: str, value, force_collections: Sequence[Collection] = ()) -> bool:
        if not self._in_step or not self._due:
            return False
        step = self.step
        due = self._due
        plan = self._make_plan(tensor_name, due, force_collections) if force_collections else self._plan(tensor_name)
        if plan is None:
            return False
        for names in plan.member_of:
            names.add(tensor_name)  # no version bump: membership by match is unchanged
        if self.dry_run or self._writer is None:
            return True
        ops = plan.ops
        tb = plan.tb if self._tb is not None else None
        # Reductions on the tensor's own device when the framework can (no copy of the whole tensor
        # to the host if only reductions are wanted); otherwise they are computed on the writer thread.
        reductions = self._device_reductions(value, ops) if ops else None
        need_array = plan.write_raw or (ops and reductions is None) or (tb is not None and tb != (False, None))
        arr = shape = None
        if need_array:
            # Snapshot now: the caller may update the tensor in place (optimizer steps) before we write.
            host = self.to_numpy(value)
            if host.nbytes >= POOL_MIN_BYTES and self._writer is not None:
                self._writer.wait_for_room(host.nbytes)  # back-pressure first, then the (pooled) copy
            arr = snapshot(host)
        elif plan.save_shape:
            shape = self._shape_of(value)
        with self._step_lock:
            # The snapshot above runs unlocked (it may be large); if another thread ended the step
            # meanwhile, the tensor is too late for it and is not saved (see ``_step_lock``).
            writer = self._writer
            if step != self.step or not self._in_step or writer is None:
                return False
            writer.submit(
                self._write_on_writer_thread,
                writer,
                step, self.mode, self.mode_steps[self.mode], tensor_name, arr, plan.write_raw, ops,
                plan.save_shape, tb, reductions, shape,
                nbytes=arr.nbytes if arr is not None else 0, step=step, wake=False,
            )
            self._wrote_this_step = True
        return True

    def _plan(self, tensor_name: str) -> Optional["_SavePlan"]:
        """What saving ``tensor_name`` at this step means (None: nothing due includes it)."""
        due = self._due
        if due.__class__ is not frozenset:  # (a plugin may have replaced it with a set)
            due = self._intern_due(due)
        plan = self._plans.get((tensor_name, due))
        if plan is None:
            plan = self._make_plan(tensor_name, due)
            if len(self._plans) > 100_000:
                self._plans.clear()
            self._plans[(tensor_name, due)] = plan
        return plan

    def _record_same(self, tensor_name: str, same_as: str) -> bool:
        """Save ``tensor_name`` as a second name of ``same_as``, recorded at this step already: one record,
        two index entries (for plugins that save one value under many names; TensorBoard gets the value
        once, under ``same_as``). Only when both are saved raw and nothing else (no reductions or shape);
        False otherwise, and the caller records the value itself."""
        if not self._in_step or not self._due or self._disabled:
            return False
        plans = (self._plan(tensor_name), self._plan(same_as))
        if any(p is None or not p.write_raw or p.ops or p.save_shape for p in plans):
            return False
        for names in plans[0].member_of:
            names.add(tensor_name)
        if self.dry_run or self._writer is None:
            return True
        step = self.step
        with self._step_lock:
            writer = self._writer
            if step != self.step or not self._in_step or writer is None:
                return False
            writer.submit(self._alias_on_writer_thread, writer, step, self.mode, self.mode_steps[self.mode],
                          tensor_name, same_as, nbytes=0, step=step, wake=False)
            self._wrote_this_step = True
        return True

    @staticmethod
    def _alias_on_writer_thread(writer, step, mode, mode_step, name, same_as) -> None:
        writer.step_writer(step, mode, mode_step).write_alias(name, same_as)

    def _intern_due(self, due) -> frozenset:
        frozen = frozenset(due)
        return self._due_sets.setdefault(frozen, frozen)

    def _make_plan(self, tensor_name: str, due, force_collections: Sequence[Collection] = ()) -> Optional["_SavePlan"]:
        colls = [c for c in self._matching(tensor_name) if c.name in due]
        colls += [c for c in force_collections if c not in colls]
        if not colls:
            return None
        write_raw, ops, save_shape = self._what_to_write(colls)
        return _SavePlan(write_raw, ops, save_shape, self._tb_actions(colls), tuple(c._tensor_names for c in colls))

    def _device_reductions(self, value, ops) -> Optional[Dict[Tuple[str, bool], np.ndarray]]:
        """Framework plugins override this to compute ``ops`` where the tensor lives.

        Return ``{(op, abs): value}`` with the definitions of :mod:`smdebug.core.reductions`, or None
        to let the core compute them from a host copy.
        """
        return None

    def _shape_of(self, value) -> Tuple[int, ...]:
        shape = getattr(value, "shape", None)
        return tuple(int(d) for d in shape) if shape is not None else tuple(self.to_numpy(value).shape)

    def _what_to_write(self, colls: Sequence[Collection]):
        write_raw, save_shape = False, False
        ops: List[Tuple[str, bool]] = []
        for c in colls:
            rc = c.reduction_config or self.reduction_config
            # Raw if asked for, or if the config asks for nothing else (no reductions, no shape).
            write_raw = write_raw or rc.save_raw_tensor or not (rc.has_reductions or rc.save_shape)
            for op in rc.reduction_ops():
                if op not in ops:
                    ops.append(op)
            save_shape = save_shape or rc.save_shape
        return write_raw, tuple(ops), save_shape

    def _tb_actions(self, colls):
        """(write a scalar?, histogram collection name or None) for TensorBoard."""
        scalar = any(c.name in SCALAR_COLLECTIONS for c in colls)
        hist = next((c.name for c in colls if c.save_histogram and c.name not in NON_HISTOGRAM_COLLECTIONS), None)
        return scalar, hist

    def _write_on_writer_thread(self, writer, step, mode, mode_step, name, arr, write_raw, ops, save_shape, tb,
                                reductions=None, shape=None):
        if tb is not None and self._tb is not None and arr is not None:
            scalar, hist = tb
            if scalar and arr.size == 1 and arr.dtype.kind in "iufb":
                self._tb.write_scalar(mode, step, name, arr)
            elif hist is not None:
                self._tb.write_histogram(mode, step, histogram_tag(hist, name), arr)
        w = writer.step_writer(step, mode, mode_step)
        if save_shape:
            w.write_shape(name, arr.shape if arr is not None else shape)
        for op, is_abs in ops:
            if reductions is not None and (op, is_abs) in reductions:
                value = reductions[(op, is_abs)]
            else:
                try:
                    value = compute_reduction(arr, op, is_abs)
                except (TypeError, ValueError) as e:
                    logger.warning("Skipping reduction %s of %s at step %s: %s", op, name, step, e)
                    continue
            rname = reduction_tensor_name(name, op, is_abs, self.keep_device_suffix_in_reductions)
            w.write_tensor(rname, np.array([value]).reshape(1), mode, mode_step)
        if write_raw:
            w.write_tensor(name, arr, mode, mode_step)
        if arr is not None and arr.nbytes >= POOL_MIN_BYTES:
            # Written (the storage copied what it keeps): the snapshot's buffer can serve the next one.
            give_back(arr, holders=2)  # this frame's ``arr`` and the writer's queued arguments

    @_guarded()
    def save_scalar(self, name: str, value, sm_metric: bool = False, timestamp: Optional[float] = None) -> None:
        """Save a scalar as ``scalar/<name>`` at the current step, whatever the save schedule says."""
        if not isinstance(name, str) or not name:
            raise SMDebugTypeError("save_scalar needs a non-empty name")
        arr = make_numpy_array(self.to_numpy(value))
        if arr.size != 1:
            raise SMDebugTypeError(f"save_scalar({name!r}) needs a single value, got shape {arr.shape}")
        if self.dry_run or not self._is_writer:
            return
        if self.worker is None:
            self._init_worker()
        if self._writer is None:
            self._prepare_collections()
            self._start_writing()
            if self._writer is None:
                return
        tname = SCALAR_PREFIX + name
        self.collection_manager.get(CollectionKeys.SCALARS)._tensor_names.add(tname)
        self._write_scalar(tname, np.array(arr, copy=True), timestamp)

    def _write_scalar(self, tname, arr, timestamp):
        with self._step_lock:  # save_scalar may come from any thread (see ``_step_lock``)
            self._write_scalar_locked(tname, arr, timestamp)

    def _write_scalar_locked(self, tname, arr, timestamp):
        if self._writer is None:
            return  # closed by another thread since save_scalar looked
        if not self._in_step and self._open_step is None:
            # Between steps, after the last step's files were completed: keep it for the next step
            # rather than rewrite a finished step.
            self._pending_scalars.append((tname, arr, timestamp))
            return
        self._writer.submit(self._write_scalar_on_writer_thread, self._writer, max(self.step, 0), self.mode,
                            max(self.mode_steps[self.mode], 0), tname, arr, timestamp,
                            nbytes=arr.nbytes, step=max(self.step, 0))
        if self._in_step:
            self._wrote_this_step = True

    def _write_scalar_on_writer_thread(self, writer, step, mode, mode_step, name, arr, timestamp):
        if self._tb is not None:
            self._tb.write_scalar(mode, step, name, arr, timestamp)
        writer.step_writer(step, mode, mode_step).write_tensor(name, arr, mode, mode_step, timestamp)

    @_guarded()
    def save_tensor(self, tensor_name: str, tensor_value, collections_to_write="default") -> None:
        """Save a tensor of the user's into one or more collections (created if missing).

        It is written at the current step if one of those collections is due (or at the next step if
        called between steps). Unlike the original, the name is added to *every* listed collection.
        """
        if not isinstance(tensor_name, str) or not tensor_name:
            raise SMDebugTypeError("save_tensor needs a non-empty tensor name")
        names = [collections_to_write] if isinstance(collections_to_write, str) else list(collections_to_write)
        for cname in names:
            self.add_to_collection(cname, tensor_name)
        if self._in_step:
            self._prepare_collections()
            self._due = self._compute_due() if self._is_writer else set()
            if self._due and self._writer is None and not self.dry_run:
                self._start_writing()
            self._record(tensor_name, tensor_value)
        else:
            arr = np.array(self.to_numpy(tensor_value), copy=True)
            self._pending_user_tensors.append((tensor_name, arr))

    @_guarded()
    def record_trace_events(self, timestamp, training_phase: str = "", op_name: str = "", phase: str = "X",
                            duration=1, **kwargs) -> None:
        """Record a trace event of the training script (``timestamp``, ``duration`` in seconds): saved in
        the run's ``framework/pevents/`` in the Chrome trace-event format (see smdebug.core.timeline)."""
        if self.dry_run:
            return
        if self._timeline is None:
            if self.worker is None:
                self._init_worker()
            self._timeline = TraceTimeline(get_storage(self.out_dir), self.rank)
        self._timeline.record(timestamp, training_phase, op_name, phase, duration, **kwargs)

    # ------------------------------------------------------------------------------------------
    # closing
    # ------------------------------------------------------------------------------------------
    def flush(self, timeout: Optional[float] = None) -> bool:
        """Wait until everything recorded so far is on storage."""
        if self._writer is None:
            return True
        with self._step_lock:
            self._close_open_step()
        ok = self._writer.flush(timeout)
        self._check_writer()
        return ok

    def close(self) -> None:
        """Finish the last step, write everything, export collections and mark the run as ended."""
        with self._step_lock:  # a thread still recording waits, then finds the hook closed
            self._close()

    def _close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            if not self._disabled:
                if self._in_step:
                    self._finish_step()
                if self._writer is None and self.worker is not None and self._is_writer and not self.dry_run:
                    # Nothing was due during the run: still leave a valid, empty run behind.
                    self._start_writing()
                if self._pending_scalars and self._writer is not None:
                    # Values logged after the last step: they get a step of their own.
                    self.step += 1
                    self.mode_steps[self.mode] += 1
                    self.mode_steps[ModeKeys.GLOBAL] = self.step
                    self._in_step = True
                    pending, self._pending_scalars = self._pending_scalars, []
                    for args in pending:
                        self._write_scalar(*args)
                    self._finish_step()
                self._close_open_step()
                if self._writer is not None:
                    self._export_collections()
                    if self._tb is not None:
                        self._writer.call(self._tb.close)
                    writer = self._writer
                    ok = writer.close(timeout=self._close_timeout())
                    err = writer.error
                    self._writer = None
                    self._unsaved_steps = writer.unsaved_steps
                    if err is not None:
                        self._fail(f"writing to {self.out_dir}", err)
                    elif self._unsaved_steps or writer.lost_other:
                        self._report_unsaved(writer)
                    elif not ok:
                        logger.warning("smdebug: some tensors could not be written before close")
            self._mark_end()
        except Exception as e:  # noqa: BLE001
            self._fail("close()", e)
        finally:
            if self._timeline is not None:
                try:
                    self._timeline.close()
                except Exception as e:  # noqa: BLE001
                    logger.warning("smdebug: could not save the trace events of %s: %s", self.out_dir, e)
            if hasattr(self._stop_watcher, "stop"):
                self._stop_watcher.stop()
            self._release_claim()
            try:
                atexit.unregister(self._atexit_close)
            except Exception:  # noqa: BLE001
                pass
            self._notify("smdebug_hook_closed", hook=self)

    def _close_timeout(self) -> Optional[float]:
        """How long close() waits for a remote store that stopped answering (None: local, no limit)."""
        if not is_s3_path(self.out_dir):
            return None
        return float(os.environ.get("SMDEBUG_S3_CLOSE_TIMEOUT", 60))

    def _report_unsaved(self, writer: BackgroundWriter) -> None:
        parts = []
        steps = self._unsaved_steps
        if steps:
            reasons = set(writer.lost_steps.values())
            if not reasons:
                why = "the queue of data to write was full while the store was unreachable or too slow"
            elif len(reasons) == 1:
                why = next(iter(reasons))
            else:
                why = f"{len(reasons)} different errors, e.g. {sorted(reasons)[0]}"
            parts.append(f"{len(steps)} saved step(s) did not reach {self.out_dir}: steps {format_steps(steps)} "
                         f"({why})")
        for other in writer.lost_other:
            parts.append(f"not written: {other}")
        logger.warning("smdebug: %s. Everything else was saved.", "; ".join(parts))

    def _mark_end(self) -> None:
        try:
            self._write_end_marker()
        except (StorageError, OSError) as e:
            if self._failure is not None:  # (the failure that stopped saving was reported already)
                logger.debug("smdebug: no end marker in %s: %s", self.out_dir, e)
                return
            logger.warning(
                "smdebug: could not mark %s as finished (%s); readers will treat the run as still running "
                "(trial.treat_as_ended() reads it to its end).", self.out_dir, e)

    def _write_end_marker(self) -> None:
        # On SageMaker the platform writes the end marker itself.
        if "TRAINING_JOB_NAME" in os.environ or self.dry_run or not self._is_writer:
            return
        if self._storage is None and self.worker is None:
            return  # nothing was ever written: leave no trace
        storage = self._storage or get_storage(self.out_dir)
        if self.num_workers > 1:
            # Every worker of a multi-worker run says it is done; the last one to finish marks the run
            # ended. (The original let the first worker to finish mark it, so readers treated the others'
            # later steps as missing, and late starters refused to write.) Writing before listing means
            # at least one of several workers finishing together sees them all.
            storage.write_atomic(worker_end_file_name(self.worker), b"")
            if len(storage.list(WORKERS_ENDED_DIR)) < self.num_workers:
                return
        storage.write_atomic(END_OF_JOB_FILE, b"")

    def _atexit_close(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass

    def __repr__(self):
        return (
            f"<{type(self).__name__} out_dir={self.out_dir} step={self.step} mode={self.mode.name} "
            f"include_collections={self.include_collections}{' DISABLED' if self._disabled else ''}>"
        )


def _make_stop_watcher(out_dir: str):
    watcher = StopSignalWatcher(out_dir)
    return _BackgroundStopPoller(watcher) if is_s3_path(out_dir) else watcher


class _BackgroundStopPoller:
    """Looks for the stop signal on a thread of its own, so an S3 request (or an S3 outage) never
    delays a training step; the step boundary only reads what the thread found."""

    def __init__(self, watcher: StopSignalWatcher):
        self.watcher = watcher
        self.signal: Optional[dict] = None
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def poll(self) -> Optional[dict]:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="smdebug-stop-signal", daemon=True)
            self._thread.start()
        return self.signal

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                signal = self.watcher.poll()
            except Exception as e:  # noqa: BLE001 - S3 unreachable: look again later
                logger.debug("smdebug: could not look for a stop signal in %s: %s", self.watcher.out_dir, e)
                signal = None
            if signal is not None:
                self.signal = signal
                return
            self._stop.wait(max(self.watcher.interval, 0.05))

    def stop(self) -> None:
        self._stop.set()


def _launched_as_one_of_many() -> bool:
    from smdebug.core.plugins.worker_env import worker_from_env

    info = worker_from_env()
    return info is not None and info.size > 1


class _SingleWorker:
    rank, size, name = 0, 1, "worker_0"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


#: the names of BaseHook's constructor arguments (a framework hook with arguments of its own passes these on)
BaseHook.ARGUMENTS = tuple(inspect.signature(BaseHook.__init__).parameters)[1:]
