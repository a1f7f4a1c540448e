"""Two user-written rules, written against the Rule API that smdebug 1.0.34 and this smdebug share, so the
very same code is timed on both (the original's built-in rules were never open source).

``GradientScale`` reads a stored-or-computed reduction of every gradient at every step (the access
pattern of VanishingGradient); ``InactiveUnits`` reads the full activation tensor at every step (the
pattern of DeadRelu). Both never fire on the benchmark run, so every step is evaluated.
"""

import numpy as np

from smdebug.rules.rule import Rule


class GradientScale(Rule):
    def __init__(self, base_trial):
        super().__init__(base_trial, action_str="")

    def invoke_at_step(self, step):
        for name in self.base_trial.tensor_names(collection="gradients"):
            value = self.base_trial.tensor(name).reduction_value(step, "mean", abs=True)
            if float(np.asarray(value).reshape(-1)[0]) < 1e-30:
                return True
        return False


class InactiveUnits(Rule):
    def __init__(self, base_trial):
        super().__init__(base_trial, action_str="")

    def invoke_at_step(self, step):
        for name in self.base_trial.tensor_names(regex=".*relu_output"):
            value = self.base_trial.tensor(name).value(step)
            if ((value > 0).mean(axis=0) == 0).mean() > 0.99:
                return True
        return False
