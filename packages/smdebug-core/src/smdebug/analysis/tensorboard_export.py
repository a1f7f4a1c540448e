"""Export a saved run to TensorBoard after the fact (what ``smdebug export tensorboard`` runs).

The files are laid out as the hook writes them with ``export_tensorboard=True``: one event file per
mode under ``<out_dir>/<MODE>/``, ``Event.step`` the global step. What goes in:

* a one-element value (a loss, a metric, a scalar) becomes a scalar summary tagged with its name;
* a larger numeric value becomes a histogram tagged ``<collection>/<name>`` (its first collection that
  keeps histograms; see :func:`smdebug.core.tensorboard.histogram_tag`), or its name outside any;
* a step where only reductions were saved gives one scalar per reduction, ``<name>/<reduction>``;
* strings, complex and boolean arrays have no TensorBoard form and are counted as skipped.

Steps are exported in order, all tensors of a step together, so each step's data is read at once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, List, Optional, Sequence

import numpy as np

from smdebug.core.collection import NON_HISTOGRAM_COLLECTIONS
from smdebug.core.locations import RUN_FOLDERS
from smdebug.core.logger import get_logger
from smdebug.core.modes import ModeKeys
from smdebug.core.output_guard import run_part_of
from smdebug.core.storage.base import is_s3_path
from smdebug.core.storage.factory import get_storage
from smdebug.core.tensorboard import TensorBoardWriter, histogram_tag, sanitize_tag
from smdebug.exceptions import SMDebugError, SMDebugValueError, TensorUnavailableForStep

__all__ = ["ExportFailed", "ExportSummary", "export_tensorboard"]


@dataclass
class ExportSummary:
    """What an export wrote."""

    out_dir: str
    scalars: int = 0
    histograms: int = 0
    reduction_scalars: int = 0
    tensors: int = 0
    steps_by_mode: Dict[str, List[int]] = field(default_factory=dict)  # mode -> global steps written
    skipped: Dict[str, str] = field(default_factory=dict)  # tensor -> why it has no TensorBoard form

    def to_dict(self) -> dict:
        return {
            "out_dir": self.out_dir, "scalars": self.scalars, "histograms": self.histograms,
            "reduction_scalars": self.reduction_scalars, "tensors": self.tensors,
            "steps": {m: len(s) for m, s in self.steps_by_mode.items()}, "skipped": dict(self.skipped),
        }


def _histogram_collections(trial, names: Sequence[str]) -> Dict[str, Optional[str]]:
    """tensor -> the collection its histogram is tagged with (the first one keeping histograms)."""
    colls = [c for name, c in sorted(trial.collections().items())
             if c.save_histogram and name not in NON_HISTOGRAM_COLLECTIONS]
    return {n: next((c.name for c in colls if c.matches(n)), None) for n in names}


def _reduction_tag(name: str, op: str, is_abs: bool) -> str:
    return f"{name}/{'abs_' if is_abs else ''}{op}"


def export_tensorboard(
    trial,
    out_dir: str,
    names: Optional[Sequence[str]] = None,
    mode: Optional[ModeKeys] = None,
    worker: Optional[str] = None,
    progress: Optional[Callable[[Iterable, int], Iterable]] = None,
) -> ExportSummary:
    """Write the run of ``trial`` as TensorBoard event files under ``out_dir`` (local or ``s3://``).

    :param names: the tensors to export (default: every tensor).
    :param mode: only the steps of this mode.
    :param worker: the worker whose values are exported (default: each step's first worker).
    :param progress: wraps the iteration over steps, ``progress(steps, total)`` (a progress bar).
    :raises SMDebugValueError: ``out_dir`` already holds TensorBoard event files, or is inside a run's own
        folders (``events``, ``index``, ``collections``...), which its readers read back.
    """
    if not isinstance(out_dir, str) or not out_dir.strip():  # ("" was the current directory)
        raise SMDebugValueError(f"the output path is empty: name the folder to export into, got {out_dir!r}")
    inside = run_part_of(out_dir)  # (on S3 too: S3 exports into a run's own folders went unchecked)
    if inside is not None:
        raise SMDebugValueError(
            f"refusing to export into {out_dir}: it is in the {inside[1]!r} part of the run {inside[0]}, "
            f"which the run's hook wrote; export outside the run's {', '.join(RUN_FOLDERS)} folders")
    storage = get_storage(out_dir)
    existing = [k for k in storage.list("") if k.endswith(".tfevents")]
    if existing:
        raise SMDebugValueError(
            f"{out_dir} already holds TensorBoard event files ({existing[0]}...): export into an empty or new "
            "directory, so that TensorBoard does not show the same steps twice"
        )
    wanted = set(trial.tensor_names() if names is None else names)
    tags = _histogram_collections(trial, sorted(wanted))
    steps = [g for g in trial.steps() if mode is None or (trial.mode(g) or ModeKeys.GLOBAL) == mode]
    summary = ExportSummary(out_dir=out_dir)
    exported = set()
    # TensorBoard tag (as written) -> the tensor that writes it: two names written as one tag ("a b" and "a_b",
    # a tensor "w/mean" and w's mean) would be drawn as one series, the values of both mixed
    owners: Dict[str, str] = {}
    made = _folders_an_export_would_make(out_dir)
    writer = TensorBoardWriter(out_dir, storage=storage)
    try:
        for g in (progress(steps, len(steps)) if progress is not None else steps):
            step_mode = trial.mode(g) or ModeKeys.GLOBAL
            wrote = False
            for name in trial.tensor_names(step=g):
                if name not in wanted or name in summary.skipped:
                    continue
                if _export_value(writer, trial.tensor(name), g, step_mode, worker, tags[name], summary, owners):
                    exported.add(name)
                    wrote = True
            if wrote:
                summary.steps_by_mode.setdefault(step_mode.name, []).append(g)
        writer.close()
    except BaseException as e:
        writer.abort()
        left = _take_back(storage, writer.committed, made)
        if e is writer.write_error and isinstance(e, OSError):
            why = str(e) if isinstance(e, SMDebugError) or not e.strerror else e.strerror
            raise ExportFailed(f"cannot write {out_dir}: {why}; {_what_is_left(left)}", left) from e
        if left:  # (a failure to read the run: its error says what; this says what the export left)
            get_logger().warning("smdebug: the failed export into %s %s", out_dir, _what_is_left(left))
        raise
    summary.tensors = len(exported)
    return summary


class ExportFailed(SMDebugError):
    """The export could not write its files (a full disk, permissions, an S3 outage). What it had made was
    removed; ``left`` names what could not be (empty when nothing is left)."""

    def __init__(self, message: str, left: Sequence[str] = ()):
        super().__init__(message)
        self.left = list(left)


def _folders_an_export_would_make(out_dir: str) -> List[str]:
    """The local folders that do not exist yet and an export into ``out_dir`` may make, deepest first: a
    mode folder (``<out_dir>/TRAIN``...), ``out_dir`` and its missing parents. Folders that were there are
    never taken back. On S3 there are no folders."""
    if is_s3_path(out_dir):
        return []
    root = os.path.abspath(os.path.expanduser(out_dir))
    made = [os.path.join(root, m.name) for m in ModeKeys if not os.path.lexists(os.path.join(root, m.name))]
    folder = root
    while not os.path.lexists(folder) and os.path.dirname(folder) != folder:
        made.append(folder)
        folder = os.path.dirname(folder)
    return made


def _take_back(storage, committed: Sequence[str], made: Sequence[str]) -> List[str]:
    """Remove the files a failed export committed and the folders it made (each only if empty: what
    someone else put there stays). Returns what is left of the export, for the message."""
    left = []
    for key in committed:
        try:
            storage.remove(key)
        except Exception:  # noqa: BLE001 - said in the message, which is what the user needs to act on
            left.append(storage.full_path(key) if hasattr(storage, "full_path") else f"{storage.display_path}{key}")
    for folder in made:
        try:
            os.rmdir(folder)
        except FileNotFoundError:
            pass  # (never made: the export failed before it needed this folder)
        except OSError:
            if os.path.lexists(folder):
                left.append(folder)
    return left


def _what_is_left(left: Sequence[str]) -> str:
    if not left:
        return "nothing is left of this export (the files and folders it had made were removed)"
    shown = ", ".join(left[:5]) + (f" and {len(left) - 5} more" if len(left) > 5 else "")
    return f"could not remove what it had made: {shown}"


def _claim(owners: Dict[str, str], tag: str, name: str, summary: ExportSummary) -> bool:
    """Whether ``name`` may write ``tag``: the first tensor to write a tag (as TensorBoard will read it) keeps
    it; another is skipped, saying whose tag it is (not mixed into that tensor's series)."""
    written = sanitize_tag(tag)
    owner = owners.setdefault(written, name)
    if owner != name:
        summary.skipped[name] = (f"its TensorBoard tag {written!r} is already {owner!r}'s (TensorBoard would draw "
                                 "both as one series): export it on its own")
        return False
    return True


def _export_value(writer: TensorBoardWriter, tensor, step: int, mode: ModeKeys, worker: Optional[str],
                  collection: Optional[str], summary: ExportSummary, owners: Dict[str, str]) -> bool:
    """Write one tensor at one step; False when there was nothing to write."""
    name = tensor.name
    try:
        arr = np.asarray(tensor.value(step, worker=worker))
    except TensorUnavailableForStep as e:
        if not e.has_reductions:
            return False  # this worker did not save it at this step
        reductions = sorted(tensor.reduction_values(step, worker=worker).items())
        if not all(_claim(owners, _reduction_tag(name, op, is_abs), name, summary) for (op, is_abs), _ in reductions):
            return False
        for (op, is_abs), value in reductions:
            writer.write_scalar(mode, step, _reduction_tag(name, op, is_abs), value)
            summary.reduction_scalars += 1
        return True
    if arr.size == 1 and arr.dtype.kind in "biuf":
        if not _claim(owners, name, name, summary):
            return False
        writer.write_scalar(mode, step, name, arr)
        summary.scalars += 1
        return True
    tag = histogram_tag(collection, name) if collection else name
    if arr.size and arr.dtype.kind in "biuf" and not _claim(owners, tag, name, summary):
        return False
    if writer.write_histogram(mode, step, tag, arr):
        summary.histograms += 1
        return True
    if arr.size:
        summary.skipped[name] = f"{arr.dtype} values have no TensorBoard summary"
    return False
