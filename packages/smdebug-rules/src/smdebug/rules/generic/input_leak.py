"""A feature column that is the label: LabelLeak's test of a deep-learning model's saved inputs.

A boosted model shows a leaked column through its first trees (:mod:`~smdebug.rules.generic.label_leak`); a
network shows nothing comparable, but its hook saves the batch it was given and the targets of its loss at the same
steps (``Hook.recommended``: the ``inputs`` and ``labels`` collections, row for row). In a table of features
(a 2-D floating-point input), a column computed from the target stands out from every real feature:

* a regression: the column orders the rows as the target does, or follows it linearly, almost exactly (Spearman's
  or Pearson's correlation, in absolute value, at least ``REGRESSION_CORRELATION``: a target copied with noise of
  up to about 4% of its spread). On the rule-accuracy benchmark's runs (diabetes, Friedman's, house prices, counts,
  heteroscedastic and survival targets) no column reaches 0.65; the target plus 1% noise appended as a column
  (probe 16b F6) reaches 0.9999;
* classes: the column takes values in separate bands, one per class, each band narrow against the distance
  between them: the 1st-99th percentile ranges of the classes do not overlap, and the widest is at most
  ``BAND_SHARE`` of the smallest distance between two classes' medians (a class id or a one-hot label column,
  exact or with a little noise). A real feature that separates classes (breast cancer's concave points, blobs far
  apart) spreads within each class over much of the distance between them: a point cloud of standard deviation
  s has a 1st-99th percentile range of 4.7 s, so its centres would have to be 47 s apart.

A regression's column that follows the target no more closely than another input column follows it is one of a
window of a slowly changing series whose next value is the target (a forecast), not a leak (see
:func:`_one_of_a_series`).

Only 2-D floating-point inputs are looked at: images, token ids and sequences have no columns that are features
(a token id at a position can rightly decide a label). Classes need ``MIN_CLASS_ROWS`` saved rows each, at least
two of them (a few rows fall into bands by luck); a regression needs ``MIN_REGRESSION_ROWS``.
"""

from __future__ import annotations

from typing import List, NamedTuple, Optional

import numpy as np

from smdebug.rules.generic.ranks import rank_correlation
from smdebug.rules.generic.selection import MAX_CLASS_ID

REGRESSION_CORRELATION = 0.999
BAND_SHARE = 0.1
MIN_CLASS_ROWS = 20
MIN_REGRESSION_ROWS = 40
#: classes above this many are no classes (a column of ids, or of counts)
MAX_CLASSES = 50


class Leak(NamedTuple):
    column: int
    said: str  # what the column does, for the finding


def feature_table(inputs: np.ndarray) -> Optional[np.ndarray]:
    """``inputs`` as rows of features when they are a 2-D floating-point table of finite values, else None."""
    x = np.asarray(inputs)
    if x.ndim != 2 or x.dtype.kind != "f" or x.shape[1] < 1 or not np.all(np.isfinite(x)):
        return None
    return x.astype(np.float64)


def target_column(labels: np.ndarray, rows: int) -> Optional[np.ndarray]:
    """``labels`` as one value per row (``(rows,)`` or ``(rows, 1)``) of finite numbers, else None."""
    y = np.asarray(labels)
    if y.shape[:1] != (rows,) or y.size != rows or y.dtype.kind not in "fiub":
        return None
    y = y.reshape(-1).astype(np.float64)
    return y if np.all(np.isfinite(y)) else None


def are_classes(y: np.ndarray) -> bool:
    """Whether the targets are class ids: non-negative whole numbers, at most :data:`MAX_CLASSES` of them."""
    return bool(np.all(y == np.round(y)) and y.min() >= 0 and y.max() <= MAX_CLASS_ID
                and len(np.unique(y)) <= MAX_CLASSES)


def enough(y: np.ndarray, classes: Optional[bool] = None) -> bool:
    """Whether ``y`` has rows enough to be judged (see the module's docstring); ``classes``: :func:`are_classes`
    of ``y`` when the caller has it."""
    if are_classes(y) if classes is None else classes:
        return int(np.sum(np.bincount(y.astype(np.int64)) >= MIN_CLASS_ROWS)) >= 2
    return y.size >= MIN_REGRESSION_ROWS


def leaked_column(x: np.ndarray, y: np.ndarray, classes: Optional[bool] = None) -> Optional[Leak]:
    """The first column of ``x`` that is the label ``y`` (see the module's docstring), or None; ``classes`` as for
    :func:`enough`."""
    classes = are_classes(y) if classes is None else classes
    if not enough(y, classes):
        return None
    judge = _class_bands if classes else _follows_target
    for column in range(x.shape[1]):
        values = x[:, column]
        if np.ptp(values) == 0:
            continue
        said = judge(values, y)
        if said and not classes and _one_of_a_series(x, column, y):
            continue
        if said:
            return Leak(column, said)
    return None


def _one_of_a_series(x: np.ndarray, column: int, y: np.ndarray) -> bool:
    """Whether the target is no nearer to ``column`` than another input column is: a window of a slowly changing
    series (a forecast's last values, each nearly the next) whose target is the series' next value, so that every
    column follows the target as closely as its neighbours follow each other (probe 19a: a random walk's next value
    read as a leak, correlation 0.9992). A column computed from the target is nearer to it than to any real
    feature; two noisy copies of the target are twice as far from each other as from it. "Near" is one minus the
    absolute correlation (:func:`_closeness`), and another column counts when it is at most 1.5 times as far from
    ``column``."""
    values = x[:, column]
    to_target = 1 - _closeness(values, y)
    for other in range(x.shape[1]):
        if other == column or np.ptp(x[:, other]) == 0:
            continue
        if 1 - _closeness(values, x[:, other]) <= 1.5 * to_target:
            return True
    return False


