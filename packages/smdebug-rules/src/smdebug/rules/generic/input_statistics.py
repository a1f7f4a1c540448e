"""Per-feature statistics a model keeps of its own input, found among the saved tensors by their values.

A model may standardise raw features itself: Keras's ``Normalization`` layer (``adapt`` sets its ``mean`` and
``variance``), a ``BatchNormalization`` as the first layer (its ``moving_mean`` and ``moving_variance`` follow the
batches' statistics), PyTorch's ``BatchNorm1d`` first (its ``running_mean`` and ``running_var`` buffers), or a
PyTorch module's own buffers used in its forward (``(x - self.mu) / self.sd``). The hooks save those statistics
(Keras's with the weights, PyTorch's in ``normalization_statistics``). An input that looks
unnormalised is then no fault: the first layer that learns sees it standardised. Names differ by framework and
layer, so a pair is recognised by name only loosely (a ``mean`` and a ``var``/``variance`` of one layer) and proved
by its values: one number per input feature, which bring the input's saved batches to the scale UnnormalizedInput
tolerates."""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import numpy as np

from smdebug.core.statistic_names import MEAN, VARIANCE, statistic_kind
from smdebug.exceptions import ShapeUnavailableForStep, TensorUnavailableForStep

#: added to a variance before its square root, as the layers do (Keras's Normalization and BatchNormalization
#: use 1e-7 and 1e-3): a constant feature's variance of 0 divides nothing by zero
VARIANCE_EPSILON = 1e-3


def feature_scales(table: np.ndarray) -> np.ndarray:
    """Per feature (column) of ``table`` (rows x features), ``max(|mean|, std)``: the scale UnnormalizedInput
    judges (about 1 for a standardised feature)."""
    return np.maximum(np.abs(table.mean(axis=0)), table.std(axis=0))


def typical_row_norm(table: np.ndarray) -> float:
    """The median, over the rows of ``table`` (rows x features) that are not all zeros, of a row's Euclidean
    norm: how large a sample is as the first layer sees it (about the square root of the features' count for
    standardised features, 1 for a normalised bag of words); 0 when every row is zeros. Rows of zeros (a
    sequence's padding, empty documents) say nothing of the data's scale and are left out, and a median is
    not moved by a few outlying rows."""
    norms = np.sqrt(np.square(table).sum(axis=1))
    norms = norms[norms > 0]
    return float(np.median(norms)) if norms.size else 0.0


class InputStatistics:
    """The mean/variance pairs of a trial's saved tensors, read once (at their last save)."""

    def __init__(self, trial):
        self.trial = trial
        self._pairs: Optional[Tuple[int, List[Tuple[str, str]]]] = None
        self._values: Dict[str, Optional[np.ndarray]] = {}

    def _candidate_pairs(self) -> List[Tuple[str, str, bool]]:
        """(mean, spread, whether the spread is a variance rather than a standard deviation) of each layer or
        module that saved both."""
        names = self.trial.tensor_names()
        if self._pairs is None or self._pairs[0] != len(names):
            means: Dict[str, str] = {}
            spreads: Dict[str, Tuple[str, bool]] = {}
            for name in names:
                if name.startswith("gradient"):
                    continue
                found = statistic_kind(name)  # (the names of smdebug.core.statistic_names)
                if found is None:
                    continue
                kind, prefix = found
                if kind == MEAN:
                    means.setdefault(prefix, name)
                else:
                    spreads.setdefault(prefix, (name, kind == VARIANCE))
            self._pairs = (len(names), [(means[k], *spreads[k]) for k in sorted(means) if k in spreads])
        return self._pairs[1]

    def _last(self, name: str) -> Optional[np.ndarray]:
        if name not in self._values:
            value = None
            try:
                steps = self.trial.tensor(name).steps()
                if steps:
                    value = np.asarray(self.trial.tensor(name).value(steps[-1]), dtype=np.float64)
            except (TensorUnavailableForStep, ShapeUnavailableForStep, TypeError, ValueError):
                value = None  # (a statistic saved as reductions only, or not as numbers, proves nothing)
            self._values[name] = value
        return self._values[name]

    def standardising(self, table: np.ndarray, threshold: float, floor: float = 0.0) -> Optional[str]:
        """The saved statistics that standardise ``table`` (rows x features) inside the model, named for the
        log, or None: a mean and a variance with one value per feature of the table that bring every feature
        to a scale (``max(|mean|, std)`` of ``(x - mean) / sqrt(variance)``) of at most ``threshold``, the scale
        UnnormalizedInput tolerates, and its rows to a typical norm (:func:`typical_row_norm`) of at least
        ``floor``. Statistics that lag (moving ones still on their way from their initial 0 and
        1) pass as long as what the first layer that learns sees is at that scale."""
        features = table.shape[-1]
        for mean_name, variance_name, is_variance in self._candidate_pairs():
            m, v = self._last(mean_name), self._last(variance_name)
            if m is None or v is None or m.shape != (features,) or v.shape != (features,):
                continue
            if not (np.all(np.isfinite(m)) and np.all(np.isfinite(v)) and np.all(v >= 0)):
                continue
            with np.errstate(all="ignore"):
                spread = np.sqrt(v + VARIANCE_EPSILON) if is_variance else v
                z = (table - m) / spread
            scale = feature_scales(z)
            if np.all(np.isfinite(scale)) and scale.max() <= threshold and not typical_row_norm(z) < floor:
                return f"{mean_name} and {variance_name}"
        return None
