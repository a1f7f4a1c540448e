"""The framework-neutral hook: step and mode bookkeeping, deciding what is due, and saving it.

Framework plugins subclass :class:`BaseHook` and only translate framework events into four calls:
:meth:`BaseHook.begin_step` at a step boundary, :meth:`BaseHook.record` for each candidate tensor
(cheap when the tensor is not due: check :meth:`BaseHook.is_due` first to skip the conversion),
:meth:`BaseHook.end_step`, and :meth:`BaseHook.close` at the end. docs/architecture.md lists the
methods a framework hook overrides and calls (the plugin contract).

Two promises to users:
* Saving never stalls training: tensors are snapshotted on the training thread and encoded/written on
  a background thread, with a bounded byte budget (back-pressure, not unbounded memory).
* The hook never breaks training: an internal error is logged once, clearly, and the hook disables
  itself; the training loop carries on. Bad configuration fails at construction with a specific error.

This module holds the configuration, the steps and the schedule; the rest of BaseHook is in modules of
their own, one responsibility each:

* :mod:`smdebug.core.hook_collections`: collections, which are included, what a name matches;
* :mod:`smdebug.core.hook_saving` and :mod:`smdebug.core.save_plan`: recording values, the user's own values;
* :mod:`smdebug.core.hook_output`: the worker's identity, storage, the out_dir claim, the writer;
* :mod:`smdebug.core.hook_closing`: flush and close, the end-of-run marker;
* :mod:`smdebug.core.out_dir`, :mod:`smdebug.core.process_exit`, :mod:`smdebug.core.stop_signal`,
  :mod:`smdebug.core.hook_guard`: checking out_dir and claiming it, closing at exit and on SIGTERM, a rule's
  stop signal, the guard that keeps errors out of the training loop.
"""

from __future__ import annotations

import inspect
import threading
import time
from threading import get_ident
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from smdebug.core import process_exit, singleton, stop_signal
from smdebug.core.collection import TRAIN_ONLY_COLLECTIONS, Collection, CollectionKeys
from smdebug.core.collection_manager import CollectionManager
from smdebug.core.hook_closing import HookClosing
from smdebug.core.hook_collections import SCALAR_PREFIX, HookCollections, included_collection_names
from smdebug.core.hook_guard import guarded as _guarded
from smdebug.core.hook_guard import refuse_after_close
from smdebug.core.hook_output import HookOutput
from smdebug.core.hook_saving import HookSaving
from smdebug.core.legacy.hook_methods import LegacyHookMethods
from smdebug.core.logger import WarnsOnce, get_logger
from smdebug.core.modes import ModeKeys
from smdebug.core.out_dir import OutDirClaim, resolve_tensorboard_dir, tensorboard_dir_refusal, validate_out_dir
from smdebug.core.quiet import QuietStretch, make_stretch
from smdebug.core.reduction_config import ReductionConfig
from smdebug.core.run_regex import Budget
from smdebug.core.run_info import record_framework
from smdebug.core.save_config import SaveConfig, schedule_changes
from smdebug.core.save_plan import SavePlan
from smdebug.core.state_store import StateStore
from smdebug.core.storage.base import Storage, is_s3_path
from smdebug.core.tensorboard import TensorBoardWriter
from smdebug.core.timeline import TraceTimeline
from smdebug.core.writer import BackgroundWriter
from smdebug.exceptions import (
    InvalidConfigurationError,
    SMDebugValueError,
    TrainingStopRequested,
)

__all__ = ["BaseHook", "SCALAR_PREFIX", "logger"]
_QUIET_STOP_LOOK_S = 0.05
logger = get_logger()


