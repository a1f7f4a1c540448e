from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import numpy as np

from smdebug.exceptions import SMDebugValueError
from smdebug.rules.generic.selection import ndim_at, reduction_at, scalar, select_tensors, value_at
from smdebug.rules.params import as_float, as_int, in_range
from smdebug.rules.rule import Rule

GRADIENTS = "gradients"


class VanishingGradient(Rule):
    """Fires when the gradients of a layer's weights (tensors of the ``gradients`` collection with at least 2
    dimensions: matrices, kernels, embeddings) vanish, by either of two tests at a step:

    (a) **absolute** (the original's): the mean absolute value of a weight gradient is below ``threshold``
        (default 1e-7); a gradient of exactly zero must be zero at ``patience`` consecutive steps where
        gradients were saved. Uses a stored ``abs mean`` reduction when only reductions were saved (the shape is
        then read from the index; a tensor whose shape is unknown is judged).
    (b) **relative** (AUTOTRAINER, Zhang et al., ICSE'21: the gradient norm of the first layer below 1e-3 of
        the last layer's, and below 1e-4 itself): with ``g_min`` and ``g_max`` the smallest and largest L2
        norm of the weight gradients saved at the step (at least two of them)::

            g_min / g_max < ratio_threshold   and   g_min < norm_threshold

        at ``patience`` consecutive steps where gradients were saved. Depth, not scale, is what makes a
        gradient vanish -- the signal shrinks through every saturated or badly scaled layer on its way back --
        so a healthy network's layers keep gradients within an order or two of each other while a vanishing
        one's first layers get a ten-thousandth of the last one's, whatever the loss's scale (the absolute
        test misses a deep tanh network at PyTorch's default initialisation, whose first layers' mean
        gradient is ~1e-6). The layers are compared by norm, not in model order (the run does not record
        it).

    ``patience`` keeps the first step of a network with a layer that starts at zero from firing: the weights
    behind it get a gradient of exactly zero (not a small one) until it has moved once (residual branches
    whose last normalisation scale starts at zero, a zero-initialised classifier head).

    Gradients of 1-D tensors (biases, normalisation scales and shifts) are not judged: a bias followed by
    BatchNorm gets a gradient of (almost) exactly zero by construction (the normalisation removes any
    constant shift), which is not a vanishing gradient. Gradients the run did not save (a frozen layer has
    none) take no part.

    :param threshold: the absolute test's mean |gradient| (default 1e-7).
    :param ratio_threshold: the relative test's ``g_min / g_max`` (default 1e-3; 0 turns the test off).
    :param norm_threshold: the relative test's ``g_min`` (default 1e-4).
    :param patience: consecutive steps with gradients at which the relative test, or a gradient of exactly zero,
        must hold (>= 1; default 3).
    """

    def __init__(self, base_trial, threshold="0.0000001", ratio_threshold="0.001", norm_threshold="0.0001",
                 patience="3", other_trials=None, action_str=None):
        super().__init__(base_trial, other_trials=other_trials, action_str=action_str)
        name = self.rule_name
        # (magnitudes: a negative threshold could never be met)
        self.threshold = in_range(name, "threshold", as_float(name, "threshold", threshold), 0)
        self.ratio_threshold = as_float(name, "ratio_threshold", ratio_threshold)
        self.norm_threshold = in_range(name, "norm_threshold", as_float(name, "norm_threshold", norm_threshold), 0)
        if not (0 <= self.ratio_threshold < 1):
            raise SMDebugValueError(f"{name}: ratio_threshold must be in [0, 1), got {ratio_threshold!r}")
        self.patience = as_int(name, "patience", patience, minimum=1)
        #: the relative test at the steps where gradients were saved, in order: (step, met, reason)
        self._relative: List[Tuple[int, bool, Optional[str]]] = []
        #: the absolute test at the steps where gradients were saved, in order: (step, {weight: reason})
        self._absolute: List[Tuple[int, Dict[str, str]]] = []

    def invoke_at_step(self, step):
        norms: Dict[str, float] = {}
        below: Dict[str, str] = {}
        judged = False  # whether the step saved a weight gradient
        shrunk: Optional[str] = None
        for name in select_tensors(self.base_trial, [GRADIENTS], []):
            value = value_at(self.base_trial, name, step)
            if value is not None:  # the value: both statistics from one read
                if value.ndim in (0, 1) or not value.size:
                    continue
                magnitudes = np.abs(np.asarray(value, dtype=np.float64))
                mean_abs, norm = float(magnitudes.mean()), float(np.sqrt(np.sum(magnitudes ** 2)))
            else:  # only reductions saved: the stored ones
                stored = reduction_at(self.base_trial, name, step, "mean", abs=True)
                if stored is None:  # not saved at this step
                    continue
                if ndim_at(self.base_trial, name, step) in (0, 1):
                    continue
                mean_abs = scalar(stored)
                l2 = reduction_at(self.base_trial, name, step, "l2")
                norm = None if l2 is None else scalar(l2)
            judged = True
            if mean_abs < self.threshold:
                reason = f"{name}: mean |gradient| {mean_abs:.3g} < threshold {self.threshold:g}"
                if mean_abs > 0:  # a gradient that shrank: it vanishes now
                    shrunk = shrunk or reason
                else:
                    below[name] = reason  # exactly zero: judged over patience steps (below)
            if self.ratio_threshold > 0 and norm is not None:
                norms[name] = norm
        relative = self._relative_test(step, norms)  # (both tests keep their history at every step)
        absolute = self._absolute_test(step, below) if judged else False
        return shrunk or absolute or relative

    def _absolute_test(self, step: int, below: Dict[str, str]):
        """The absolute test on gradients of exactly zero (``below``: weight -> reason) holds when one weight's
        gradient was zero at each of the last ``patience`` steps with gradients: the weights behind a layer that
        starts at zero (a zero-initialised classifier head, the last normalisation scale of a residual branch)
        get a gradient of exactly zero at the first step only, and learn normally from the next."""
        if self._absolute and self._absolute[-1][0] >= step:  # evaluated again from an earlier step
            self._absolute = [a for a in self._absolute if a[0] < step]
        self._absolute.append((step, below))
        recent = self._absolute[-self.patience:]
        if len(recent) < self.patience:
            return False
        lasting = set(below).intersection(*(b for _, b in recent))
        if not lasting:
            return False
        name = min(lasting)
        steps = ", ".join(str(s) for s, _ in recent)
        return below[name] + (f"; at {self.patience} steps with gradients ({steps})" if self.patience > 1 else "")

    def _relative_test(self, step: int, norms: dict):
        if len(norms) < 2:
            return False
        low = min(norms, key=norms.get)
        high = max(norms, key=norms.get)
        ratio = norms[low] / norms[high] if norms[high] > 0 else 1.0
        met = ratio < self.ratio_threshold and norms[low] < self.norm_threshold
        reason = (f"{low}: gradient norm {norms[low]:.3g} is {ratio:.3g} of the largest ({high}: {norms[high]:.3g}); "
                  f"ratio_threshold {self.ratio_threshold:g}, norm_threshold {self.norm_threshold:g}")
        if self._relative and self._relative[-1][0] >= step:  # evaluated again from an earlier step
            self._relative = [r for r in self._relative if r[0] < step]
        self._relative.append((step, met, reason))
        recent = self._relative[-self.patience:]
        if len(recent) == self.patience and all(m for _, m, _ in recent):
            steps = ", ".join(str(s) for s, _, _ in recent)
            return reason + (f"; at {self.patience} steps with gradients ({steps})" if self.patience > 1 else "")
        return False
