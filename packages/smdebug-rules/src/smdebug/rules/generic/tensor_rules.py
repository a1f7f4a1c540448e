"""Rules over any tensors chosen by ``collection_names`` and/or ``tensor_regex``."""

from __future__ import annotations

import numpy as np

from smdebug.exceptions import SMDebugValueError
from smdebug.rules.generic.selection import scalar, select_tensors, value_at
from smdebug.rules.params import as_bool, as_float, as_int, as_list
from smdebug.rules.rule import Rule


class _TensorRule(Rule):
    requires_selection = False

    def __init__(self, base_trial, collection_names=None, tensor_regex=None, other_trials=None, action_str=None):
        super().__init__(base_trial, other_trials=other_trials, action_str=action_str)
        self.collection_names = as_list(self.rule_name, "collection_names", collection_names)
        self.tensor_regex = as_list(self.rule_name, "tensor_regex", tensor_regex)
        if self.requires_selection and not (self.collection_names or self.tensor_regex):
            raise SMDebugValueError(f"{self.rule_name}: give collection_names or tensor_regex")

    def tensors(self):
        if not (self.collection_names or self.tensor_regex):
            return self.base_trial.tensor_names()
        return select_tensors(self.base_trial, self.collection_names, self.tensor_regex)

    def values(self, step):
        for name in self.tensors():
            value = value_at(self.base_trial, name, step)
            if value is not None and value.dtype.kind in "fciub":
                yield name, value


class ExplodingTensor(_TensorRule):
    """Fires when an inspected tensor holds NaN, or +-inf unless ``only_nan``."""

    def __init__(self, base_trial, collection_names=None, tensor_regex=None, only_nan="False", other_trials=None,
                 action_str=None):
        super().__init__(base_trial, collection_names, tensor_regex, other_trials, action_str)
        self.only_nan = as_bool(self.rule_name, "only_nan", only_nan)

    def invoke_at_step(self, step):
        for name, value in self.values(step):
            nans = int(np.isnan(value).sum())
            infs = 0 if self.only_nan else int(np.isinf(value).sum())
            if nans or infs:
                return f"{name} has {nans} NaN and {infs} infinite values out of {value.size}"
        return False


class AllZero(_TensorRule):
    """Fires when at least ``threshold`` percent (default 100) of an inspected tensor's values are zero."""

    requires_selection = True

    def __init__(self, base_trial, collection_names=None, tensor_regex=None, threshold="100", other_trials=None,
                 action_str=None):
        super().__init__(base_trial, collection_names, tensor_regex, other_trials, action_str)
        self.threshold = as_float(self.rule_name, "threshold", threshold)

    def invoke_at_step(self, step):
        for name, value in self.values(step):
            zero_percent = (value == 0).mean() * 100 if value.size else 0.0
            if value.size and zero_percent >= self.threshold:
                return f"{name} is {zero_percent:.4g}% zeros (threshold {self.threshold:g}%)"
        return False


class UnchangedTensor(_TensorRule):
    """Fires when an inspected tensor has not changed over its last ``num_steps`` saved steps (the current
    one included), compared with ``numpy.allclose(rtol, atol, equal_nan)``."""

    def __init__(self, base_trial, collection_names=None, tensor_regex=None, num_steps="3", rtol="1e-05",
                 atol="1e-08", equal_nan="False", other_trials=None, action_str=None):
        super().__init__(base_trial, collection_names, tensor_regex, other_trials, action_str)
        self.num_steps = as_int(self.rule_name, "num_steps", num_steps, minimum=2)
        self.rtol = as_float(self.rule_name, "rtol", rtol)
        self.atol = as_float(self.rule_name, "atol", atol)
        self.equal_nan = as_bool(self.rule_name, "equal_nan", equal_nan)
        # the values read at recent steps, per tensor: consecutive evaluations share num_steps - 1 of them
        self._recent = {}

    def _value(self, tensor, step):
        recent = self._recent.setdefault(tensor.name, {})
        if step not in recent:
            if len(recent) >= 2 * self.num_steps:
                for old in sorted(recent)[: self.num_steps]:
                    del recent[old]
            recent[step] = tensor.value(step)
        return recent[step]

    def invoke_at_step(self, step):
        for name in self.tensors():
            tensor = self.base_trial.tensor(name)
            steps = tensor.prev_steps(step, self.num_steps)
            if len(steps) < self.num_steps or steps[-1] != step:
                continue
            try:
                values = [self._value(tensor, s) for s in steps]
            except Exception:  # noqa: BLE001 - only reductions saved for some step
                continue
            if all(np.allclose(values[-1], v, rtol=self.rtol, atol=self.atol, equal_nan=self.equal_nan)
                   for v in values[:-1]):
                return f"{name} unchanged over steps {', '.join(map(str, steps))}"
        return False


class TensorVariance(_TensorRule):
    """Fires when the variance of an inspected tensor is above ``max_threshold`` or below ``min_threshold``."""

    requires_selection = True

    def __init__(self, base_trial, collection_names=None, tensor_regex=None, max_threshold=None,
                 min_threshold=None, other_trials=None, action_str=None):
        super().__init__(base_trial, collection_names, tensor_regex, other_trials, action_str)
        self.max_threshold = as_float(self.rule_name, "max_threshold", max_threshold, allow_none=True)
        self.min_threshold = as_float(self.rule_name, "min_threshold", min_threshold, allow_none=True)
        if self.max_threshold is None and self.min_threshold is None:
            raise SMDebugValueError(f"{self.rule_name}: give max_threshold and/or min_threshold")

    def invoke_at_step(self, step):
        for name in self.tensors():
            try:
                variance = scalar(self.base_trial.tensor(name).reduction_value(step, "variance"))
            except Exception:  # noqa: BLE001 - not saved at this step
                continue
            if self.max_threshold is not None and variance > self.max_threshold:
                return f"{name}: variance {variance:.4g} > max_threshold {self.max_threshold:g}"
            if self.min_threshold is not None and variance < self.min_threshold:
                return f"{name}: variance {variance:.4g} < min_threshold {self.min_threshold:g}"
        return False
