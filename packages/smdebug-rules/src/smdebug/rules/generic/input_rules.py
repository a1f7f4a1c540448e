"""Rules on the data a model is fed: images that were not normalised, sequences made mostly of padding."""

from __future__ import annotations

from typing import Callable, Dict, Iterable, List, Optional, Tuple

import numpy as np

from smdebug.exceptions import SMDebugValueError
from smdebug.rules.generic.activation_rules import _check_regexes, batches_at
from smdebug.rules.generic.selection import collection_tensors, select_tensors
from smdebug.rules.params import as_float, as_float_list, as_int, as_int_list, as_list, in_range
from smdebug.rules.rule import Rule

#: per-step contribution of one tensor: (sum per channel, values per channel, samples)
_Stats = Tuple[np.ndarray, np.ndarray, int]


class StepSums:
    """The per-step contributions of a rule that judges everything seen up to a step, and their sum.

    ``add(step, part)`` records what a step contributes (None: nothing usable there); ``total(step)`` folds
    the parts of all steps ``<= step`` with ``combine(total_or_None, part)``. Rules evaluate steps in
    increasing order, so both only touch the new steps; going back to an earlier step recomputes the sum.
    """

    #: largest gap between evaluated steps that is walked step by step instead of listing the saved steps
    WALK = 64

    def __init__(self, combine: Callable):
        self.combine = combine
        self.parts: Dict[int, object] = {}
        self._looked_upto: Optional[int] = None  # every step <= this one has its part recorded
        self._sum = None
        self._sum_upto: Optional[int] = None
        self._unsummed: List[int] = []

    def steps_to_read(self, saved_steps: Callable[[], Iterable[int]], step: int) -> List[int]:
        """The steps ``<= step`` whose part is still unknown (``saved_steps()`` lists the steps where the
        data was saved; called only when evaluation jumped or went back)."""
        upto = self._looked_upto
        if upto is not None and upto <= step <= upto + self.WALK:
            candidates = range(upto + 1, step + 1)
        else:
            candidates = [s for s in saved_steps() if s <= step]
        self._looked_upto = step if upto is None else max(upto, step)
        return [s for s in candidates if s not in self.parts]

    def add(self, step: int, part) -> None:
        self.parts[step] = part
        if part is None:
            return
        if self._sum_upto is not None and step <= self._sum_upto:
            self._sum_upto = None  # below the running sum: recompute it
        else:
            self._unsummed.append(step)

    def total(self, step: int):
        """``combine`` over the parts of the steps ``<= step`` (None if there are none)."""
        if self._sum_upto is None or step < self._sum_upto:
            self._sum = None
            pending = [s for s, part in self.parts.items() if part is not None]
        else:
            pending = self._unsummed
        self._unsummed = [s for s in pending if s > step]
        for s in sorted(s for s in pending if s <= step):
            self._sum = self.combine(self._sum, self.parts[s])
        self._sum_upto = step
        return self._sum


def _add_channel_stats(total: Optional[dict], part: _Stats) -> dict:
    """Running (sums, counts, samples) per channel layout (parts of another shape are summed apart)."""
    total = {} if total is None else total
    key = part[0].shape
    if key in total:
        sums, counts, samples = total[key]
        total[key] = (sums + part[0], counts + part[1], samples + part[2])
    else:
        total[key] = part
    return total


