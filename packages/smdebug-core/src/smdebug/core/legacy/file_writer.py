"""``smdebug.core.writer.FileWriter`` of smdebug 1.0.x: writes the records of one step of one worker
(its event file and index file) directly, without a hook. An adapter over the project's StepWriter,
so the files are the project's (atomic, verifiable, readable by 1.0.x and TensorBoard)."""

from __future__ import annotations

from typing import Optional, Sequence

from smdebug.core.locations import event_file_name
from smdebug.core.modes import ModeKeys
from smdebug.core.storage.base import as_path_str
from smdebug.core.storage.factory import get_storage
from smdebug.core.tfevent.step_writer import StepWriter
from smdebug.core.tfevent.tensor_codec import make_numpy_array
from smdebug.exceptions import SMDebugRuntimeError, SMDebugTypeError, SMDebugValueError


def _mode_and_step(mode, mode_step, step: int):
    if mode is None:
        mode = ModeKeys.GLOBAL
    if not isinstance(mode, ModeKeys):
        raise SMDebugValueError(f"mode must be one of {', '.join('ModeKeys.' + m.name for m in ModeKeys)}, got {mode!r}")
    return mode, step if mode_step is None else int(mode_step)


class FileWriter:
    """``FileWriter(trial_dir, worker, step=0)``: ``write_tensor`` appends records; ``close`` (or leaving
    the ``with`` block) completes the step: its event file, then its index file, each atomically.

    ``wtype="tensorboard"`` writes TensorBoard summaries under ``trial_dir`` instead
    (``write_scalar_summary``, ``write_histogram_summary``). ``max_queue``, ``flush_secs``, ``verbose``
    and ``write_checksum`` are accepted for compatibility: records always carry checksums that both
    smdebug 1.0.x and TensorBoard verify.
    """

    def __init__(self, trial_dir, worker: str, step: int = 0, wtype: str = "events", mode=ModeKeys.GLOBAL,
                 max_queue: int = 10, flush_secs: int = 120, verbose: bool = False, write_checksum: bool = False):
        if wtype not in ("events", "tensorboard"):
            raise SMDebugValueError(f"Writer type not supported {wtype}")
        if not isinstance(worker, str) or not worker:
            raise SMDebugTypeError(f"worker must be a non-empty string, got {worker!r}")
        self.trial_dir = as_path_str(trial_dir)
        self.worker = worker
        self.step = int(step)
        self.wtype = wtype
        self.mode = mode
        self._storage = get_storage(self.trial_dir) if wtype == "events" else None
        self._step_writer: Optional[StepWriter] = None
        self._wrote_record = False
        self._tb = None
        self._closed = False

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None and self._step_writer is not None:
            self._step_writer.abort()  # a half-written step never becomes visible
            self._step_writer = None
        self.close()

    def _writer(self, mode: ModeKeys, mode_step: int) -> StepWriter:
        if self._closed:
            raise SMDebugRuntimeError(f"FileWriter for step {self.step} of {self.trial_dir} is closed")
        if self.wtype != "events":
            raise SMDebugRuntimeError("A tensorboard FileWriter writes summaries, not tensors")
        if self._step_writer is None:
            self._step_writer = StepWriter(self._storage, self.step, self.worker, mode, mode_step)
        return self._step_writer

    def write_tensor(self, tdata, tname: str, write_index: bool = True, mode=ModeKeys.GLOBAL, mode_step=None,
                     timestamp: Optional[float] = None) -> None:
        mode, mode_step = _mode_and_step(mode, mode_step, self.step)
        value = make_numpy_array(tdata)
        self._writer(mode, mode_step).write_tensor(tname, value, mode, mode_step, timestamp, index=write_index)
        self._wrote_record = True

    def write_shape(self, name: str, shape: Sequence[int], mode=ModeKeys.GLOBAL, mode_step=None,
                    original_name: Optional[str] = None) -> None:
        mode, mode_step = _mode_and_step(mode, mode_step, self.step)
        self._writer(mode, mode_step).write_shape(name, shape, original_name)

    # --- TensorBoard summaries (wtype="tensorboard") ----------------------------------------------
    def _tensorboard(self):
        if self.wtype != "tensorboard":
            raise SMDebugRuntimeError("Summaries are written by a FileWriter with wtype='tensorboard'")
        if self._tb is None:
            from smdebug.core.tensorboard import TensorBoardWriter

            self._tb = TensorBoardWriter(self.trial_dir)
        return self._tb

    def write_scalar_summary(self, name: str, value, global_step: int, timestamp: Optional[float] = None) -> None:
        self._tensorboard().write_scalar(self.mode or ModeKeys.GLOBAL, global_step, name, make_numpy_array(value),
                                         timestamp)

    def write_histogram_summary(self, tdata, tname: str, global_step: int, bins="default") -> None:
        self._tensorboard().write_histogram(self.mode or ModeKeys.GLOBAL, global_step, tname, make_numpy_array(tdata))

    # --- completing -----------------------------------------------------------------------------
    def flush(self) -> None:
        """Nothing to do: a step's files appear, complete, at :meth:`close`."""
        if self._tb is not None:
            self._tb.flush()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._step_writer is not None:
            self._step_writer.close()
        if self._tb is not None:
            self._tb.close()

    def name(self) -> str:
        """The event file's path (once a tensor was written)."""
        if not self._wrote_record:
            raise SMDebugRuntimeError(
                "Writer hasn't been initialized yet. It will be initialized when the first tensor or summary is written.")
        return self._storage.full_path(event_file_name(self.step, self.worker))
