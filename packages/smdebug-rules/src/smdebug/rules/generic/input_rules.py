"""Rules on the data a model is fed: images that were not normalised, sequences made mostly of padding."""

from __future__ import annotations

import re
from typing import Callable, Dict, Iterable, List, Optional, Tuple, Union

import numpy as np

from smdebug.core.input_scaling import recorded_input_scaling
from smdebug.core.run_info import framework_of
from smdebug.exceptions import SMDebugValueError
from smdebug.rules.generic.activation_rules import (
    CHANNELS_FIRST_FRAMEWORKS,
    CHANNELS_LAST_FRAMEWORKS,
    _check_regexes,
    batches_at,
    parameter_shapes,
)
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


#: the most channels an image has whatever its size (RGBA); more are plausible only below its height and width
IMAGE_CHANNELS = 4
#: parameter names of recurrent layers: PyTorch ``lstm.weight_ih_l0``, MXNet ``lstm0_l0_i2h_weight``, Keras
#: ``lstm/lstm_cell/kernel``, ``.../recurrent_kernel`` (the names of the parameters, not of the modules: a model
#: class ``BiLSTM`` prefixes all of its parameters' names)
_RECURRENT = re.compile(r"weight_ih|weight_hh|i2h_weight|h2h_weight|recurrent_kernel|(lstm|gru|rnn)_cell/")
#: a 3-D image read as one channel
GRAYSCALE = "grayscale"


def _in_size(shape: Tuple[int, ...], framework: Optional[str]) -> Tuple[int, ...]:
    """The input size(s) of a layer from its weight's shape: a dense/recurrent weight is (out, in) in PyTorch
    and MXNet, (in, out) in Keras; a convolution's kernel (out, in, k...) or (k..., in, out). Both
    candidates when the framework is unknown."""
    if len(shape) == 2:
        first, last = (shape[1],), (shape[0],)
    else:
        first, last = (shape[1],), (shape[-2],)
    if framework in CHANNELS_FIRST_FRAMEWORKS:
        return first
    if framework in CHANNELS_LAST_FRAMEWORKS:
        return last
    return first + last


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


#: CheckInputImages' default input regex (the original's): the name MXNet Gluon gives a HybridSequential's input
_GLUON_INPUT = ".*hybridsequential0_input_0"
#: inputs named in a NotApplicable reason (the rest counted)
_SHOWN_INPUTS = 3
#: frameworks whose hooks never write that name
_NAMED_OTHERWISE = ("pytorch", "tensorflow", "xgboost")


