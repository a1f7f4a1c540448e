"""Background writing: tensors are encoded and written on a separate thread so training never waits on
disk or network, with a byte budget so a slow disk applies back-pressure instead of eating memory.

Remote storage (S3) never makes training wait: when the budget is used up (the store is slow or
unreachable) new steps are dropped whole, the data already queued is kept and written once the store
answers again, and every step that was not saved is reported (:attr:`BackgroundWriter.unsaved_steps`).
A step is always all-or-nothing: a step that lost any of its data is not written at all.
"""

from __future__ import annotations

import collections
import threading
from typing import Callable, Dict, List, Optional

from smdebug.core.env_settings import env_int
from smdebug.core.lazy import lazy_exports
from smdebug.core.logger import get_logger
from smdebug.core.names import step_runs
from smdebug.core.storage.base import Storage
from smdebug.core.storage.errors import StorageAccessDenied, StorageBucketNotFound, StorageError
from smdebug.core.tfevent.step_writer import StepWriter

DEFAULT_MAX_PENDING_BYTES = 256 << 20
_MAX_LOGGED_LOSSES = 3
# Written items at least this large give their bytes back to the budget one by one; smaller ones at the
# end of the batch the writer took (see BackgroundWriter._run).
_RELEASE_EACH_BYTES = 64 << 10
# What a queued item costs in memory besides its array bytes (tuple, arguments, array object), in bytes.
_ITEM_OVERHEAD = 512
# Small items queued without waking the writer wake it once this many are waiting.
_WAKE_AT_ITEMS = 64
# Records left out because their value could not be encoded: the names said in a warning, at most.
_MAX_REFUSED_LOGGED = 20


