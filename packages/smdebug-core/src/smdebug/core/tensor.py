"""A tensor of a trial: its steps, values, reductions and shapes across modes and workers."""

from __future__ import annotations

import bisect

from enum import Enum
from typing import TYPE_CHECKING, Dict, List, Optional, Protocol, Sequence, Tuple

import numpy as np

from smdebug.core import reader_arguments as argcheck
from smdebug.core.missing_hints import saved_steps_hint, short_steps
from smdebug.core.modes import ModeKeys
from smdebug.core.reductions import compute_reduction
from smdebug.core.skip_notes import warn_skipped
from smdebug.exceptions import (
    EventFileCorrupted,
    MissingEventFile,
    SMDebugNotImplementedError,
    ShapeUnavailableForStep,
    StepUnavailable,
    TensorUnavailableForStep,
)

if TYPE_CHECKING:
    from smdebug.core.tfevent.index_file import IndexFile


class TensorReader(Protocol):
    """What a :class:`Tensor` reads through: the trial it belongs to (:class:`smdebug.trials.trial.Trial`
    implements it). Steps are global steps with ``mode=GLOBAL``, else steps of that mode; an ``IndexFile``
    is one worker's index of one step (where each tensor's record is)."""

    name: str
    #: skip steps whose files are damaged (with a warning) instead of raising
    skip_damaged: bool

    def maybe_refresh(self) -> None:
        """Look for new steps of a run still being written (rate-limited)."""

    def tensor_steps(self, name: str, mode, show_incomplete: bool) -> List[int]:
        """The steps at which anything of tensor ``name`` was saved."""

    def index_files_with_tensor(self, name: str, step: int, mode) -> List["IndexFile"]:
        """Every worker's index of ``step`` that has tensor ``name`` (TensorUnavailableForStep if none)."""

    def index_file_for(self, name: str, step: int, mode, worker: Optional[str]) -> "IndexFile":
        """The index of ``step`` to read ``name`` from: ``worker``'s, or the first worker's that has it."""

    def read_record(self, f: "IndexFile", name: str, location: Tuple[int, int]) -> np.ndarray:
        """The value stored at ``location`` (offset, length) of ``f``'s event file."""

    def read_records(self, name: str, steps: Sequence[int], mode, worker: Optional[str]) -> List[np.ndarray]:
        """The values of ``name`` at ``steps``, neighbouring records read together."""

    def note_read(self, name: str, step: int) -> None:
        """A value was served without reading it (from the tensor's cache): tell the open read logs."""

    def global_step(self, mode, mode_step: int) -> Optional[int]:
        """The global step of a mode step."""


class StepState(Enum):
    UNAVAILABLE = 0
    AVAILABLE = 1
    NOT_YET_AVAILABLE = 2


