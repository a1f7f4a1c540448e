"""Divergence: the loss or the weights growing by orders of magnitude while staying finite.

ExplodingTensor finds NaN and infinity; training often goes wrong long before that (a learning rate just
above the stability limit, a sign error that maximises the loss, a too-large step that throws the weights
out): the loss or the weights grow 100-fold, 1000-fold, still finite. A healthy run changes the norm of its
weights by a small factor (initialisation to trained) and lowers its loss.
"""

from __future__ import annotations

from typing import Dict, Optional

import numpy as np

from smdebug.core.modes import ModeKeys
from smdebug.exceptions import SMDebugValueError
from smdebug.rules.generic.curves import LossCurveRule, robust_median
from smdebug.rules.generic.loss_rules import contains, mode_label, step_in_mode
from smdebug.rules.generic.selection import select_tensors, value_at
from smdebug.rules.params import as_float, as_int, as_list


class Divergence(LossCurveRule):
    """Fires when the loss, or the norm of the weights, grew by ``growth_factor`` or more since the start.

    **Loss** (see :class:`~smdebug.rules.generic.curves.LossCurveRule` for which tensors and mode): at a saved
    step, ``|median of the last window saves| >= growth_factor * |median of the first window saves|`` (both
    windows of ``window`` saves, finite, the first non-zero).

    **Weights**: the tensors of ``weight_collections`` with at least 2 dimensions (weight matrices, kernels,
    embeddings; biases and normalisation scales are 1-D and may start at 0), TRAIN-mode saves when they have
    any. At a step where weights were saved::

        growth = sqrt(sum of ||w[s]||^2) / sqrt(sum of ||w[first save of w]||^2)

    over the tensors saved at ``s`` and earlier, and the rule fires when ``growth >= growth_factor``. A norm
    that starts at 0 (all-zero initialisation) is left out (nothing to grow from).

    :param growth_factor: the smallest growth that fires (> 1). Default ``"100"`` (two orders of magnitude).
    :param window: saves in each loss window (>= 1). Default ``"10"``.
    :param weight_collections: comma-separated collections of weights; empty for none. Default ``"weights"``.
    Plus the loss selection parameters of LossNotDecreasing (``collection_names``, ``tensor_regex``,
    ``use_losses_collection``, ``mode``).
    """

    needs = "saves of a loss (2 * window) or of 2-D weights at two steps"

    def __init__(self, base_trial, growth_factor="100", window="10", weight_collections="weights",
                 collection_names=None, tensor_regex=None, use_losses_collection="True", mode=None, other_trials=None,
                 action_str=None):
        super().__init__(base_trial, collection_names, tensor_regex, use_losses_collection, mode,
                         other_trials=other_trials, action_str=action_str)
        name = self.rule_name
        self.growth_factor = as_float(name, "growth_factor", growth_factor)
        if not (self.growth_factor > 1 and np.isfinite(self.growth_factor)):
            raise SMDebugValueError(f"{name}: growth_factor must be a number > 1, got {growth_factor!r}")
        self.window = as_int(name, "window", window, minimum=1)
        self.weight_collections = as_list(name, "weight_collections", weight_collections)
        #: per weight tensor: squared norm at its first save
        self._first: Dict[str, float] = {}

    def judge(self, name, mode, curve, s):
        if len(curve) < 2 * self.window:
            return False, None
        first = robust_median(np.asarray(curve.values[:self.window]), minimum=1)
        now = robust_median(np.asarray(curve.values[-self.window:]), minimum=1)
        if first is None or now is None or first == 0:
            return False, None
        growth = abs(now) / abs(first)
        if growth >= self.growth_factor:
            return True, (f"{self.shown(name)} grew {growth:.3g}-fold: median {first:.4g} over its first "
                          f"{self.window} saves -> {now:.4g} over the {self.window} saves to {mode_label(mode)} {s} "
                          f"(growth_factor {self.growth_factor:g}), all finite")
        return True, None

    def _weights(self, step: int) -> Optional[str]:
        if not self.weight_collections:
            return None
        total_now = total_first = 0.0
        used = []
        for name in select_tensors(self.base_trial, self.weight_collections, []):
            mode = ModeKeys.TRAIN if self._saved.steps(name, ModeKeys.TRAIN) else ModeKeys.GLOBAL
            s = step_in_mode(self.base_trial, step, mode)
            if s is None or not contains(self._saved.steps(name, mode), s):
                continue
            value = value_at(self.base_trial, name, s, mode=mode)
            if value is None or value.ndim < 2 or value.dtype.kind not in "fiu":
                continue
            squared = float(np.sum(np.square(value, dtype=np.float64)))
            if not np.isfinite(squared):
                continue  # NaN/infinity: ExplodingTensor's to report
            first = self._first.setdefault(name, squared)
            if first == 0:
                continue
            total_now += squared
            total_first += first
            used.append(name)
        if not used:
            return None
        self.mark_evaluated(*used)
        growth = float(np.sqrt(total_now / total_first))
        if growth >= self.growth_factor:
            return (f"the norm of the weights ({len(used)} tensors) grew {growth:.3g}-fold since their first save, "
                    f"still finite (growth_factor {self.growth_factor:g})")
        return None

    def invoke_at_step(self, step):
        reason = self._weights(step)
        return reason or super().invoke_at_step(step)