def _closeness(a: np.ndarray, b: np.ndarray) -> float:
    """The larger of the absolute Pearson and Spearman correlations of ``a`` and ``b`` (as _follows_target)."""
    return max(abs(float(np.corrcoef(a, b)[0, 1])), abs(rank_correlation(a, b) or 0.0))


def _follows_target(values: np.ndarray, y: np.ndarray) -> Optional[str]:
    if np.ptp(y) == 0:
        return None
    pearson = float(np.corrcoef(values, y)[0, 1])
    spearman = rank_correlation(values, y)
    best = max(abs(pearson), abs(spearman or 0.0))
    if best < REGRESSION_CORRELATION:
        return None
    return (f"follows the target across {y.size} saved rows (correlation {pearson:+.4f}, rank correlation "
            f"{spearman:+.4f})")


def _class_bands(values: np.ndarray, y: np.ndarray) -> Optional[str]:
    classes = y.astype(np.int64)
    judged: List[int] = [int(c) for c in np.flatnonzero(np.bincount(classes) >= MIN_CLASS_ROWS)]
    bands = []  # (median, low, high, class)
    for c in judged:
        v = values[classes == c]
        low, median, high = np.percentile(v, [1, 50, 99])
        bands.append((float(median), float(low), float(high), c))
    bands.sort()
    gaps = [b[0] - a[0] for a, b in zip(bands, bands[1:])]
    if min(gaps) <= 0 or any(a[2] >= b[1] for a, b in zip(bands, bands[1:])):
        return None  # (two classes' bands overlap)
    widest = max(high - low for _, low, high, _ in bands)
    if widest > BAND_SHARE * min(gaps):
        return None
    rows = int(sum(np.sum(classes == c) for c in judged))
    return (f"takes one narrow band of values per class over {rows} saved rows of {len(judged)} classes (widest "
            f"band {widest:.3g}, classes' medians at least {min(gaps):.3g} apart: "
            + ", ".join(f"class {c} ~{m:.3g}" for m, _, _, c in bands[:6]) + (", ..." if len(bands) > 6 else "")
            + ")")


#: rows kept per (input, labels) pair: enough for any of the tests, and a bound on the memory a long run costs
MAX_ROWS = 20_000
#: columns above this many are no table of features (a flattened image or embedding)
MAX_COLUMNS = 2_000


class SavedRows:
    """The rows of one input tensor and one labels tensor saved at the same steps, gathered step by step (up to
    :data:`MAX_ROWS`), and judged each time they have doubled since the last judgement (or once more, at the
    run's last step): a test of every column is not repeated at every step of a long run."""

    def __init__(self, input_name: str, labels_name: str):
        self.input_name, self.labels_name = input_name, labels_name
        self._x: List[np.ndarray] = []
        self._y: List[np.ndarray] = []
        self.rows = 0
        self._judged_at = 0  # rows at the last judgement
        #: why the pair is no table of features with its targets (None: it is, or not read yet)
        self.not_a_table: Optional[str] = None

    def add(self, inputs, labels) -> None:
        if self.rows >= MAX_ROWS or inputs is None or labels is None:
            return
        x = feature_table(inputs)
        if x is None or x.shape[1] > MAX_COLUMNS:
            shape = np.shape(inputs)
            self.not_a_table = (f"{self.input_name} (shape {tuple(shape)}, {np.asarray(inputs).dtype}) is no table of "
                                "features")
            return
        y = target_column(labels, x.shape[0])
        if y is None:
            self.not_a_table = (f"{self.labels_name} (shape {tuple(np.shape(labels))}) is not one target per row of "
                                f"{self.input_name}")
            return
        self.not_a_table = None
        self._x.append(x)
        self._y.append(y)
        self.rows += x.shape[0]

    def due(self, last: bool) -> bool:
        """Whether the rows are judged now: twice as many as at the last judgement, or the run's last step."""
        return self.rows > 0 and (self.rows >= 2 * self._judged_at or (last and self.rows > self._judged_at))

    def judge(self) -> "tuple[bool, Optional[Leak]]":
        """(whether there were rows enough to judge, the leak found)."""
        self._judged_at = self.rows
        x, y = np.concatenate(self._x)[:MAX_ROWS], np.concatenate(self._y)[:MAX_ROWS]
        self._x, self._y = [x], [y]
        classes = are_classes(y)
        if not enough(y, classes):
            return False, None
        return True, leaked_column(x, y, classes)

    def needs(self) -> str:
        """What the rows lack to be judged."""
        y = np.concatenate(self._y) if self._y else np.zeros(0)
        if y.size and are_classes(y):
            counts = np.bincount(y.astype(np.int64))
            return (f"{self.rows} rows of {self.input_name} with {self.labels_name} saved: two classes need "
                    f"{MIN_CLASS_ROWS} rows each (class counts {', '.join(str(int(c)) for c in counts[:10])})")
        return f"{self.rows} rows of {self.input_name} with {self.labels_name} saved, {MIN_REGRESSION_ROWS} needed"
