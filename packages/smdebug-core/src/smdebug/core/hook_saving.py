"""Saving values (part of :class:`smdebug.core.hook.BaseHook`): deciding whether a tensor is due, taking its
snapshot on the training thread (with back-pressure), and queueing the writes for the writer thread
(:mod:`smdebug.core.save_plan`). Also the user's own values: ``save_scalar``, ``save_tensor`` and trace events.
"""

from __future__ import annotations

import math
from numbers import Real
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from smdebug.core import save_plan
from smdebug.core.collection import Collection, CollectionKeys
from smdebug.core.hook_collections import SCALAR_PREFIX
from smdebug.core.hook_guard import guarded as _guarded
from smdebug.core.names import name_list, shown
from smdebug.core.reductions import REDUCTION_PREFIX, parse_reduction_tensor_name
from smdebug.core.save_plan import SavePlan
from smdebug.core.snapshot import POOL_MIN_BYTES, snapshot
from smdebug.core.storage.factory import get_storage
from smdebug.core.tfevent.tensor_codec import make_numpy_array
from smdebug.core.timeline import TraceTimeline
from smdebug.exceptions import SMDebugTypeError, SMDebugValueError


def tensor_name_problem(name) -> Optional[str]:
    """Why a run cannot hold a tensor of this name, or None. Names live inside records and JSON, never in
    paths, so almost any text will do; not text that cannot be encoded (lone surrogates: the writer
    thread failed on them), nor a name the reader would take for a reduction the hook stored."""
    if not isinstance(name, str):
        return f"it is a {type(name).__name__}, not a string"
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "it is not valid text (it holds lone surrogates)"
    if parse_reduction_tensor_name(name) is not None:
        return f"names starting with {REDUCTION_PREFIX!r} are where the hook stores reductions"
    return None


def _error_text(e: BaseException) -> str:
    try:
        text = str(e)
    except Exception:  # noqa: BLE001 - a user's exception whose __str__ raises
        text = ""
    return f"{type(e).__name__}: {text}"[:400]