class CheckInputImages(Rule):
    """Fires when the input images do not look normalised: the mean of some channel is far from 0.

    Inspects the tensors of ``collection_names`` (``inputs``: the model's inputs, which every hook saves
    there) and those whose name matches ``regex`` (``re.search``) that are images (axis 0 the batch):

    * 4 dimensions or more, ``(N, C, H, W)`` or ``(N, H, W, C)`` with ``channel`` the channel axis, when the
      channel count is plausible: at most 4 (gray, RGB, RGBA), or no larger than every other dimension
      (multispectral). A channel axis of 28 entries beside one of 1 is an image read with the wrong
      ``channel``, or no image: not judged.
    * 3 dimensions ``(N, H, W)`` only on evidence, from the parameters the run saved (weights, else
      gradients), that the model reads a grayscale image: a dense layer of ``H * W`` inputs (it flattens the
      image) or a 2-D convolution of 1 input channel, and no recurrent layer or 1-D convolution (which read
      ``(N, L, F)`` / ``(N, C, L)`` as a sequence or a signal). The whole image is one channel, channel 0.
    * anything else (2-D features, token ids, sequences, 3-D without the evidence) is no image: the verdict
      is NotApplicable with the reason (UnnormalizedInput judges features and sequences).

    At step ``s`` the statistics of a tensor cover every step ``<= s`` at which it was saved with the same
    number of channels as at ``s`` (the run as seen live up to ``s``, whatever step the evaluation started
    at); per channel ``c``::

        mean_c  = sum of all values of channel c / number of those values
        samples = sum of the batch sizes (axis 0) over those steps

    The condition is met at a step where the tensor was saved when ``samples >= threshold_samples`` and
    ``|mean_c| > threshold_mean`` for some channel. Where the hook recorded that the model rescales the input
    itself (Keras' image idiom: raw 0-255 pixels into ``Rescaling(1/255)`` or an adapted ``Normalization`` as the
    first layer; :mod:`smdebug.core.input_scaling`), ``mean_c`` is taken after that map, ``mean_c * scale_c +
    offset_c``: what the first layer that learns sees (the verdict's detail says so). At steps where no matching
    tensor was saved the rule
    stays quiet (nothing new to judge).

    :param threshold_mean: largest allowed ``|mean|`` of a channel (default 2.0; the original's 0.2 fired on
        images normalised the usual ways: ``Normalize(0.5, 0.5)`` puts a dark-background image's mean near
        -0.7. Pixels left in 0-255 (or 0-16) have means of 5 to 100 and more).
    :param threshold_samples: images to see before judging (default 500).
    :param regex: comma-separated regexes of the input tensors (default ``".*hybridsequential0_input_0"``,
        the original's, an MXNet Gluon model's default name: not looked for in PyTorch, TensorFlow and XGBoost
        runs, whose hooks name inputs otherwise, so their verdicts do not name it).
    :param channel: the channel axis (default 1, NCHW; 3 or -1 for NHWC, as Keras images). 0 (the batch
        axis) is refused.
    :param collection_names: comma-separated collections of input tensors (default ``"inputs"``); empty for
        none.
    """

    def __init__(self, base_trial, threshold_mean="2.0", threshold_samples="500",
                 regex=_GLUON_INPUT, channel="1", collection_names="inputs", other_trials=None,
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
        self._no_image: Dict[str, str] = {}  # input tensor -> why it is no image, for inputs read that are none
        self._framework: Optional[str] = None  # the run's, "" when unknown (read at the first 3-D input)
        self._parameters: Dict[str, Tuple[int, ...]] = {}  # the saved weights' shapes: the model's layers
        self._names_seen = -1  # how many tensors the run had when the weights were last looked for
        self._waiting: Optional[str] = None  # why the images seen so far are not judged yet (repeated at steps
        # where none was saved: the verdict's detail must not read as if none ever was)
        #: per input: whether its channel axis is its last (a per-channel input scaling applies to that axis)
        self._channels_last: Dict[str, bool] = {}

    def _regex(self) -> List[str]:
        """The input regexes for this run: the default, an MXNet Gluon name, only where the run may be MXNet's."""
        if self.regex == [_GLUON_INPUT] and framework_of(self.base_trial) in _NAMED_OTHERWISE:
            return []
        return self.regex

    def _image_layout(self, name: str, shape: Tuple[int, ...]) -> Union[int, str, None]:
        """The channel axis of an image of ``shape`` (:data:`GRAYSCALE` for a 3-D image: one channel), or why
        it is no image (a sentence), or None if it cannot be read with ``channel`` (warned once)."""
        ndim = len(shape)
        if ndim < 3:
            return f"the model's input is no image: {name} has {ndim} dimension{'s' if ndim != 1 else ''}"
        if ndim == 3:
            return self._grayscale_evidence(name, shape)
        axis = self.channel if self.channel > 0 else ndim + self.channel
        if not 1 <= axis < ndim:
            if name not in self._warned:
                self._warned.add(name)
                self.logger.warning("%s: %s has %d dimensions, no channel axis %d", self.rule_name, name, ndim,
                                    self.channel)
            return None
        channels, others = shape[axis], [shape[a] for a in range(1, ndim) if a != axis]
        if channels > IMAGE_CHANNELS and channels > min(others):
            return (f"the model's input is no image with channel axis {self.channel}: {name} {tuple(shape)} has "
                    f"{channels} entries there, more than an image's {IMAGE_CHANNELS} channels and than its "
                    f"other dimensions (an image in the other layout needs the parameter channel)")
        return axis

    def _grayscale_evidence(self, name: str, shape: Tuple[int, ...]) -> str:
        """:data:`GRAYSCALE` when the run's saved parameters say the model reads ``(N, H, W)`` as an image,
        else why not."""
        if self._framework is None:
            from smdebug.core.run_info import framework_of

            self._framework = framework_of(self.base_trial) or ""
        if not self._parameters:
            # read again while there are none, when the run has new tensors (a run followed while it trains)
            known = len(self.base_trial.tensor_names())
            if known != self._names_seen:
                self._names_seen = known
                self._parameters = parameter_shapes(self.base_trial)
        _, height, width = shape
        described = f"{name} {tuple(shape)}"
        recurrent = sorted(n for n in self._parameters if _RECURRENT.search(n))
        if recurrent:
            return (f"the model's input is no image: {described} is a sequence read by a recurrent layer "
                    f"({recurrent[0]})")
        conv1d = sorted(n for n, p in self._parameters.items()
                        if len(p) == 3 and set(_in_size(p, self._framework)) & {height, width})
        if conv1d:
            return f"the model's input is no image: {described} is a signal read by a 1-D convolution ({conv1d[0]})"
        flattens = any(len(p) == 2 and height * width in _in_size(p, self._framework)
                       for p in self._parameters.values())
        convolves = any(len(p) == 4 and 1 in _in_size(p, self._framework) for p in self._parameters.values())
        if flattens or convolves:
            return GRAYSCALE
        return (f"the model's input is no image: {described} has 3 dimensions and the run does not say it is "
                f"one (a grayscale (N, H, W) image is recognised by a saved weight of a layer that flattens it, "
                f"H*W inputs, or of a 2-D convolution of 1 input channel)")

    def _contribution(self, name: str, step: int) -> Optional[_Stats]:
        sums, counts, samples = None, None, 0
        for value in batches_at(self.base_trial, name, step):
            if value.size == 0 or value.dtype.kind not in "fiub":
                continue
            layout = self._image_layout(name, value.shape)
            if layout is None:
                continue
            if isinstance(layout, str) and layout != GRAYSCALE:
                self._no_image[name] = layout
                continue
            if layout == GRAYSCALE:
                s = np.array([value.sum(dtype=np.float64)])
            else:
                s = value.sum(axis=tuple(a for a in range(value.ndim) if a != layout), dtype=np.float64)
            self._channels_last[name] = layout == value.ndim - 1
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
        self.not_evaluated(self._waiting or "judges at steps where an image was saved (4-D, or 3-D grayscale the "
                           "model flattens or convolves)")
        no_image = []
        for name in select_tensors(self.base_trial, self.collection_names, self._regex()):
            stats = self._stats.setdefault(name, StepSums(_add_channel_stats))
            for s in stats.steps_to_read(self.base_trial.tensor(name).steps, step):
                stats.add(s, self._contribution(name, s))
            current = stats.parts.get(step)
            if current is None:
                if name in self._no_image:
                    no_image.append(self._no_image[name])
                    # every input that is no image, in one reason (a model's tokens and their lengths...): the
                    # first few, then how many more (a Lightning run's one long step had 43 inputs, all named)
                    shown = no_image[:_SHOWN_INPUTS]
                    more = len(no_image) - len(shown)
                    self.not_applicable(shown[0] + "".join(
                        "; " + r.replace("the model's input is no image: ", "") for r in shown[1:])
                        + (f"; and {more} more inputs, none an image" if more else ""))
                continue
            sums, counts, samples = stats.total(step)[current[0].shape]
            if samples < self.threshold_samples:
                saves = sum(1 for s, part in stats.parts.items()
                            if s <= step and part is not None and part[0].shape == current[0].shape)
                self._waiting = (f"{name}: {samples} of threshold_samples={self.threshold_samples} images saved (about "
                                 f"{samples / max(saves, 1):.3g} per saved step x {saves} saved steps); judges after "
                                 f"threshold_samples={self.threshold_samples}: save inputs at more steps (their "
                                 "collection's save_config) or lower threshold_samples")
                self.not_evaluated(self._waiting)
                continue
            self._waiting = None
            self.mark_evaluated(name)
            raw = sums / np.maximum(counts, 1)
            scaled = self._scaled_inside(name, raw)
            means = raw if scaled is None else scaled[0]
            worst = int(np.nanargmax(np.abs(means))) if not np.all(np.isnan(means)) else 0
            if scaled is not None:
                self.caveat(f"{name} is judged as the model's first layer that learns sees it, rescaled by the "
                            f"model's own {scaled[1]} (recorded by the hook)")
            if abs(means[worst]) > self.threshold_mean:
                inside = "" if scaled is None else f" after the model's own {scaled[1]} (as saved: {raw[worst]:.4g})"
                return (f"{name}: mean of channel {worst} is {means[worst]:.4g}{inside} (|mean| > threshold_mean "
                        f"{self.threshold_mean:g}) over {samples} samples")
        return False

    def _scaled_inside(self, name: str, means: np.ndarray) -> Optional[Tuple[np.ndarray, str]]:
        """The channel means of input ``name`` once the model's own leading layers rescaled it (Keras'
        ``Rescaling(1/255)`` or an adapted ``Normalization`` as its first layer: the hook's record,
        :mod:`smdebug.core.input_scaling`), and those layers; None when the run records no such rescaling of it
        (or a per-channel one for an input whose channels are not on its last axis)."""
        scaling = recorded_input_scaling(self.base_trial, name)
        if scaling is None:
            return None
        if (len(scaling.scale) > 1 or len(scaling.offset) > 1) and not self._channels_last.get(name):
            return None  # (a per-channel map applies to the last axis only)
        mapped = scaling.channel_means(means)
        return None if mapped is None else (mapped, scaling.describe())


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
