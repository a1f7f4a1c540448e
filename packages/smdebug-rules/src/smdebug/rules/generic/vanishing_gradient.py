from __future__ import annotations

from smdebug.rules.generic.selection import reduction_at, scalar, select_tensors
from smdebug.rules.params import as_float
from smdebug.rules.rule import Rule

GRADIENTS = "gradients"


class VanishingGradient(Rule):
    """Fires when the mean absolute value of any gradient (collection ``gradients``) at a step is below
    ``threshold`` (default 1e-7). Uses a stored ``abs mean`` reduction when only reductions were saved."""

    def __init__(self, base_trial, threshold="0.0000001", other_trials=None, action_str=None):
        super().__init__(base_trial, other_trials=other_trials, action_str=action_str)
        self.threshold = as_float(self.rule_name, "threshold", threshold)

    def invoke_at_step(self, step):
        for name in select_tensors(self.base_trial, [GRADIENTS], []):
            value = reduction_at(self.base_trial, name, step, "mean", abs=True)
            if value is None:  # not saved at this step
                continue
            mean_abs = scalar(value)
            if mean_abs < self.threshold:
                return f"{name}: mean |gradient| {mean_abs:.3g} < threshold {self.threshold:g}"
        return False