class BaseHook(HookCollections, HookSaving, HookOutput, HookClosing, WarnsOnce, LegacyHookMethods):
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
        # _fail stopped this hook (not a refused duplicate worker, which writes nothing): at which step (the step
        # a writer's error was writing, else the hook's own), said in the run at close (see hook_failures)
        self._failed = False
        # the modes the script switched to with set_mode, recorded in the run (collections' _meta.modes_set): a
        # validation that began no step (another module with a functional loss) is then said as unsaved, not absent
        self._modes_set: Set[ModeKeys] = set()
        self._failed_at_step: Optional[int] = None
        #: how the training process ended when not normally (an unhandled exception, SIGTERM), set by the
        #: at-exit and SIGTERM closes; said in the run at close (see hook_failures)
        self._ended_by: Optional[str] = None
        self.out_dir = validate_out_dir(out_dir, dry_run)
        self._out_is_s3 = is_s3_path(self.out_dir)
        self._configure(reduction_config, save_config, include_workers)
        self.dry_run = bool(dry_run)
        self.include_workers = include_workers
        self.export_tensorboard = bool(export_tensorboard)
        self.tensorboard_dir = resolve_tensorboard_dir(self.out_dir, export_tensorboard, tensorboard_dir)
        refusal = tensorboard_dir_refusal(self.out_dir, self.tensorboard_dir)
        if refusal is not None:  # (as a tensorboard_dir that cannot be written: TensorBoard off, the run saved)
            logger.error("smdebug: no TensorBoard files: %s. TensorBoard output is off; the run itself is still "
                         "saved.", refusal)
            self.tensorboard_dir = None
        self.save_all = bool(save_all)
        self._init_steps()
        #: set when a rule asked this job to stop (see smdebug.core.stop_signal)
        self.stop_requested = False
        self.stop_reason: Optional[str] = None
        self._stop_watcher = None if dry_run else stop_signal.make_stop_watcher(self.out_dir)
        self._resume_from_checkpoint()
        self._init_collections(include_regex, include_collections, save_all)

        # workers and writing (worker is detected at the first step: distributed runtimes are often
        # initialised after the hook is built; see smdebug.core.hook_output)
        self.worker: Optional[str] = None
        self.rank = 0
        self.num_workers = 1
        self._is_writer = True
        self._storage: Optional[Storage] = None
        self._writer: Optional[BackgroundWriter] = None
        self._tb: Optional[TensorBoardWriter] = None
        self._out_claim: Optional[OutDirClaim] = None
        self._exported_collections = 0
        self._unsaved_steps: List[int] = []
        self._lost_reason: Optional[str] = None  # why the writer lost those steps (said in the run at close)
        self._timeline: Optional[TraceTimeline] = None  # trace events (record_trace_events), made on use

        self._setup()
        singleton.set_hook(self)
        process_exit.track(self)
        self._notify("smdebug_hook_created", hook=self)

    def _configure(self, reduction_config, save_config, include_workers) -> None:
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
            self.save_config.check()  # (a schedule that can never save, steps past int64)
        except SMDebugValueError as e:
            raise InvalidConfigurationError(f"Invalid save_config: {e}") from None
        self.reduction_config = reduction_config or ReductionConfig(save_raw_tensor=True)

    def _init_steps(self) -> None:
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
        self._pending_user_tensors: List[Tuple[str, object]] = []
        self.last_saved_step: Optional[int] = None
        self._due: Set[str] = set()
        # (tensor name, due collections) -> what saving it means (SavePlan); the due sets are interned
        # frozensets, equal from one step to the next, so a tensor's plan is worked out once per schedule
        # state instead of at every record
        self._plans: Dict[tuple, SavePlan] = {}
        self._due_sets: Dict[frozenset, frozenset] = {}
        # (first mode step that may save, mode, prepared token, schedule changes, the empty due set):
        # the steps before it need no look at the schedules (see _compute_due)
        self._quiet: Optional[tuple] = None
        # the quiet steps ahead that _begin_quiet_step may begin by themselves (smdebug.core.quiet)
        self._stretch: Optional[QuietStretch] = None
        self._quiet_busy = False  # the stretch's owner is counting a quiet step without the lock
        self._quiet_steps_shared = False  # several threads have begun steps: every quiet step takes the lock
        self._next_stop_look = 0.0  # (monotonic time) see _begin_quiet_step

    def _resume_from_checkpoint(self) -> None:
        """Resume step numbering after a restart from a checkpoint (spot training)."""
        # (StateStore checks both files and every value, and warns once about anything wrong; what is
        # left here cannot fail. Should it anyway, the run starts at step 0: a hook must never stop
        # training before its first step.)
        self.training_run = 0
        try:
            self._state_store = StateStore()
        except Exception as e:  # (broad on purpose: see above)
            logger.warning("smdebug: ignoring the checkpoint state (%s: %s); this run's steps start at 0",
                           type(e).__name__, e)
            self._state_store = StateStore(read=False)
            return
        latest = self._state_store.latest() if self._state_store.active else None
        if latest is None:
            return
        # (every value was checked by the store: integers in the range a run can hold, see _check_entry)
        self.training_run = latest.get("training-run", 0) + 1
        self.step = latest.get("latest-global-step-seen", self.init_step)
        for name, value in (latest.get("latest-mode-step") or {}).items():
            if name in ModeKeys.__members__ and value is not None:
                self.mode_steps[ModeKeys[name]] = value
        logger.info("smdebug: resuming from checkpoint state at global step %d", self.step)

    def _init_collections(self, include_regex, include_collections, save_all) -> None:
        self.collection_manager = CollectionManager()
        self.collection_manager.collection_class = self.collection_class
        record_framework(self.collection_manager, self.framework_name)  # how readers pick the run's rules
        for coll in self._core_collections() + list(self.default_collections()):
            self.collection_manager.add(coll)
        if include_regex:
            regexes = [include_regex] if isinstance(include_regex, str) else list(include_regex)
            default = self.collection_manager.get(CollectionKeys.DEFAULT)
            # (matched in bounded time, as a configuration file's collection patterns are: a hook
            # configuration file and `smdebug run --include-regex` pass it here, and a pattern that
            # backtracked on a module's name hung the script before its first step; probe 17b F1)
            default.match_in_bounded_time(Budget("the hook's include_regex"))
            default.include(regexes)
        if save_all:
            self.collection_manager.get(CollectionKeys.ALL).include(".*")
        self.include_collections: List[str] = included_collection_names(
            include_collections, self.default_include_collections, include_regex, save_all)
        self._prepared_token = None
        self._included: List[Collection] = []
        self._reported_collections: Set = set()  # included names (and (name, pattern)s) already reported
        self._match_cache: Dict[str, Tuple[Collection, ...]] = {}

    def _setup(self) -> None:
        """Framework hooks create their own state here, so they need no constructor of their own (the
        constructor's arguments are BaseHook's, :data:`ARGUMENTS`). Called once by ``__init__``, after the
        core's state exists and before the hook is registered and announced to plugins; an override calls
        ``super()._setup()``."""

    # ------------------------------------------------------------------------------------------
    # construction helpers
    # ------------------------------------------------------------------------------------------
    @classmethod
    def recommended(cls, out_dir: str, **kwargs) -> "BaseHook":
        """A hook that saves what the recommended rules for this framework need, so that
        ``smdebug rules run OUT_DIR`` (or ``smdebug.rules.run_rules(OUT_DIR)``), with no rule named, can
        judge the run::

            hook = smd.Hook.recommended("/tmp/run")      # then register the model as usual

        The collections come from the installed rule packs (smdebug-rules: weights, gradients, losses, the
        model's inputs, the activation collections...), saved on :meth:`SaveConfig.tapered`: every step
        until step 10, then steps 10, 20, 40... 320, then every 500 steps; the losses and metrics (scalars
        that rules read as curves, :data:`smdebug.core.presets.CURVE_COLLECTIONS`) at every step. Other
        keyword arguments are the constructor's; ``include_collections`` adds to the recommended ones,
        ``save_config`` replaces the schedule (of every collection, the curves included).

        :raises InvalidConfigurationError: no rule pack is installed that recommends rules for this framework.
        """
        from smdebug.core.presets import (CURVE_COLLECTIONS, curve_save_config, recommended_collections,
                                          recommended_save_config)

        names = recommended_collections(cls.framework_name)
        extra = kwargs.pop("include_collections", None) or []
        if isinstance(extra, str):
            raise InvalidConfigurationError("include_collections must be a list of collection names")
        own_schedule = "save_config" in kwargs
        kwargs.setdefault("save_config", recommended_save_config())
        hook = cls(out_dir=out_dir, include_collections=names + [c for c in extra if c not in names], **kwargs)
        if not own_schedule:
            for name in CURVE_COLLECTIONS:
                if name in hook.include_collections:
                    hook.get_collection(name).save_config = curve_save_config()
        return hook

    @classmethod
    def create_from_json_file(cls, json_file_path: Optional[str] = None):
        """Build a hook from the SageMaker JSON contract (``SMDEBUG_CONFIG_FILE_PATH``)."""
        from smdebug.core.json_config import apply_collection_configs, config_file_path, load_hook_config

        kwargs = load_hook_config(json_file_path, default_save_interval=cls.default_save_interval)
        coll_configs = kwargs.pop("collection_configs", {})
        hook = cls(**kwargs)
        apply_collection_configs(hook.get_collection, coll_configs, source=config_file_path(json_file_path))
        return hook

    # ------------------------------------------------------------------------------------------
    # failure handling
    # ------------------------------------------------------------------------------------------
    def _fail(self, where: str, exc: BaseException) -> None:
        if self._disabled:
            return
        self._disabled = True
        self._stretch = None
        self._failure = f"{where}: {type(exc).__name__}: {exc}"
        self._failed = True
        if self._failed_at_step is None:  # (a writer's error names the step it was writing: see _check_writer)
            self._failed_at_step = self.step
        if isinstance(exc, OSError):  # (StorageError is one)
            # Not a bug of ours: a full disk, permissions, credentials, a missing bucket. One clear line,
            # no traceback.
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
            self._stretch = None  # (made while no one knew who listens to step ends)
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
    def _compute_due(self) -> frozenset:
        mode, mode_step = self.mode, self.mode_steps[self.mode]
        quiet = self._quiet
        # Most steps save nothing (the default saves every 500th): once a step is found to have nothing
        # due, the schedules say when something next is, and the steps until then skip them entirely.
        if (quiet is not None and mode_step < quiet[0] and quiet[1] is mode and quiet[2] is self._prepared_token
                and quiet[3] == schedule_changes()):
            stretch = self._stretch
            if stretch is None or not stretch.holds(self, mode_step):  # (dropped, or made before a change)
                self._stretch = make_stretch(self, quiet, type(self)._finish_step is not BaseHook._finish_step)
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
            self._stretch = make_stretch(self, self._quiet, type(self)._finish_step is not BaseHook._finish_step)
        return due

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
            self._modes_set.add(mode)  # (recorded in the run: see _export_collections)

    @_guarded()
    def begin_step(self, mode_step: Optional[int] = None) -> None:
        """Start the next step of the current mode (closing the previous one if still open).

        ``mode_step``: the step's number in its mode, for loops that count steps themselves (a trainer's
        global step); by default the mode's last step plus one. The global step always counts on by one.
        """
        if mode_step is not None and (isinstance(mode_step, bool) or not isinstance(mode_step, int) or mode_step < 0):
            raise SMDebugValueError(f"begin_step(mode_step=...) needs a step number >= 0, got {mode_step!r}")
        with self._step_lock:
            self._begin_step(mode_step)

    def _begin_step(self, mode_step: Optional[int] = None) -> None:
        if self._begin_quiet_step(mode_step):
            return
        if self._closed:
            # (a framework's callback, a model still called after close(): its run is finished)
            refuse_after_close(self, "begin_step")
            return
        stretch = self._stretch
        if stretch is not None and stretch.owner is not None and stretch.owner != get_ident():
            self._share_quiet_steps()  # (a step begun in full by another thread than the stretch's owner)
        if self._in_step:
            self._finish_step()
        if self._open_step is not None:
            self._close_open_step()
        if self._writer is not None and self._writer.error is not None:
            self._check_writer()
        if self._disabled:
            return
        if self._stop_watcher is not None and not self.stop_requested:
            self._check_stop_signal()
        if self._out_is_s3 and self._claimed and self._writer is not None:
            self._refresh_s3_claim()
        self.step += 1
        mode_steps = self.mode_steps
        mode_steps[self.mode] = mode_steps[self.mode] + 1 if mode_step is None else self._next_mode_step(mode_step)
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
        self._refresh_collections()
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

    def _begin_quiet_step(self, mode_step: Optional[int] = None) -> bool:
        """Begin the next step here, in one frame, if it is one of the quiet steps the schedules named
        when last asked and nothing else needs attention (see :mod:`smdebug.core.quiet` for what is
        checked here and what drops the stretch where it happens). Most steps are such steps, and plugins
        begin a step at every forward call or batch (PyTorch calls this first, without the step lock, and
        the full :meth:`_begin_step` only when it returns False).

        The thread that owns the stretch (the only one that has begun steps) counts the step without
        the step lock, marked busy so that another thread that begins a step waits for it to finish
        (:meth:`_share_quiet_steps`); any other thread takes the lock."""
        stretch = self._stretch
        if stretch is None or mode_step is not None:
            return False
        if stretch.owner != get_ident():
            return self._begin_quiet_step_locked()
        if stretch.watch and self._look_for_stop():
            return True  # the stop signal closed the hook
        self._quiet_busy = True
        try:
            mode_steps = self.mode_steps
            step = mode_steps[stretch.mode] + 1
            writer = self._writer
            # (the stretch again: a thread that came meanwhile may have taken it away before we were busy)
            if (self._stretch is not stretch or not stretch.holds(self, step)
                    or (writer is not None and writer.error is not None)):
                return False
            # (the count, as _begin_quiet_step_locked makes it: written out here, a call costs on this path)
            self.step = global_step = self.step + 1
            mode_steps[stretch.mode] = step
            mode_steps[ModeKeys.GLOBAL] = global_step
            self._in_step = True
            self._due = stretch.due
        finally:
            self._quiet_busy = False
        return True

    def _begin_quiet_step_locked(self) -> bool:
        """:meth:`_begin_quiet_step` for a stretch no thread owns (several threads begin steps, or plugins
        listen to step ends: the step before is finished in full), under the step lock."""
        with self._step_lock:
            stretch = self._stretch
            if stretch is None:
                return False
            if stretch.owner is not None:
                self._share_quiet_steps()
                return False
            mode_steps = self.mode_steps
            step = mode_steps[stretch.mode] + 1
            writer = self._writer
            if not stretch.holds(self, step) or (writer is not None and writer.error is not None):
                return False
            if self._in_step and stretch.finish:
                self._finish_step()  # (else all it would do for a step that wrote nothing is end it)
            if stretch.watch and self._look_for_stop():
                return True  # the stop signal closed the hook
            self.step = global_step = self.step + 1
            mode_steps[stretch.mode] = step
            mode_steps[ModeKeys.GLOBAL] = global_step
            self._in_step = True
            self._due = stretch.due
        return True

    def _share_quiet_steps(self) -> None:
        """(step lock held) A second thread begins steps: from now on quiet steps take the step lock. The
        owner's stretch is taken away, and if the owner is counting a step right now (a few bytecodes,
        nothing that waits) this thread waits for it, so that the two never count at once."""
        self._quiet_steps_shared = True
        self._stretch = None
        deadline = time.monotonic() + 1.0  # (cannot be needed: the busy mark is cleared in a finally)
        while self._quiet_busy and time.monotonic() < deadline:
            time.sleep(0)

    def _look_for_stop(self) -> bool:
        """A rule's stop signal, looked for at most every ``_QUIET_STOP_LOOK_S`` seconds in quiet steps
        (the watcher itself reads storage at most every 0.5 s). True: it closed the hook."""
        now = time.monotonic()
        if now >= self._next_stop_look:
            self._next_stop_look = now + _QUIET_STOP_LOOK_S
            self._check_stop_signal()
            return self._disabled
        return False

    def _next_mode_step(self, wanted: Optional[int]) -> int:
        last = self.mode_steps[self.mode]
        if wanted is None:
            return last + 1
        if wanted <= last:
            # Step numbers of a mode only grow (the index and the trials rely on it): a loop whose own
            # count went back (a second trainer started from 0 with the same hook) continues ours.
            if not self.__dict__.get("_warned_mode_step"):
                self._warned_mode_step = True
                logger.warning("smdebug: %s step %d requested after step %d; numbering continues at %d",
                               self.mode.name, wanted, last, last + 1)
            return last + 1
        return wanted

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
        self._stretch = None  # (it looks for the signal that came)
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

    def discard_open_step(self, step: int, mode_steps: Mapping[ModeKeys, int]) -> bool:
        """Forget the step that is open, as if it had never begun: what it wrote is removed (after the writes
        queued for it) and the step counters become ``step`` and ``mode_steps``. For a step begun by something
        that was not training (the zero-code attach's first module call, before a trainer's callback took
        over). Only while no step has been saved yet (saved steps cannot be numbered again): False, with
        nothing changed, then and when no step is open."""
        with self._step_lock:
            if not self._in_step or self.last_saved_step is not None or self._open_step is not None:
                return False
            if self._wrote_this_step and self._writer is not None:
                self._writer.abort_step(self.step)
            self._in_step, self._wrote_this_step, self._due = False, False, set()
            self.step = step
            self.mode_steps.update(mode_steps)
            # (the schedule's quiet stretch was worked out for the discarded numbers)
            self._quiet = self._stretch = None
            self._forget_step()
        return True

    def _forget_step(self) -> None:
        """(step lock held) What a plugin kept of a step that :meth:`discard_open_step` forgets."""

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
    # ------------------------------------------------------------------------------------------
    # saving
    # ------------------------------------------------------------------------------------------
    # ------------------------------------------------------------------------------------------
    # closing
    # ------------------------------------------------------------------------------------------
    def __repr__(self):
        return (
            f"<{type(self).__name__} out_dir={self.out_dir} step={self.step} mode={self.mode.name} "
            f"include_collections={self.include_collections}{' DISABLED' if self._disabled else ''}>"
        )


#: the names of BaseHook's constructor arguments (a framework hook with arguments of its own passes these on)
BaseHook.ARGUMENTS = tuple(inspect.signature(BaseHook.__init__).parameters)[1:]
