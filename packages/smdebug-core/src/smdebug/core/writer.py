"""Background writing: tensors are encoded and written on a separate thread so training never waits on
disk or network, with a byte budget so a slow disk applies back-pressure instead of eating memory."""

from __future__ import annotations

import collections
import os
import threading
from typing import Callable, Dict, Optional

from smdebug.core.logger import get_logger
from smdebug.core.storage.base import Storage
from smdebug.core.tfevent.step_writer import StepWriter

DEFAULT_MAX_PENDING_BYTES = int(os.environ.get("SMDEBUG_WRITER_MAX_PENDING_BYTES", 256 << 20))


class WriterFailed(Exception):
    pass


class BackgroundWriter:
    """Owns every StepWriter of a hook and runs their work, in submission order, on one thread."""

    def __init__(self, storage: Storage, worker: str, max_pending_bytes: int = DEFAULT_MAX_PENDING_BYTES):
        self.storage = storage
        self.worker = worker
        self.max_pending_bytes = max_pending_bytes
        self._queue = collections.deque()
        self._cond = threading.Condition()
        self._pending_bytes = 0
        self._busy = False
        self._closed = False
        self.error: Optional[BaseException] = None
        self._steps: Dict[int, StepWriter] = {}
        self._thread = threading.Thread(target=self._run, name="smdebug-writer", daemon=True)
        self._thread.start()
        self.logger = get_logger()

    # --- training-thread side -----------------------------------------------------------------
    def submit(self, fn: Callable, *args, nbytes: int = 0) -> None:
        with self._cond:
            if self.error is not None or self._closed:
                return
            # Back-pressure: wait while the budget is exhausted, but always admit one item so a tensor
            # larger than the whole budget still goes through.
            while self._pending_bytes and self._pending_bytes + nbytes > self.max_pending_bytes:
                if self.error is not None or not self._thread.is_alive():
                    return
                self._cond.wait(0.5)
            self._pending_bytes += nbytes
            self._queue.append((fn, args, nbytes))
            self._cond.notify_all()

    def write_tensor(self, step, mode, mode_step, name, value, wall_time=None):
        self.submit(self._write_tensor, step, mode, mode_step, name, value, wall_time, nbytes=value.nbytes)

    def write_shape(self, step, mode, mode_step, name, shape, original_name=None):
        self.submit(self._write_shape, step, mode, mode_step, name, shape, original_name)

    def close_step(self, step):
        self.submit(self._close_step, step)

    def call(self, fn: Callable, *args):
        """Run ``fn(*args)`` on the writer thread, after everything submitted before it."""
        self.submit(fn, *args)

    def flush(self, timeout: Optional[float] = None) -> bool:
        """Wait until everything submitted so far is written. False on timeout or writer death."""
        with self._cond:
            ok = self._cond.wait_for(
                lambda: (not self._queue and not self._busy) or self.error is not None or not self._thread.is_alive(),
                timeout,
            )
            return ok and self.error is None

    def close(self, timeout: Optional[float] = None) -> bool:
        self.submit(self._close_all)
        ok = self.flush(timeout)
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(timeout=5)
        return ok

    @property
    def pending_bytes(self) -> int:
        return self._pending_bytes

    # --- writer-thread side -------------------------------------------------------------------
    def _run(self):
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if not self._queue and self._closed:
                    return
                fn, args, nbytes = self._queue.popleft()
                self._busy = True
            try:
                if self.error is None:
                    fn(*args)
            except BaseException as e:  # noqa: BLE001 - report to the hook, never kill training
                self.error = e
                self._abort_all()
            finally:
                with self._cond:
                    self._pending_bytes -= nbytes
                    self._busy = False
                    if self.error is not None:
                        self._queue.clear()
                        self._pending_bytes = 0
                    self._cond.notify_all()

    def step_writer(self, step, mode, mode_step) -> StepWriter:
        """The StepWriter of ``step`` (writer thread only)."""
        w = self._steps.get(step)
        if w is None:
            w = StepWriter(self.storage, step, self.worker, mode, mode_step)
            self._steps[step] = w
        return w

    def _write_tensor(self, step, mode, mode_step, name, value, wall_time):
        self.step_writer(step, mode, mode_step).write_tensor(name, value, mode, mode_step, wall_time)

    def _write_shape(self, step, mode, mode_step, name, shape, original_name):
        self.step_writer(step, mode, mode_step).write_shape(name, shape, original_name)

    def _close_step(self, step):
        w = self._steps.pop(step, None)
        if w is not None:
            w.close()

    def _close_all(self):
        for step in sorted(self._steps):
            self._close_step(step)

    def _abort_all(self):
        for w in self._steps.values():
            try:
                w.abort()
            except Exception:  # noqa: BLE001
                pass
        self._steps.clear()