class Tensor:
    def __init__(self, name: str, trial: TensorReader, cache: bool = False):
        self.name = name
        self.original_name = name
        self.trial = trial
        self.cache = cache
        self._values: Dict[Tuple[int, str], np.ndarray] = {}

    # --- steps --------------------------------------------------------------------------------
    def steps(self, mode=ModeKeys.GLOBAL, show_incomplete_steps: bool = False) -> List[int]:
        """Steps (global, or mode steps for a mode) at which anything of this tensor was saved."""
        show_incomplete_steps = argcheck.flag(show_incomplete_steps, "show_incomplete_steps")
        self.trial.maybe_refresh()
        return self.trial.tensor_steps(self.name, mode, show_incomplete_steps)

    def prev_steps(self, step, n=None, mode=ModeKeys.GLOBAL) -> List[int]:
        """The saved steps up to and including ``step`` (the last ``n`` of them if ``n`` is given)."""
        step, n = argcheck.step(step), argcheck.count(n, "n")
        steps = self.steps(mode)
        end = bisect.bisect_right(steps, step)
        return steps[max(0, end - n):end] if n else steps[:end]

    def step(self, *args, **kwargs):
        raise SMDebugNotImplementedError("Tensor.step() was removed; use tensor.value(step) and tensor.steps()")

    def workers(self, step_num, mode=ModeKeys.GLOBAL) -> List[str]:
        try:
            files = self.trial.index_files_with_tensor(self.name, step_num, mode)
        except (TensorUnavailableForStep, StepUnavailable) as e:
            self._hint_saved_steps(e, mode)
            raise
        return sorted(f.worker for f in files)

    # --- values -------------------------------------------------------------------------------
    def value(self, step_num, mode=ModeKeys.GLOBAL, worker: Optional[str] = None) -> np.ndarray:
        try:
            f = self.trial.index_file_for(self.name, step_num, mode, worker)
            location = f.location(self.name)
            if location is None:
                raise TensorUnavailableForStep(self.name, step_num, mode, has_reductions=self.name in f.reductions)
        except (TensorUnavailableForStep, StepUnavailable) as e:
            self._hint_saved_steps(e, mode)
            raise
        key = (f.step, f.worker)
        if self.cache and key in self._values:
            self.trial.note_read(self.name, f.step)
            return self._values[key]
        value = self.trial.read_record(f, self.name, location)
        if self.cache:
            self._values[key] = value
        return value

    def values(self, mode=ModeKeys.GLOBAL, worker: Optional[str] = None) -> Dict[int, np.ndarray]:
        steps = self.steps(mode)
        try:
            return dict(zip(steps, self.trial.read_records(self.name, steps, mode, worker)))
        except (EventFileCorrupted, MissingEventFile):
            if not getattr(self.trial, "skip_damaged", False):
                raise
        # skip_damaged: the steps that read back, with a warning for each one that does not
        out = {}
        for s in steps:
            try:
                out[s] = self.value(s, mode, worker)
            except (EventFileCorrupted, MissingEventFile) as e:
                warn_skipped(self.trial, "Skipping damaged step %s of %s: %s", s, self.name, e)
        return out

    def reduction_value(self, step_num, reduction_name: str, mode=ModeKeys.GLOBAL, worker=None, abs=False):
        """A stored reduction if one was saved, else computed from the raw value (same definitions)."""
        reduction_name, abs = argcheck.name(reduction_name, "reduction_name"), argcheck.flag(abs, "abs")
        try:
            f = self.trial.index_file_for(self.name, step_num, mode, worker)
        except (TensorUnavailableForStep, StepUnavailable) as e:
            self._hint_saved_steps(e, mode)
            raise
        stored = f.reductions.get(self.name, {}).get((reduction_name, abs))
        if stored is not None:
            return self.trial.read_record(f, self.name, stored.location)
        entry = f.entries.get(self.name)
        if entry is not None and entry.location is not None:
            return compute_reduction(self.value(step_num, mode, f.worker), reduction_name, abs)
        e = TensorUnavailableForStep(self.name, step_num, mode, has_reductions=self.name in f.reductions)
        self._hint_saved_steps(e, mode)
        raise e

    def _hint_saved_steps(self, error: Exception, mode) -> None:
        """End a "not saved" error with the steps this tensor was saved at (not for a file gone missing:
        that step was saved)."""
        if not isinstance(error, MissingEventFile):
            error.hint = saved_steps_hint(self, mode)

    def reduction_values(self, step_num, mode=ModeKeys.GLOBAL, worker=None) -> Dict[Tuple[str, bool], np.ndarray]:
        """All reductions saved for this step: {(name, abs): value}."""
        f = self.trial.index_file_for(self.name, step_num, mode, worker)
        return {k: self.trial.read_record(f, self.name, e.location) for k, e in f.reductions.get(self.name, {}).items()}

    def shape(self, step_num, mode=ModeKeys.GLOBAL, worker=None) -> Tuple[int, ...]:
        try:
            f = self.trial.index_file_for(self.name, step_num, mode, worker)
        except (TensorUnavailableForStep, StepUnavailable) as e:
            self._hint_saved_steps(e, mode)
            raise
        entry = f.entries.get(self.name)
        if entry is not None and entry.shape is not None:
            return tuple(entry.shape)
        if entry is not None and entry.location is not None:
            return tuple(self.value(step_num, mode, f.worker).shape)
        raise ShapeUnavailableForStep(self.name, step_num, mode)

    def shapes(self, mode=ModeKeys.GLOBAL, worker=None) -> Dict[int, Tuple[int, ...]]:
        return {s: self.shape(s, mode, worker) for s in self.steps(mode)}

    # --- analysis helpers ---------------------------------------------------------------------
    def to_dataframe(self, mode=ModeKeys.GLOBAL, workers=None, reduction: Optional[str] = None, abs: bool = False):
        """Values over steps as a pandas DataFrame with columns step, mode, mode_step, worker, value.

        ``workers``: None = the default worker of each step, "all" = one row per worker, or a list.
        ``reduction``: store that reduction (stored or computed) instead of the value. One-element
        values become plain numbers; larger values are kept as arrays.
        """
        if workers is not None and workers != "all":
            workers = argcheck.name_list(workers, "workers", "worker name")
        if reduction is not None:
            argcheck.name(reduction, "reduction")
        abs = argcheck.flag(abs, "abs")
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("to_dataframe needs pandas: pip install 'smdebug-core[analysis]'") from None
        rows = []
        for step in self.steps(mode):
            gstep = self.trial.global_step(mode, step) if mode != ModeKeys.GLOBAL else step
            if workers is None:
                wlist = [None]
            elif workers == "all":
                wlist = self.workers(step, mode)
            else:
                wlist = list(workers)
            for w in wlist:
                try:
                    if reduction:
                        v = self.reduction_value(step, reduction, mode, w, abs)
                    else:
                        v = self.value(step, mode, w)
                except MissingEventFile as e:  # saved, but its file is gone: not the same as "not saved"
                    if not getattr(self.trial, "skip_damaged", False):
                        raise
                    warn_skipped(self.trial, "Skipping damaged step %s of %s: %s", step, self.name, e)
                    continue
                except TensorUnavailableForStep:
                    continue
                v = np.asarray(v)
                f = self.trial.index_file_for(self.name, step, mode, w)
                rows.append(
                    {
                        "step": gstep,
                        "mode": f.mode.name,
                        "mode_step": f.mode_step,
                        "worker": f.worker,
                        "value": v.reshape(-1)[0].item() if v.size == 1 else v,
                    }
                )
        return pd.DataFrame(rows, columns=["step", "mode", "mode_step", "worker", "value"])

    def __repr__(self):
        # What a notebook shows for trial.tensor(name): where it was saved, so the next cell asks for a step
        # that exists. (No refresh: a repr reads nothing new.)
        saved = []
        try:
            for mode in (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT):
                steps = self.trial.tensor_steps(self.name, mode, False)
                if steps:
                    saved.append(f"{mode.name} steps {short_steps(steps)}")
            steps = [] if saved else self.trial.tensor_steps(self.name, ModeKeys.GLOBAL, False)
            if steps:  # a run that never named its modes
                saved.append(f"GLOBAL steps {short_steps(steps)}")
        except Exception:  # noqa: BLE001 - a repr never raises (a damaged index is for value() to report)
            saved = []
        return f"<Tensor {self.name} of trial {self.trial.name}" + (f": {'; '.join(saved)}>" if saved else ">")
