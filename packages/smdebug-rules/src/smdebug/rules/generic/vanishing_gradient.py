from __future__ import annotations

from smdebug.rules.generic.selection import ndim_at, reduction_at, scalar, select_tensors
from smdebug.rules.params import as_float
from smdebug.rules.rule import Rule

GRADIENTS = "gradients"


class VanishingGradient(Rule):
    """Fires when the mean absolute value of the gradient of a layer's weights (a tensor of the
    ``gradients`` collection with at least 2 dimensions: matrices, kernels, embeddings) at a step is below
    ``threshold`` (default 1e-7). Uses a stored ``abs mean`` reduction when only reductions were saved (the
    shape is then read from the index; a tensor whose shape is unknown is judged).

    Gradients of 1-D tensors (biases, normalisation scales and shifts) are not judged: a bias followed by
    BatchNorm gets a gradient of (almost) exactly zero by construction (the normalisation removes any
    constant shift), which is not a vanishing gradient."""

    def __init__(self, base_trial, threshold="0.0000001", other_trials=None, action_str=None):
        super().__init__(base_trial, other_trials=other_trials, action_str=action_str)
        self.threshold = as_float(self.rule_name, "threshold", threshold)

    def invoke_at_step(self, step):
        for name in select_tensors(self.base_trial, [GRADIENTS], []):
            value = reduction_at(self.base_trial, name, step, "mean", abs=True)
            if value is None:  # not saved at this step
                continue
            if ndim_at(self.base_trial, name, step) in (0, 1):
                continue
            mean_abs = scalar(value)
            if mean_abs < self.threshold:
                return f"{name}: mean |gradient| {mean_abs:.3g} < threshold {self.threshold:g}"
        return False