def _human_bytes(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB"):
        if n < 1024 or unit == "MiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def format_steps(steps) -> str:
    """``[1, 2, 3, 7]`` -> ``"1-3, 7"``."""
    return ", ".join(step_runs(sorted(steps)))


class _RecordRefused(Exception):
    """A value the writer thread could not encode (nothing of it was written)."""


class _CheckedStepWriter(StepWriter):
    """A StepWriter whose records fail one by one: a value the codec cannot encode (a name or dtype it
    cannot hold, a wall time that is not a number) costs that record only. The encoding happens before
    a byte of the record is written, so the event file is intact and the step's other records are kept;
    only a failure after bytes went out (the file is then damaged) still stops the writer."""

    def write_tensor(self, name, value, mode, mode_step, wall_time=None, index=True) -> None:
        events = self._events
        start = events.tell() if events is not None else 0
        try:
            super().write_tensor(name, value, mode, mode_step, wall_time, index)
        except StorageError:
            raise
        except Exception as e:  # noqa: BLE001 - one value's problem, unless bytes were written
            events = self._events
            if events is not None and events.tell() != start:
                raise
            raise _RecordRefused(name, e) from e


class BackgroundWriter:
    """Owns every StepWriter of a hook and runs their work, in submission order, on one thread."""

    def __init__(self, storage: Storage, worker: str, max_pending_bytes: Optional[int] = None,
                 drop_when_full: Optional[bool] = None):
        self.storage = storage
        self.worker = worker
        if max_pending_bytes is None:
            max_pending_bytes = env_int("SMDEBUG_WRITER_MAX_PENDING_BYTES", DEFAULT_MAX_PENDING_BYTES, minimum=0)
        self.max_pending_bytes = max_pending_bytes
        self.drop_when_full = getattr(storage, "drop_when_full", False) if drop_when_full is None else drop_when_full
        self._queue = collections.deque()
        # A lock taken with ``with self._lock`` (C code, no Python frames) guards the queue; the Condition
        # over it is notified only when a thread actually waits on it (``_waiters``), so the common submit
        # is an append under a lock. This is paid once per saved tensor. Re-entrant: the hook's SIGTERM
        # handler runs on the main thread between two bytecodes, possibly inside ``submit``, and closes
        # the hook through ``submit`` and ``flush`` again (a plain Lock hung the process for good there;
        # the Condition's wait releases every level of an RLock, so the writer thread still gets it).
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._waiters = 0
        self._pending_bytes = 0
        self._busy = False
        self._closed = False
        self.error: Optional[BaseException] = None
        self.error_step: Optional[int] = None  # the step being written when ``error`` happened, if any
        self._steps: Dict[int, StepWriter] = {}
        #: steps dropped because the budget was used up (training thread side)
        self.dropped_steps: set = set()
        #: steps whose writing failed (store unreachable when we gave up): step -> reason
        self.lost_steps: Dict[int, str] = {}
        #: other writes that failed (collections file...): descriptions
        self.lost_other: List[str] = []
        self._dropping_since: Optional[int] = None
        self._losses_logged = 0
        self._refused_names: set = set()
        self.logger = get_logger()
        self._thread = threading.Thread(target=self._run, name="smdebug-writer", daemon=True)
        self._thread.start()

    # --- training-thread side -----------------------------------------------------------------
    def submit(self, fn: Callable, *args, nbytes: int = 0, step: Optional[int] = None, wake: bool = True) -> bool:
        """Queue ``fn(*args)``. ``step``: the step the data belongs to (may be dropped when full).
        ``wake=False``: a small item that need not start being written at once (the tensors of a step in
        progress); the writer is woken when enough has gathered, or by the next item that wakes it (step
        ends, flush, close). Returns False if the item was not queued."""
        if nbytes:
            # The budget also counts what a queued item costs besides its bytes (the Python objects that
            # hold it), or a queue of tiny tensors could grow far past it.
            nbytes += _ITEM_OVERHEAD
        with self._lock:
            if self.error is not None or self._closed:
                return False
            if step is not None and (step in self.dropped_steps or step in self.lost_steps):
                return False
            if self._pending_bytes and self._pending_bytes + nbytes > self.max_pending_bytes:
                if self.drop_when_full:
                    if step is not None:
                        self._drop(step)
                        return False
                    # small bookkeeping items (step ends, collections) are always admitted
                elif not self._wait_for_room_locked(nbytes):
                    return False
            if step is not None and self._dropping_since is not None and nbytes:
                self._caught_up()
            self._pending_bytes += nbytes
            self._queue.append((fn, args, nbytes, step))
            # Waking the writer thread is the dearest part of a submit: small items are left to gather.
            if self._waiters and (wake or nbytes >= _RELEASE_EACH_BYTES or len(self._queue) >= _WAKE_AT_ITEMS):
                self._cond.notify_all()
            return True

    def wait_for_room(self, nbytes: int) -> None:
        """Block while ``nbytes`` more would exceed the budget (local stores; see ``submit``). Called before
        taking a large snapshot: memory stays within the budget, and the buffer of a tensor the writer has
        just finished is back in the snapshot pool for this one."""
        if self.drop_when_full or nbytes < _RELEASE_EACH_BYTES:
            return
        with self._lock:
            self._wait_for_room_locked(nbytes + _ITEM_OVERHEAD)  # (what submit will count for it)

    def _wait_for_room_locked(self, nbytes: int) -> bool:
        """Back-pressure (lock held): wait while ``nbytes`` more would exceed the budget, but always admit
        one item, so a tensor larger than the whole budget still goes through. False if the writer failed
        or stopped meanwhile."""
        while self._pending_bytes and self._pending_bytes + nbytes > self.max_pending_bytes:
            if self.error is not None or not self._thread.is_alive():
                return False
            self._cond.notify_all()  # the writer may be idle with items not woken for
            self._wait(0.5)
        return True

    def _wait(self, timeout: Optional[float] = None) -> bool:
        """``self._cond.wait`` (lock held), counted so that notifiers know someone listens."""
        self._waiters += 1
        try:
            return self._cond.wait(timeout)
        finally:
            self._waiters -= 1

    def _wait_for(self, predicate, timeout: Optional[float] = None) -> bool:
        """``self._cond.wait_for`` (lock held), counted like :meth:`_wait`."""
        self._waiters += 1
        try:
            return self._cond.wait_for(predicate, timeout)
        finally:
            self._waiters -= 1

    def _drop(self, step: int) -> None:
        self.dropped_steps.add(step)
        if self._dropping_since is None:
            self._dropping_since = step
            outage = self.storage.outage
            self.logger.warning(
                "smdebug: %s of data are waiting to be written to %s (%s); step %d and the steps after it "
                "are not saved until that drains (training continues).",
                _human_bytes(self._pending_bytes), self.storage.display_path,
                outage or "the store is slow or not answering", step)

    def _caught_up(self) -> None:
        first, self._dropping_since = self._dropping_since, None
        dropped = [s for s in self.dropped_steps if s >= first]
        self.logger.warning("smdebug: writing to %s caught up; steps %s were not saved.",
                            self.storage.display_path, format_steps(dropped))

    def write_tensor(self, step, mode, mode_step, name, value, wall_time=None):
        self.submit(self._write_tensor, step, mode, mode_step, name, value, wall_time, nbytes=value.nbytes, step=step)

    def write_shape(self, step, mode, mode_step, name, shape, original_name=None):
        self.submit(self._write_shape, step, mode, mode_step, name, shape, original_name, step=step)

    def close_step(self, step):
        self.submit(self._close_step, step)

    def abort_step(self, step):
        """Drop ``step``'s unfinished files once the writes submitted before this are done: the step is never
        completed nor indexed (a step its hook discarded)."""
        self.submit(self._abort_step, step)

    def call(self, fn: Callable, *args):
        """Run ``fn(*args)`` on the writer thread, after everything submitted before it."""
        self.submit(fn, *args)

    def flush(self, timeout: Optional[float] = None) -> bool:
        """Wait until everything submitted so far is written. False on timeout or writer death."""
        with self._lock:
            if not self._queue and not self._busy:
                # Nothing is unwritten: no need to wake the writer thread (which then competes for the
                # GIL with the caller; a loop that flushes after quiet steps paid for it)
                return self.error is None
            self._cond.notify_all()  # items queued without waking the writer must be written too
            ok = self._wait_for(
                lambda: (not self._queue and not self._busy) or self.error is not None or not self._thread.is_alive(),
                timeout,
            )
            return ok and self.error is None

    def close(self, timeout: Optional[float] = None) -> bool:
        """Write everything queued and stop the thread.

        ``timeout``: how long to wait without progress while the store is unreachable before giving up
        on what is still queued (None: wait as long as it takes).
        """
        self.submit(self._close_all)
        ok = self.flush(timeout)
        while not ok and self.error is None and self._thread.is_alive():
            if self.storage.outage is not None:
                with self._lock:
                    queued = len(self._queue)
                self.logger.warning(
                    "smdebug: %s is still unreachable at close (%s); giving up on %d queued writes.",
                    self.storage.display_path, self.storage.outage, queued)
                self.storage.cancel_pending()
                ok = self.flush(60)
                break
            ok = self.flush(timeout)  # slow but working: keep waiting
        with self._lock:
            self._closed = True
            if self._dropping_since is not None:
                self._dropping_since = None  # reported by the hook's summary at close
            self._cond.notify_all()
        self._thread.join(timeout=5)
        return ok and not self.lost_steps and not self.lost_other

    @property
    def pending_bytes(self) -> int:
        return self._pending_bytes

    @property
    def unsaved_steps(self) -> List[int]:
        """Steps that were due but did not reach storage (dropped when full, or failed)."""
        with self._lock:
            return sorted(self.dropped_steps | set(self.lost_steps))

    # --- writer-thread side -------------------------------------------------------------------
    def _run(self):
        try:
            self.storage.serve_background_writer()
        except Exception as e:  # noqa: BLE001 - writing still works, without the backend's patient retries
            self.logger.warning("smdebug: %s could not set up retries for background writes (%s: %s); "
                                "writes that fail are not retried", self.storage.display_path, type(e).__name__, e)
        while True:
            with self._lock:
                while not self._queue and not self._closed:
                    self._wait()
                if not self._queue and self._closed:
                    return
                # Everything queued is taken at once: one lock round trip per batch, not per tensor.
                batch, self._queue = self._queue, collections.deque()
                self._busy = True
            done_small = 0  # bytes of small items written, released together at the end of the batch
            for fn, args, nbytes, step in batch:
                skip = step is not None and (step in self.lost_steps or step in self.dropped_steps)
                try:
                    if self.error is None and not skip:
                        fn(*args)
                except (StorageAccessDenied, StorageBucketNotFound) as e:
                    self.error, self.error_step = e, self._step_of(fn, args, step)  # will not fix itself: reported
                    self._abort_all()
                except StorageError as e:  # unreachable (given up) or a refused object: lose it, go on
                    self._lose(fn, args, step, e)
                except _RecordRefused as e:  # one value the codec could not encode: that record only
                    self._refused(step, *e.args)
                except BaseException as e:  # noqa: BLE001 - report to the hook, never kill training
                    self.error, self.error_step = e, self._step_of(fn, args, step)
                    self._abort_all()
                if self.error is not None:
                    break
                if nbytes >= _RELEASE_EACH_BYTES:
                    # A large item frees its share of the budget at once: training may be waiting for it.
                    with self._lock:
                        self._pending_bytes -= nbytes
                        if self._waiters:
                            self._cond.notify_all()
                else:
                    done_small += nbytes
            with self._lock:
                self._pending_bytes -= done_small
                self._busy = False
                if self.error is not None:
                    self._queue.clear()
                    self._pending_bytes = 0
                if self._waiters:
                    self._cond.notify_all()

    def _step_of(self, fn, args, step: Optional[int]) -> Optional[int]:
        """The step a queued item writes (a step's closing write names it in its arguments)."""
        return args[0] if fn == self._close_step and args else step

    def _lose(self, fn, args, step, err: BaseException) -> None:
        step = self._step_of(fn, args, step)
        if step is not None:
            with self._lock:
                self.lost_steps.setdefault(step, str(err))
            w = self._steps.pop(step, None)
            if w is not None:
                self._abort(w)
            what = f"step {step}"
        else:
            what = getattr(fn, "__name__", "a write")
            self.lost_other.append(f"{what}: {err}")
        self._losses_logged += 1
        if self._losses_logged <= _MAX_LOGGED_LOSSES:
            self.logger.warning("smdebug: %s was not saved to %s: %s", what, self.storage.display_path, err)

    def _refused(self, step, name, err: BaseException) -> None:
        """(writer thread) A record that could not be encoded was left out; the rest of its step and of
        the run is saved. Said once per name (at most ``_MAX_REFUSED_LOGGED`` names)."""
        shown = repr(name)
        shown = shown if len(shown) <= 200 else shown[:200] + "..."
        if shown in self._refused_names or len(self._refused_names) >= _MAX_REFUSED_LOGGED:
            return
        self._refused_names.add(shown)
        self.logger.warning("smdebug: the tensor %s was not saved at step %s: its value could not be encoded "
                            "(%s: %s); everything else is saved.", shown, step, type(err).__name__,
                            str(err)[:300])

    def step_writer(self, step, mode, mode_step) -> StepWriter:
        """The StepWriter of ``step`` (writer thread only)."""
        w = self._steps.get(step)
        if w is None:
            w = _CheckedStepWriter(self.storage, step, self.worker, mode, mode_step)
            self._steps[step] = w
        return w

    def _write_tensor(self, step, mode, mode_step, name, value, wall_time):
        self.step_writer(step, mode, mode_step).write_tensor(name, value, mode, mode_step, wall_time)

    def _write_shape(self, step, mode, mode_step, name, shape, original_name):
        self.step_writer(step, mode, mode_step).write_shape(name, shape, original_name)

    def _close_step(self, step):
        w = self._steps.pop(step, None)
        if w is None:
            return
        with self._lock:
            incomplete = step in self.dropped_steps or step in self.lost_steps
        if incomplete:
            w.abort()  # all or nothing: a step that lost data is not written
        else:
            w.close()

    def _abort_step(self, step):
        w = self._steps.pop(step, None)
        if w is not None:
            self._abort(w)

    def _close_all(self):
        for step in sorted(self._steps):
            try:
                self._close_step(step)
            except StorageError as e:
                if isinstance(e, (StorageAccessDenied, StorageBucketNotFound)):
                    raise
                self._lose(self._close_step, (step,), step, e)

    def _abort_all(self):
        for w in self._steps.values():
            self._abort(w)
        self._steps.clear()

    def _abort(self, w: StepWriter) -> None:
        """Drop a step's unfinished files. The step is reported as not saved either way; a failure to
        clean up only leaves temporary files behind (never visible to readers), said at debug level."""
        try:
            w.abort()
        except Exception as e:  # noqa: BLE001
            self.logger.debug("smdebug: could not remove the unfinished files of a step: %s: %s", type(e).__name__, e)


# smdebug 1.0.x's FileWriter (one step's files, written directly): a legacy adapter, loaded on use.
__getattr__, __dir__ = lazy_exports(__name__, {"FileWriter": "smdebug.core.legacy.file_writer"})
