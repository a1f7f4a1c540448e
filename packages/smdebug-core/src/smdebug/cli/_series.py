"""Values of tensors over steps, as plot-ready series (one per tensor, mode and worker).

Used by ``smdebug plot`` and ``smdebug report``. Every read goes through the trial's public API with
global step numbers (``tensor.value(g)``, ``tensor.reduction_value(g, ...)``), so a step is never
ambiguous between modes; the mode and mode step of each point come from the trial's step maps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

#: reductions ``--reduction`` accepts (smdebug.core.reductions)
REDUCTIONS = ("min", "max", "mean", "std", "variance", "sum", "prod", "median", "l1", "l2")

#: when nothing is asked for, a non-scalar tensor is drawn as this reduction
DEFAULT_REDUCTION = "l2"


@dataclass
class Series:
    """One line: ``y`` over ``x`` for one tensor in one mode on one worker."""

    tensor: str
    mode: str  # TRAIN, EVAL, PREDICT or GLOBAL
    worker: str
    reduction: Optional[str] = None  # None: the values themselves (scalars)
    abs: bool = False
    x: List[int] = field(default_factory=list)  # global steps, or mode steps (see ``x_kind``)
    y: List[float] = field(default_factory=list)
    steps: List[int] = field(default_factory=list)  # global steps of the points
    mode_steps: List[int] = field(default_factory=list)

    @property
    def quantity(self) -> str:
        """``loss`` for values, ``l2(gradient/w)`` / ``l2(|gradient/w|)`` for a reduction."""
        if self.reduction is None:
            return self.tensor
        return f"{self.reduction}(|{self.tensor}|)" if self.abs else f"{self.reduction}({self.tensor})"

    def to_dict(self) -> dict:
        return {
            "tensor": self.tensor, "mode": self.mode, "worker": self.worker, "reduction": self.reduction,
            "abs": self.abs, "label": self.quantity, "steps": self.steps, "mode_steps": self.mode_steps,
            "values": self.y,
        }


def tensor_points(trial, name: str, mode=None) -> List[Tuple[int, object, int]]:
    """``(global step, mode, mode step)`` of every saved step of a tensor (in one mode, or in all)."""
    from smdebug.core.modes import ModeKeys

    out = []
    for g in trial.tensor(name).steps():
        m, ms = trial.mode_modestep(g)
        m = ModeKeys.GLOBAL if m is None else m
        if mode is None or m == mode:
            out.append((g, m, g if ms is None else ms))
    return out


def _scalar(v) -> float:
    import numpy as np

    arr = np.asarray(v)
    if arr.size != 1:
        raise ValueError(f"not a single value (shape {arr.shape})")
    x = arr.reshape(-1)[0]
    if arr.dtype.kind == "c":
        x = abs(x)
    return float(x)


def collect_series(
    trial,
    name: str,
    *,
    mode=None,
    reduction: Optional[str] = None,
    abs: bool = False,
    worker: Optional[str] = None,
    all_workers: bool = True,
    max_points: Optional[int] = None,
    tick: Optional[Callable[[int], None]] = None,
    x_global: Optional[bool] = None,
) -> List[Series]:
    """The series of one tensor: one per (mode, worker) that has points.

    ``reduction=None``: scalars are drawn as they are, larger tensors as their l2 norm (a stored
    reduction when the hook saved one, else computed from the raw value). ``max_points`` keeps at most
    that many steps per tensor (evenly spread). ``tick(n)`` is called after each read, for progress.
    ``x_global``: x is the global step (default: when no mode is given) or the mode step.
    """
    from smdebug.cli._common import subsample
    from smdebug.exceptions import TensorUnavailableForStep

    tensor = trial.tensor(name)
    points = subsample(tensor_points(trial, name, mode), max_points)
    chosen = reduction  # decided at the first readable point when None
    by_key: Dict[Tuple[str, str], Series] = {}
    for g, m, ms in points:
        workers = [worker] if worker else (tensor.workers(g) if all_workers else tensor.workers(g)[:1])
        for w in workers:
            try:
                if chosen is None:
                    y, chosen = _first_value(tensor, g, w)
                elif chosen == "":
                    y = _scalar(tensor.value(g, worker=w))
                else:
                    y = _scalar(tensor.reduction_value(g, chosen, worker=w, abs=abs))
            except (TensorUnavailableForStep, ValueError, TypeError):
                continue
            finally:
                if tick is not None:
                    tick(1)
            key = (m.name, w)
            s = by_key.get(key)
            if s is None:
                s = by_key[key] = Series(name, m.name, w, reduction=chosen or None, abs=abs if chosen else False)
            s.steps.append(g)
            s.mode_steps.append(ms)
            s.x.append(g if (mode is None if x_global is None else x_global) else ms)
            s.y.append(y)
    return sorted(by_key.values(), key=lambda s: (_mode_order(s.mode), s.worker))


def _first_value(tensor, g: int, w: str):
    """(y, reduction) at the first point: a single value is drawn as is ("" = no reduction); anything
    larger as its l2 norm; a tensor saved only as reductions as the stored l2 (else another stored one)."""
    from smdebug.exceptions import TensorUnavailableForStep

    try:
        v = tensor.value(g, worker=w)
    except TensorUnavailableForStep as e:
        if not getattr(e, "has_reductions", True):
            raise
        stored = tensor.reduction_values(g, worker=w)
        for (op, is_abs), value in sorted(stored.items(), key=lambda kv: (kv[0][0] != DEFAULT_REDUCTION, kv[0][1])):
            if not is_abs:
                return _scalar(value), op
        raise
    import numpy as np

    arr = np.asarray(v)
    if arr.size == 1:
        return _scalar(arr), ""
    from smdebug.core.reductions import compute_reduction

    return float(compute_reduction(arr, DEFAULT_REDUCTION)), DEFAULT_REDUCTION


def _mode_order(mode: str) -> int:
    return {"TRAIN": 0, "EVAL": 1, "PREDICT": 2, "GLOBAL": 3}.get(mode, 4)


def count_points(trial, names: Sequence[str], mode=None, max_points: Optional[int] = None,
                 worker: Optional[str] = None, all_workers: bool = True) -> int:
    """How many reads :func:`collect_series` will do (for a progress bar's total)."""
    from smdebug.cli._common import subsample

    total = 0
    for name in names:
        tensor = trial.tensor(name)
        for g, _m, _ms in subsample(tensor_points(trial, name, mode), max_points):
            if worker or not all_workers:
                total += 1
            else:
                try:
                    total += len(tensor.workers(g))
                except Exception:  # noqa: BLE001 - just an estimate
                    total += 1
    return total


# --------------------------------------------------------------------------------------------------
# drawing
# --------------------------------------------------------------------------------------------------
def series_labels(series: Sequence[Series], *, with_tensor: bool = True) -> List[str]:
    """Legend labels: the quantity, plus the mode and worker where the figure has several."""
    modes = {s.mode for s in series}
    workers = {s.worker for s in series}
    labels = []
    for s in series:
        parts = [s.quantity] if with_tensor else []
        if len(modes) > 1:
            parts.append(s.mode)
        if len(workers) > 1:
            parts.append(s.worker)
        labels.append(" ".join(parts) or s.quantity)
    return labels


#: the most characters of a label drawn (a tensor name of kilobytes squeezed the axes to nothing, and matplotlib
#: printed its layout warning with a line of our source; probe 17b F10)
MAX_LABEL = 120


def plain_text(text: str) -> str:
    """``text`` shown as it is by matplotlib: tensor and run names come from the run, and a ``$`` in them
    would start mathtext (``lr$\\frac{a}{$`` makes matplotlib raise while drawing). An escaped ``\\$`` is
    drawn as a plain dollar sign. Clipped to MAX_LABEL characters (its start and end, the middle left out)."""
    text = str(text)
    if len(text) > MAX_LABEL:
        text = f"{text[:MAX_LABEL // 2 - 1]}...{text[-(MAX_LABEL // 2 - 2):]}"
    return text.replace("$", r"\$")


#: the largest magnitude drawn. A finite float64 near its limit (1.8e308) cannot be placed on an axis:
#: matplotlib's margins and tick ranges overflow (``arange: cannot compute length``, ``OverflowError``).
#: Such values are left out like infinities, and counted.
DRAWABLE_MAX = 1e300


def draw_axes(ax, series: Sequence[Series], *, x_label: str, y_label: str = "", title: str = "",
              logy: bool = False, with_tensor: bool = True, legend: str = "inside") -> int:
    """Draw series on a matplotlib Axes: one line per series; points marked on short series. Returns how
    many values were left out for a magnitude beyond :data:`DRAWABLE_MAX` (the axes say so too)."""
    import numpy as np

    labels = series_labels(series, with_tensor=with_tensor)
    cmap = None
    if len(series) > 10:
        from matplotlib import colormaps

        cmap = colormaps["viridis"].resampled(len(series))
    left_out = 0
    for i, (s, label) in enumerate(zip(series, labels)):
        y = np.asarray(s.y, dtype=float)
        beyond = np.abs(y) > DRAWABLE_MAX  # (NaN compares False: it stays a gap)
        if beyond.any():
            left_out += int(beyond.sum())
            y = np.where(beyond, np.nan, y)
        x, y = _with_breaks(np.asarray(s.x, dtype=float), y)
        if logy:
            y = np.where(y > 0, y, np.nan)
        kwargs = {"label": plain_text(label), "linewidth": 1.4}
        if cmap is not None:
            kwargs["color"] = cmap(i)
        if s.mode == "EVAL":
            kwargs["linestyle"] = "--"
        elif s.mode == "PREDICT":
            kwargs["linestyle"] = ":"
        if len(s.x) <= 40:
            kwargs.update(marker="o", markersize=3)
        ax.plot(x, y, **kwargs)
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(plain_text(x_label))
    if y_label:
        ax.set_ylabel(plain_text(y_label))
    if title:
        ax.set_title(plain_text(title), fontsize="medium")
    ax.grid(True, alpha=0.3)
    self_explained = len(series) == 1 and series[0].quantity in (title, y_label)
    if series and legend != "none" and not self_explained:
        if legend == "outside" or len(series) > 8:
            ax.legend(fontsize="x-small" if len(series) > 12 else "small", loc="upper left",
                      bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, ncol=1 if len(series) <= 24 else 2)
        else:
            ax.legend(fontsize="small", loc="best")
    elif not series:
        ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes, color="gray")
    if left_out:
        ax.text(0.01, 0.01, left_out_note(left_out), ha="left", va="bottom", transform=ax.transAxes,
                fontsize="x-small", color="gray")
    return left_out


def left_out_note(count: int) -> str:
    return f"{count} value(s) beyond \u00b1{DRAWABLE_MAX:g} left out (too large to draw)"


def _with_breaks(x, y):
    """Break the line where the steps jump (an EVAL line between epochs, a TRAIN line across an EVAL
    phase): a gap more than 5 times the usual one gets a NaN, which matplotlib does not connect."""
    import numpy as np

    if len(x) < 3:
        return x, y
    gaps = np.diff(x)
    usual = np.median(gaps)
    cut = np.nonzero(gaps > 5 * usual)[0] if usual > 0 else []
    if len(cut) == 0:
        return x, y
    return np.insert(x, cut + 1, np.nan), np.insert(y, cut + 1, np.nan)


def new_figure(width: float, height: float, dpi: int):
    """A matplotlib Figure on the Agg canvas (no pyplot, no global state)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=dpi, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def finite(values: Sequence[float]) -> List[float]:
    return [v for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
