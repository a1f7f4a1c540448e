"""The run's values as plot-ready lines: one per (tensor, mode, worker), read in bulk, downsampled for
the page with the extremes and the non-finite values kept.

Every saved step is read (the trial's bulk table, :mod:`smdebug.trials.table`), so a spike between two
plotted points is never lost: a long line is cut into buckets and each bucket keeps its smallest and
largest value, at their real steps. NaN and infinite values cannot be drawn as points of a line: the
line has a gap there, and :func:`non_finite_runs` lists them (one entry per stretch of consecutive
steps) for the chart to mark.

:class:`LineReader` remembers what it read, so following a live run reads only the new steps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

_MODE_ORDER = {"TRAIN": 0, "EVAL": 1, "PREDICT": 2, "GLOBAL": 3}


@dataclass
class Line:
    tensor: str
    quantity: str  # what is drawn: the tensor's name, or "l2(name)" for a norm
    mode: str
    worker: str
    steps: np.ndarray  # global steps, int64
    mode_steps: np.ndarray
    values: np.ndarray  # float64, may hold NaN/inf
    run: str = ""  # the run's label when a page compares runs

    def value_at(self, step: int) -> Optional[Tuple[int, float]]:
        """(step, value) of the saved step nearest to ``step`` (None: empty line)."""
        if not len(self.steps):
            return None
        i = int(np.searchsorted(self.steps, step))
        cands = [j for j in (i - 1, i) if 0 <= j < len(self.steps)]
        j = min(cands, key=lambda k: abs(int(self.steps[k]) - step))
        return int(self.steps[j]), float(self.values[j])


@dataclass
class _Acc:
    steps: List[int] = field(default_factory=list)
    mode_steps: List[int] = field(default_factory=list)
    values: List[float] = field(default_factory=list)


def mode_order(mode: str) -> int:
    return _MODE_ORDER.get(mode, 4)


class LineReader:
    """Reads lines of one trial, keeping what it read so a later call reads only newer steps.

    ``kind``: "value" (one-element tensors drawn as they are; a larger one as its l2 norm) or a
    reduction ("l2"): stored by the hook where it saved one, else computed from the saved value.
    """

    def __init__(self, trial):
        self.trial = trial
        self._data: Dict[Tuple[str, str], Dict[Tuple[str, str], _Acc]] = {}  # (kind, name) -> (mode, worker) -> acc
        self._read_upto: Dict[Tuple[str, str], int] = {}  # (kind, name) -> last global step read
        self._kind_of: Dict[str, str] = {}  # "value" tensors found to be arrays: read as l2
        #: tensors whose values are no numbers (strings, bytes): nothing to draw, never read again
        self._not_numbers: Set[str] = set()

    def lines(self, names: Sequence[str], kind: str = "value", modes=None) -> Dict[str, List[Line]]:
        self._update(names, kind)
        out = {}
        for n in names:
            k = self._kind_of.get(n, kind) if kind == "value" else kind
            accs = self._data.get((k, n), {})
            quantity = n if k == "value" else f"{k}({n})"
            found = []
            for (mode, worker), acc in sorted(accs.items(), key=lambda kv: (mode_order(kv[0][0]), kv[0][1])):
                if modes is not None and mode not in modes:
                    continue
                found.append(Line(n, quantity, mode, worker, np.asarray(acc.steps, np.int64),
                                  np.asarray(acc.mode_steps, np.int64), np.asarray(acc.values, np.float64)))
            out[n] = found
        return out

    def _update(self, names: Sequence[str], kind: str) -> None:
        from smdebug.trials.table import long_table

        steps = self.trial.steps()
        if not steps or not names:
            return
        # the names already read up to some step get only the newer steps; new names get everything
        by_start: Dict[int, List[str]] = {}
        for n in names:
            if n in self._not_numbers:
                continue
            k = self._kind_of.get(n, kind) if kind == "value" else kind
            by_start.setdefault(self._read_upto.get((k, n), -1), []).append(n)
        for start, group in by_start.items():
            new_steps = [s for s in steps if s > start] if start >= 0 else None
            if new_steps == []:
                continue
            reductions = None if kind == "value" else [kind]
            table = long_table(self.trial, tensors=group, steps=new_steps, reductions=reductions)
            column = table["value"] if kind == "value" else table[kind]
            arrays = set()
            for t, g, m, ms, w, v in zip(table["tensor"], table["step"], table["mode"], table["mode_step"],
                                         table["worker"], column):
                if t in self._not_numbers:
                    continue
                k = self._kind_of.get(t, kind) if kind == "value" else kind
                if kind == "value" and not isinstance(v, (float, int)):
                    if np.asarray(v).dtype.kind not in "biufc":  # (checked before its size: no l2 either)
                        self._not_numbers.add(t)
                        self._data.pop((k, t), None)
                        continue
                    if np.asarray(v).size != 1:
                        arrays.add(t)
                        continue
                    v = np.asarray(v).reshape(-1)[0]
                    v = abs(v) if np.iscomplexobj(v) else v
                acc = self._data.setdefault((k, t), {}).setdefault((m, w), _Acc())
                acc.steps.append(int(g))
                acc.mode_steps.append(int(ms))
                acc.values.append(float(v))
            last = steps[-1]
            for n in group:
                k = self._kind_of.get(n, kind) if kind == "value" else kind
                self._read_upto[(k, n)] = last
            if arrays:  # tensors that are not single values: drawn as their l2 norm
                for n in arrays:
                    self._kind_of[n] = "l2"
                    self._data.pop(("value", n), None)
                    self._read_upto.pop(("value", n), None)
                self._update(sorted(arrays), "l2")


def merge_workers_first(lines: List[Line]) -> List[Line]:
    """One line per mode: at each step the value of the first worker (by name) that saved it."""
    out = []
    for mode in sorted({ln.mode for ln in lines}, key=mode_order):
        group = sorted((ln for ln in lines if ln.mode == mode), key=lambda ln: ln.worker)
        if len(group) == 1:
            out.append(group[0])
            continue
        seen: Dict[int, Tuple[int, float]] = {}
        for ln in group:
            for g, ms, v in zip(ln.steps.tolist(), ln.mode_steps.tolist(), ln.values.tolist()):
                seen.setdefault(g, (ms, v))
        order = sorted(seen)
        out.append(Line(group[0].tensor, group[0].quantity, mode, group[0].worker,
                        np.asarray(order, np.int64), np.asarray([seen[g][0] for g in order], np.int64),
                        np.asarray([seen[g][1] for g in order], np.float64), group[0].run))
    return out


# --------------------------------------------------------------------------------------------------
# downsampling
# --------------------------------------------------------------------------------------------------
def keep_indices(values: np.ndarray, max_points: Optional[int]) -> np.ndarray:
    """Indices of the points to draw: all when they fit, else the first and the last, the smallest and
    the largest finite value of each of about max_points/2 buckets, and both ends of every stretch of
    non-finite values (so the gap in the line stays where it is)."""
    n = len(values)
    if not max_points or n <= max_points:
        return np.arange(n)
    finite = np.isfinite(values)
    buckets = max(1, (max_points - 2) // 2)
    size = -(-n // buckets)  # ceil
    padded = np.full(buckets * size, np.nan)
    padded[:n] = np.where(finite, values, np.nan)
    grid = padded.reshape(buckets, size)
    ok = np.isfinite(grid)
    lo = np.where(ok, grid, np.inf).argmin(axis=1)
    hi = np.where(ok, grid, -np.inf).argmax(axis=1)
    base = np.arange(buckets) * size
    has = ok.any(axis=1)
    picks = [base[has] + lo[has], base[has] + hi[has], np.array([0, n - 1])]
    if not finite.all():
        edges = np.flatnonzero(np.diff(np.concatenate(([1], finite.astype(np.int8), [1]))))
        # edges alternate: start of a non-finite stretch, one past its end
        starts, ends = edges[0::2], edges[1::2] - 1
        picks += [starts, ends]
    idx = np.unique(np.concatenate(picks))
    return idx[idx < n]


def breaks(steps: np.ndarray) -> np.ndarray:
    """Indices i after which a line should break: the step jumps by more than 5 times its usual stride
    (a TRAIN line across an EVAL phase, an EVAL line between epochs)."""
    if len(steps) < 3:
        return np.empty(0, dtype=np.int64)
    gaps = np.diff(steps)
    usual = float(np.median(gaps))
    return np.flatnonzero(gaps > 5 * max(usual, 1.0))


def plot_points(line: Line, max_points: Optional[int]):
    """(steps, mode steps, values) to draw: downsampled (:func:`keep_indices`) with a NaN point inserted
    at every break (:func:`breaks`), which the chart does not connect."""
    cuts = breaks(line.steps)
    idx = keep_indices(line.values, max_points)
    if len(cuts):
        idx = np.unique(np.concatenate([idx, cuts, cuts + 1]))
    steps, ms, vals = line.steps[idx], line.mode_steps[idx], line.values[idx]
    if not len(cuts):
        return steps, ms, vals
    at = np.searchsorted(idx, cuts) + 1  # insert before the point after each cut
    mid = (line.steps[cuts] + line.steps[cuts + 1]) // 2
    return (np.insert(steps, at, mid), np.insert(ms, at, line.mode_steps[cuts]),
            np.insert(vals.astype(np.float64), at, np.nan))


def non_finite_runs(line: Line) -> List[dict]:
    """Stretches of consecutive non-finite values of the same kind: step, last step, mode steps, kind,
    count, and the finite value before it (where the chart places the mark)."""
    v = line.values
    bad = ~np.isfinite(v)
    if not bad.any():
        return []
    kinds = np.where(np.isnan(v), 0, np.where(v > 0, 1, -1))
    out = []
    i = 0
    idx = np.flatnonzero(bad)
    while i < len(idx):
        start = idx[i]
        j = i
        while j + 1 < len(idx) and idx[j + 1] == idx[j] + 1 and kinds[idx[j + 1]] == kinds[start]:
            j += 1
        end = idx[j]
        prev = v[:start][np.isfinite(v[:start])]
        out.append({
            "step": int(line.steps[start]), "last_step": int(line.steps[end]),
            "mode_step": int(line.mode_steps[start]), "count": int(end - start + 1),
            "kind": ("nan", "inf", "-inf")[int(kinds[start]) if kinds[start] >= 0 else 2],
            "anchor": float(prev[-1]) if len(prev) else None,
        })
        i = j + 1
    return out


#: lines one chart draws at most: a run of 2,000 workers drew 2,000 lines per chart (224 s, 718 MB for
#: the page, which no one could read); beyond this the chart keeps the lines that reach furthest
MAX_LINES_PER_CHART = 32


def limit_lines(lines: List[Line], limit: int = MAX_LINES_PER_CHART) -> Tuple[List[Line], str]:
    """At most ``limit`` of ``lines`` (in their order) and a note saying what was left out ('' if none):
    the lines with the highest maxima and those with the lowest minima, alternately, so the spread of the
    series stays in view and an outlier is never the one dropped."""
    if len(lines) <= limit:
        return lines, ""
    def extreme(ln: Line, pick) -> float:
        finite = ln.values[np.isfinite(ln.values)] if len(ln.values) else ln.values
        return float(pick(finite)) if len(finite) else float("nan")
    highs = sorted(range(len(lines)), key=lambda i: -np.nan_to_num(extreme(lines[i], np.max), nan=-np.inf))
    lows = sorted(range(len(lines)), key=lambda i: np.nan_to_num(extreme(lines[i], np.min), nan=np.inf))
    kept: Dict[int, None] = {}
    for hi, lo in zip(highs, lows):
        for i in (hi, lo):
            if len(kept) < limit:
                kept.setdefault(i, None)
        if len(kept) >= limit:
            break
    chosen = [lines[i] for i in sorted(kept)]
    return chosen, (f"{len(lines) - len(chosen)} of {len(lines)} series not drawn: the {len(chosen)} with the "
                    "highest maxima and the lowest minima are")