class CheckInputImages(Rule):
    """Fires when the input images do not look normalised: the mean of some channel is far from 0.

    Inspects the tensors of ``collection_names`` (``inputs``: the model's inputs, which every hook saves
    there) and those whose name matches ``regex`` (``re.search``) that have at least 3 dimensions (axis 0 the
    batch, ``channel`` the channel axis; others are skipped). At step ``s`` the statistics of a
    tensor cover every step ``<= s`` at which it was saved with the same number of channels as at ``s`` (the
    run as seen live up to ``s``, whatever step the evaluation started at); per channel ``c``::

        mean_c  = sum of all values of channel c / number of those values
        samples = sum of the batch sizes (axis 0) over those steps

    The condition is met at a step where the tensor was saved when ``samples >= threshold_samples`` and
    ``|mean_c| > threshold_mean`` for some channel. At steps where no matching tensor was saved the rule
    stays quiet (nothing new to judge).

    :param threshold_mean: largest allowed ``|mean|`` of a channel (default 2.0; the original's 0.2 fired on
        images normalised the usual ways: ``Normalize(0.5, 0.5)`` puts a dark-background image's mean near
        -0.7. Pixels left in 0-255 (or 0-16) have means of 5 to 100 and more).
    :param threshold_samples: images to see before judging (default 500).
    :param regex: comma-separated regexes of the input tensors (default ``".*hybridsequential0_input_0"``,
        the original's, an MXNet name).
    :param channel: the channel axis (default 1, NCHW; 3 or -1 for NHWC, as Keras images). 0 (the batch
        axis) is refused.
    :param collection_names: comma-separated collections of input tensors (default ``"inputs"``); empty for
        none.
    """

    def __init__(self, base_trial, threshold_mean="2.0", threshold_samples="500",
                 regex=".*hybridsequential0_input_0", channel="1", collection_names="inputs", other_trials=None,
                 action_str=None):
        super().__init__(base_trial, other_trials=other_trials, action_str=action_str)
        rule = self.rule_name
        self.threshold_mean = in_range(rule, "threshold_mean", as_float(rule, "threshold_mean", threshold_mean), 0)
        self.threshold_samples = as_int(rule, "threshold_samples", threshold_samples, minimum=0)
        self.regex = as_list(rule, "regex", regex)
        self.collection_names = as_list(rule, "collection_names", collection_names)
        if not (self.regex or self.collection_names):
            raise SMDebugValueError(f"{rule}: give collection_names or regex")
        _check_regexes(rule, "regex", self.regex)
        self.channel = as_int(rule, "channel", channel)
        if self.channel == 0:
            raise SMDebugValueError(f"{rule}: channel must not be 0 (axis 0 is the batch)")
        self._stats: Dict[str, StepSums] = {}
        self._warned = set()

    def _contribution(self, name: str, step: int) -> Optional[_Stats]:
        sums, counts, samples = None, None, 0
        for value in batches_at(self.base_trial, name, step):
            if value.ndim < 3 or value.size == 0 or value.dtype.kind not in "fiub":
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
        # reads of earlier steps (evaluation started late) are not a judgement of this one
        self.not_evaluated("judges at steps where an image tensor (>= 3 dimensions) was saved")
        for name in select_tensors(self.base_trial, self.collection_names, self.regex):
            stats = self._stats.setdefault(name, StepSums(_add_channel_stats))
            for s in stats.steps_to_read(self.base_trial.tensor(name).steps, step):
                stats.add(s, self._contribution(name, s))
            current = stats.parts.get(step)
            if current is None:
                continue
            sums, counts, samples = stats.total(step)[current[0].shape]
            if samples < self.threshold_samples:
                self.not_evaluated(f"{name}: {samples} images seen; judges after threshold_samples="
                                   f"{self.threshold_samples}")
                continue
            self.mark_evaluated(name)
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
    :param collection_names: comma-separated collections of inputs (e.g. ``"inputs"``, the model's inputs;
        default None). Of those only integer tensors are judged: token ids, not images or features whose
        zeros would count as padding.
    """

    def __init__(self, base_trial, tensor_regex=".*embedding0_input_0", token_values="0",
                 token_thresholds_percent="50", collection_names=None, other_trials=None, action_str=None):
        super().__init__(base_trial, other_trials=other_trials, action_str=action_str)
        rule = self.rule_name
        self.tensor_regex = as_list(rule, "tensor_regex", tensor_regex)
        self.collection_names = as_list(rule, "collection_names", collection_names)
        if not (self.tensor_regex or self.collection_names):
            raise SMDebugValueError(f"{rule}: give collection_names or tensor_regex")
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
        by_regex = set(select_tensors(self.base_trial, [], self.tensor_regex))
        for name in sorted(by_regex | set(collection_tensors(self.base_trial, self.collection_names))):
            kinds = "fiub" if name in by_regex else "iu"
            values = [v.reshape(-1) for v in batches_at(self.base_trial, name, step) if v.dtype.kind in kinds]
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