def check_timestamp(value, what: str = "timestamp", allow_none: bool = True) -> Optional[float]:
    """``value`` as a float of seconds: a finite real number (None when allowed). SMDebugTypeError or
    SMDebugValueError otherwise, raised on the caller's thread (the writer thread used to fail on a string
    and disable the hook, and NaN or infinity cannot be stored as a time)."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, Real):
        raise SMDebugTypeError(f"{what} must be a number of seconds, got {shown(value)}")
    try:
        as_float = float(value)
    except (TypeError, ValueError, OverflowError) as e:
        raise SMDebugTypeError(f"{what} must be a number of seconds, got {shown(value)} ({e})") from None
    if not math.isfinite(as_float):
        raise SMDebugValueError(f"{what} must be a finite number of seconds, got {as_float!r}")
    return as_float


class HookSaving:
    """Mixed into BaseHook: uses its step state (``step``, ``mode``, ``_in_step``, ``_due``, ``_step_lock``),
    its writer (``_writer``, ``_tb``) and its collections."""

    #: whether the script named a value of its own to save (save_scalar, save_tensor, a framework's
    #: record_tensor_value): a framework hook that saw no loss says so at close only when it did not
    _user_saves = False

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
        # (``force_collections``: saved in those even at a step where the schedules name nothing, as a
        # plugin saves a value that was due earlier and only now exists)
        if not self._in_step or not (self._due or force_collections):
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
            # one value no record can hold (a dict, a tensor with no data, an object that will not convert):
            # that tensor is not saved, and the hook goes on with the others (the error used to disable it
            # for the rest of the run)
            host = self._convert_value(tensor_name, value)
            if host is None:
                return False
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
                save_plan.write_tensor,
                writer, self._tb, self.keep_device_suffix_in_reductions,
                step, self.mode, self.mode_steps[self.mode], tensor_name, arr, plan.write_raw, ops,
                plan.save_shape, tb, reductions, shape,
                nbytes=arr.nbytes if arr is not None else 0, step=step, wake=False,
            )
            self._wrote_this_step = True
            self._stretch = None  # (the next step closes this one in full)
        return True

    def _plan(self, tensor_name: str) -> Optional[SavePlan]:
        """What saving ``tensor_name`` at this step means (None: nothing due includes it)."""
        if tensor_name.__class__ is not str and not isinstance(tensor_name, str):
            self._refuse_name(tensor_name, f"it is a {type(tensor_name).__name__}, not a string")
            return None
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
            writer.submit(save_plan.write_alias, writer, step, self.mode, self.mode_steps[self.mode],
                          tensor_name, same_as, nbytes=0, step=step, wake=False)
            self._wrote_this_step = True
            self._stretch = None  # (the next step closes this one in full)
        return True

    def _intern_due(self, due) -> frozenset:
        frozen = frozenset(due)
        return self._due_sets.setdefault(frozen, frozen)

    def _make_plan(self, tensor_name: str, due, force_collections: Sequence[Collection] = ()) -> Optional[SavePlan]:
        problem = tensor_name_problem(tensor_name)  # (once per name and set of due collections: plans are cached)
        if problem is not None:
            self._refuse_name(tensor_name, problem)
            return None
        colls = [c for c in self._matching(tensor_name) if c.name in due]
        colls += [c for c in force_collections if c not in colls]
        return save_plan.make_plan(colls, self.reduction_config)

    def _user_name(self, call: str, what: str, name, prefix: str = "", suffix: str = "") -> Optional[str]:
        """``name`` as plain text, checked for ``call``, which stores the value as ``prefix + name + suffix``;
        None when a run cannot hold that name (refused once per name, :meth:`_refuse_name`). A name that is not a
        non-empty string is the caller's mistake: SMDebugTypeError, which the hook's guard reports once per
        call and message without disabling the hook. A subclass of str is taken as its plain text, so that
        its own methods (``__hash__``, ``__format__``...) never run inside the hook."""
        if not isinstance(name, str) or not name:
            raise SMDebugTypeError(f"{call} needs a non-empty {what}, got {shown(name)}")
        name = str.__str__(name)
        self._user_saves = True  # (the script saves values of its own: a functional loss, metrics)
        stored = prefix + name + suffix
        problem = tensor_name_problem(stored)
        if problem is not None:
            self._refuse_name(stored, problem)
            return None
        return name

    def _refuse_name(self, tensor_name, problem: str) -> None:
        """One name the run could not hold: that name is not saved (said once), the hook goes on (before,
        the failure to write it disabled the hook and lost every tensor of the run)."""
        shown = repr(tensor_name)
        self._warn_once(("refused-name", shown), "smdebug: not saving the tensor named %s: %s.",
                        shown if len(shown) <= 200 else shown[:200] + "...", problem)

    def _convert_value(self, tensor_name: str, value) -> Optional[np.ndarray]:
        """``to_numpy(value)`` on the caller's thread, or None (said once per name) when it cannot be done:
        whatever the value's own conversion raises costs that value only, never the hook."""
        try:
            return self.to_numpy(value)
        except SMDebugTypeError as e:
            self._refuse_value(tensor_name, str(e))
        except Exception as e:  # noqa: BLE001 - a user's object may raise anything from __array__/__float__
            self._refuse_value(tensor_name, f"its value cannot be converted to an array ({_error_text(e)})")
        return None

    def _refuse_value(self, tensor_name: str, problem: str) -> None:
        shown = repr(tensor_name)
        self._warn_once(("refused-value", shown), "smdebug: not saving the tensor %s: %s.",
                        shown if len(shown) <= 200 else shown[:200] + "...", problem)

    def _device_reductions(self, value, ops) -> Optional[Dict[Tuple[str, bool], np.ndarray]]:
        """Framework plugins override this to compute ``ops`` where the tensor lives.

        Return ``{(op, abs): value}`` with the definitions of :mod:`smdebug.core.reductions`, or None
        to let the core compute them from a host copy.
        """
        return None

    def _shape_of(self, value) -> Tuple[int, ...]:
        shape = getattr(value, "shape", None)
        return tuple(int(d) for d in shape) if shape is not None else tuple(self.to_numpy(value).shape)

    @_guarded()
    def save_scalar(self, name: str, value, sm_metric: bool = False, timestamp: Optional[float] = None) -> None:
        """Save a scalar as ``scalar/<name>`` at the current step, whatever the save schedule says.

        Every argument is checked here, on the caller's thread, before anything is queued: a name the run
        cannot hold, a value that does not convert, a timestamp that is not a finite number of seconds is
        refused with one message and nothing else is lost (the writer thread used to fail on some of
        them, losing the step it was writing and disabling the hook)."""
        name = self._user_name("save_scalar", "name", name, prefix=SCALAR_PREFIX)
        if name is None:
            return
        tname = SCALAR_PREFIX + name
        try:
            timestamp = check_timestamp(timestamp)
        except (SMDebugTypeError, SMDebugValueError) as e:
            raise type(e)(f"the scalar {shown(name)} is not saved: {e}") from None
        host = self._convert_value(tname, value)
        if host is None:
            return
        arr = make_numpy_array(host)
        if arr.size != 1:
            raise SMDebugTypeError(f"save_scalar({shown(name)}) needs a single value, got shape {arr.shape}")
        if arr.dtype.kind not in "biufc":
            # (a string or an object saved as a scalar breaks every curve drawn or judged from it)
            raise SMDebugTypeError(f"save_scalar({shown(name)}) needs a number, got {type(value).__name__} "
                                   f"{shown(value)}")
        if self.dry_run or not self._is_writer:
            return
        if self.worker is None:
            self._init_worker()
        if self._writer is None:
            self._refresh_collections()
            self._start_writing()
            if self._writer is None:
                return
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
            self._stretch = None  # (the next step writes it)
            return
        self._writer.submit(save_plan.write_scalar, self._writer, self._tb, max(self.step, 0), self.mode,
                            max(self.mode_steps[self.mode], 0), tname, arr, timestamp,
                            nbytes=arr.nbytes, step=max(self.step, 0))
        if self._in_step:
            self._wrote_this_step = True
            self._stretch = None  # (the next step closes this one in full)

    @_guarded()
    def save_tensor(self, tensor_name: str, tensor_value, collections_to_write="default") -> None:
        """Save a tensor of the user's into one or more collections (created if missing).

        It is written at the current step if one of those collections is due (or at the next step if
        called between steps). Unlike the original, the name is added to *every* listed collection.
        """
        # (checked before anything changes: a name the run cannot hold, collections that are not names)
        tensor_name = self._user_name("save_tensor", "tensor name", tensor_name)
        if tensor_name is None:
            return
        try:
            names = name_list(collections_to_write, "collections_to_write", "collection")
        except SMDebugTypeError as e:
            raise SMDebugTypeError(f"the tensor {shown(tensor_name)} is not saved: {e}") from None
        pending = None
        if not self._in_step:
            host = self._convert_value(tensor_name, tensor_value)
            if host is None:
                return
            pending = np.array(host, copy=True)
        for cname in names:
            self.add_to_collection(cname, tensor_name)
        if self._in_step:
            self._refresh_collections()
            self._due = self._compute_due() if self._is_writer else set()
            if self._due and self._writer is None and not self.dry_run:
                self._start_writing()
            self._record(tensor_name, tensor_value)
        else:
            self._pending_user_tensors.append((tensor_name, pending))
            self._stretch = None  # (the next step writes it)

    @_guarded()
    def record_trace_events(self, timestamp, training_phase: str = "", op_name: str = "", phase: str = "X",
                            duration=1, **kwargs) -> None:
        """Record a trace event of the training script (``timestamp``, ``duration`` in seconds): saved in
        the run's ``framework/pevents/`` in the Chrome trace-event format (see smdebug.core.timeline)."""
        # (the arguments are checked before the timeline exists: a bad call leaves nothing behind)
        check_timestamp(timestamp, "timestamp", allow_none=False)
        check_timestamp(duration, "duration", allow_none=False)
        if self.dry_run:
            return
        if self._timeline is None:
            if self.worker is None:
                self._init_worker()
            self._timeline = TraceTimeline(get_storage(self.out_dir), self.rank)
        self._timeline.record(timestamp, training_phase, op_name, phase, duration, **kwargs)
