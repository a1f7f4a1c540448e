"""Rules on the data a model is fed: images that were not normalised, sequences made mostly of padding."""

from __future__ import annotations

from typing import Dict, Optional, Tuple

import numpy as np

from smdebug.exceptions import SMDebugValueError
from smdebug.rules.generic.activation_rules import _check_regexes, batches_at
from smdebug.rules.generic.selection import select_tensors
from smdebug.rules.params import as_float, as_float_list, as_int, as_int_list, as_list, in_range
from smdebug.rules.rule import Rule

#: per-step contribution of one tensor: (sum per channel, values per channel, samples)
_Stats = Tuple[np.ndarray, np.ndarray, int]


class CheckInputImages(Rule):
    """Fires when the input images do not look normalised: the mean of some channel is far from 0.

    Inspects the tensors whose name matches ``regex`` (``re.search``) and that have at least 3 dimensions
    (axis 0 the batch, ``channel`` the channel axis; others are skipped). At step ``s`` the statistics of a
    tensor cover every step ``<= s`` at which it was saved (the run as seen live up to ``s``, whatever step
    the evaluation started at); per channel ``c``::

        mean_c  = sum of all values of channel c / number of those values
        samples = sum of the batch sizes (axis 0) over those steps

    The condition is met at a step where the tensor was saved when ``samples >= threshold_samples`` and
    ``|mean_c| > threshold_mean`` for some channel. At steps where no matching tensor was saved the rule
    stays quiet (nothing new to judge).

    :param threshold_mean: largest allowed ``|mean|`` of a channel (default 0.2).
    :param threshold_samples: images to see before judging (default 500).
    :param regex: comma-separated regexes of the input tensors (default ``".*hybridsequential0_input_0"``,
        the MXNet name; for PyTorch e.g. ``".*conv0_input_0"``).
    :param channel: the channel axis (default 1, NCHW; 3 or -1 for NHWC). 0 (the batch axis) is refused.
    """

    def __init__(self, base_trial, threshold_mean="0.2", threshold_samples="500",
                 regex=".*hybridsequential0_input_0", channel="1", other_trials=None, action_str=None):
        super().__init__(base_trial, other_trials=other_trials, action_str=action_str)
        rule = self.rule_name
        self.threshold_mean = in_range(rule, "threshold_mean", as_float(rule, "threshold_mean", threshold_mean), 0)
        self.threshold_samples = as_int(rule, "threshold_samples", threshold_samples, minimum=0)
        self.regex = as_list(rule, "regex", regex)
        if not self.regex:
            raise SMDebugValueError(f"{rule}: regex is required")
        _check_regexes(rule, "regex", self.regex)
        self.channel = as_int(rule, "channel", channel)
        if self.channel == 0:
            raise SMDebugValueError(f"{rule}: channel must not be 0 (axis 0 is the batch)")
        self._stats: Dict[str, Dict[int, Optional[_Stats]]] = {}
        self._warned = set()

    def _contribution(self, name: str, step: int) -> Optional[_Stats]:
        sums, counts, samples = None, None, 0
        for value in batches_at(self.base_trial, name, step):
            if value.ndim < 3 or value.dtype.kind not in "fiub":
                continue
            axis = self.channel if self.channel > 0 else value.ndim + self.channel
            if not 1 <= axis < value.ndim:
                if name not in self._warned:
                    self._warned.add(name)
                    self.logger.warning("%s: %s has %d dimensions, no channel axis %d", self.rule_name, name,
                                        value.ndim, self.channel)
                continue
            other_axes = tuple(a for a in range(value.ndim) if a != axis)
            s = value.sum(axis=other_axes, dtype=np.float64)
            n = np.full(s.shape, value.size // s.size, dtype=np.int64)
            if sums is None:
                sums, counts = s, n
            elif s.shape == sums.shape:
                sums, counts = sums + s, counts + n
            else:
                continue
            samples += value.shape[0]
        return None if sums is None else (sums, counts, samples)

    def invoke_at_step(self, step):
        for name in select_tensors(self.base_trial, [], self.regex):
            per_step = self._stats.setdefault(name, {})
            for s in self.base_trial.tensor(name).steps():
                if s <= step and s not in per_step:
                    per_step[s] = self._contribution(name, s)
            current = per_step.get(step)
            if current is None:
                continue
            sums, counts, samples = np.zeros_like(current[0]), np.zeros_like(current[1]), 0
            for s, stats in per_step.items():
                if s <= step and stats is not None and stats[0].shape == sums.shape:
                    sums, counts, samples = sums + stats[0], counts + stats[1], samples + stats[2]
            if samples < self.threshold_samples:
                continue
            means = sums / np.maximum(counts, 1)
            worst = int(np.nanargmax(np.abs(means))) if not np.all(np.isnan(means)) else 0
            if abs(means[worst]) > self.threshold_mean:
                return (f"{name}: mean of channel {worst} is {means[worst]:.4g} (|mean| > threshold_mean "
                        f"{self.threshold_mean:g}) over {samples} samples")
        return False


class NLPSequenceRatio(Rule):
    """Fires when given token values (padding, end-of-sequence, unknown...) make up too much of the input
    sequences.

    For every tensor whose name matches ``tensor_regex`` (``re.search``) and that was saved at the step, and
    for every ``token_values[k]``::

        percent_k = 100 * #{values == token_values[k]} / #values

    The condition is met when ``percent_k > token_thresholds_percent[k]`` for some tensor and ``k``.

    :param tensor_regex: comma-separated regexes of the token-id inputs (default ``".*embedding0_input_0"``).
    :param token_values: comma-separated integer token ids (default ``"0"``).
    :param token_thresholds_percent: comma-separated percents, one per token value (default ``"50"``).
    """

    def __init__(self, base_trial, tensor_regex=".*embedding0_input_0", token_values="0",
                 token_thresholds_percent="50", other_trials=None, action_str=None):
        super().__init__(base_trial, other_trials=other_trials, action_str=action_str)
        rule = self.rule_name
        self.tensor_regex = as_list(rule, "tensor_regex", tensor_regex)
        if not self.tensor_regex:
            raise SMDebugValueError(f"{rule}: tensor_regex is required")
        _check_regexes(rule, "tensor_regex", self.tensor_regex)
        self.token_values = as_int_list(rule, "token_values", token_values)
        self.token_thresholds_percent = [
            in_range(rule, "token_thresholds_percent", t, 0, 100)
            for t in as_float_list(rule, "token_thresholds_percent", token_thresholds_percent)
        ]
        if not self.token_values:
            raise SMDebugValueError(f"{rule}: token_values is required")
        if len(self.token_values) != len(self.token_thresholds_percent):
            raise SMDebugValueError(
                f"{rule}: token_values and token_thresholds_percent must have the same length, got "
                f"{len(self.token_values)} token values and {len(self.token_thresholds_percent)} thresholds")

    def invoke_at_step(self, step):
        for name in select_tensors(self.base_trial, [], self.tensor_regex):
            values = [v.reshape(-1) for v in batches_at(self.base_trial, name, step) if v.dtype.kind in "fiub"]
            if not values:
                continue
            flat = np.concatenate(values)
            if flat.size == 0:
                continue
            for token, threshold in zip(self.token_values, self.token_thresholds_percent):
                count = int((flat == token).sum())
                percent = 100.0 * count / flat.size
                if percent > threshold:
                    return (f"{name}: token {token} is {percent:.4g}% of {flat.size} values "
                            f"({count}; threshold {threshold:g}%)")
        return False
