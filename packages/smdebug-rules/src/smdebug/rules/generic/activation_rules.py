"""Rules on activations: ReLU units that never fire, tanh/sigmoid units stuck in their flat regions.

Both rules judge the batch of activations saved at a step, pooled with the batches of the tensor's saves just
before it (same mode) until they hold at least ``100 / threshold_inactivity`` samples (100 at the default 1%,
:func:`min_samples`): with fewer, "active in < 1% of n samples" can only mean "active in none of them", and a
healthy ReLU layer has most of its units at 0 for any one input (batch size 1: 11 of 16 units off is ordinary
sparsity, not death). Until then the verdict is NotEvaluated, saying how many samples the saves hold. When
several workers saved the tensor at the same step, their batches are pooled too. For SaturatedActivation axis 0
of a saved tensor is the batch (the samples) and every other index is a *unit* (for a convolution's output, one
channel at one position: a saturated input is saturated where it is). For DeadRelu a unit is what has its own
weights (see :func:`unit_readings`): a feature of a dense layer, a *channel* of a convolution (a filter, shared
by every position), a feature of a sequence model's per-step layer (shared by every time step).
"""

from __future__ import annotations

import math
import re
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from smdebug.core.collection import CollectionKeys
from smdebug.exceptions import (
    MissingEventFile,
    SMDebugError,
    SMDebugValueError,
    StepUnavailable,
    TensorUnavailableForStep,
)
from smdebug.rules.generic.selection import collection_tensors, select_tensors
from smdebug.rules.params import as_float, as_list, in_range
from smdebug.rules.rule import Rule


_SATURATING = f"{CollectionKeys.TANH_ACTIVATIONS},{CollectionKeys.SIGMOID_ACTIVATIONS}"
#: ReLU-like layers (as the hooks record their type) whose output is below 0 where they still pass a gradient:
#: DeadRelu counts their units active where they are not 0
_SIGNED_RELUS = ("Hardswish",)


def batches_at(trial, name: str, step: int) -> List[np.ndarray]:
    """The tensor's values at ``step`` from every worker that saved it, pooled along axis 0 when their other
    dimensions agree (one array), else one array per worker. Empty if it was not saved at ``step`` (or the
    run has no such step)."""
    tensor = trial.tensor(name)
    try:
        workers = tensor.workers(step)
    except (TensorUnavailableForStep, StepUnavailable):
        return []
    values = []
    for worker in workers:
        try:
            values.append(np.asarray(tensor.value(step, worker=worker)))
        except MissingEventFile:
            raise  # saved, but its file is gone: an error, not "not saved"
        except TensorUnavailableForStep:  # only reductions or a shape saved by that worker
            continue
    if len(values) > 1 and all(v.ndim >= 1 and v.shape[1:] == values[0].shape[1:] for v in values):
        return [np.concatenate(values, axis=0)]
    return values


def min_samples(threshold_inactivity: float) -> int:
    """The fewest samples at which "in < t% of the samples" (DeadRelu) or "in > 100 - t%" (SaturatedActivation)
    can mean anything but "in none (every one) of them": one sample is t% of 100 / t samples. 100 at the
    default 1%; 1 for t = 0 (nothing is then below 0%)."""
    if not threshold_inactivity > 0:
        return 1
    return max(1, int(math.ceil(100.0 / threshold_inactivity - 1e-9)))


class _Pool:
    """The batches of one tensor at a step and at its saves just before (same mode), read once each."""

    def __init__(self, trial):
        self.trial = trial
        self._values: Dict[str, Dict[int, Optional[np.ndarray]]] = {}

    def _one(self, name: str, step: int) -> Optional[np.ndarray]:
        cache = self._values.setdefault(name, {})
        if step not in cache:
            values = batches_at(self.trial, name, step)
            value = values[0] if len(values) == 1 else None
            if value is not None and (value.ndim == 0 or value.size == 0 or value.dtype.kind not in "fiub"
                                      or (value.dtype.kind == "f" and not np.isfinite(value).all())):
                value = None
            cache[step] = value
        return cache[step]

    def earlier(self, name: str, step: int):
        """The tensor's values at the saves before ``step`` in the same mode, latest first (each None where it
        cannot be pooled: several workers' batches of different shapes, no finite numeric value)."""
        steps = self.trial.tensor(name).steps()
        mode = self.trial.mode(step)
        for g in reversed(steps[:int(np.searchsorted(steps, step))]):
            if self.trial.mode(g) == mode:
                yield g, self._one(name, g)

    def put(self, name: str, step: int, value: Optional[np.ndarray]) -> None:
        self._values.setdefault(name, {})[step] = value

    def pool(self, name: str, step: int, value: np.ndarray, fits, enough) -> Tuple[List[np.ndarray], List[int]]:
        """``value`` (the tensor's one batch at ``step``) and the batches of its saves just before, latest first,
        while ``fits(earlier)`` and until ``enough(pooled)``."""
        self.put(name, step, value)
        pooled, steps = [value], [step]
        if not enough(pooled):
            for g, earlier in self.earlier(name, step):
                if earlier is None or not fits(earlier):
                    break
                pooled.append(earlier)
                steps.append(g)
                if enough(pooled):
                    break
        self.forget_before(name, min(steps))
        return pooled, steps

    def forget_before(self, name: str, step: int) -> None:
        cache = self._values.get(name, {})
        for g in [g for g in cache if g < step]:
            del cache[g]


def _pooled_label(samples: int, steps: List[int]) -> str:
    if len(steps) <= 1:
        return f"{samples} samples"
    return f"{samples} samples (the {len(steps)} saves of steps {min(steps)}-{max(steps)})"


def _too_few(name: str, samples: int, saves: int, need: int, threshold_inactivity: float) -> str:
    return (f"needs at least {need} samples of a layer (100 / threshold_inactivity={threshold_inactivity:g}: with "
            f"fewer, a share below it can only be none of them) and pools consecutive saves of the same mode to "
            f"get them; {name} held {samples} in {saves} consecutive save{'s' if saves != 1 else ''}")


#: the parameters of a recurrent layer's hidden-to-hidden weights, by framework: PyTorch's RNN/GRU/LSTM
#: (``weight_hh_l0``, a cell's ``weight_hh``), Keras' (``.../gru_cell/recurrent_kernel``), Gluon's (``h2h_weight``)
_RECURRENT_PARAMETER = re.compile(r"^(?:gradients?/)?(?P<layer>.+?)(?:[._/](?:weight_hh(?:_l\d+)?(?:_reverse)?"
                                  r"|(?:[^/]*_cell/)?recurrent_kernel|(?:l\d+_)?h2h_weight))$")


#: the longest tensor name looked at as a recurrent layer's parameter
MAX_PARAMETER_NAME = 1024
_RECURRENT_ENDINGS = ("weight_hh", "_reverse", "recurrent_kernel", "h2h_weight")
_NUMBERED_HH = re.compile(r"weight_hh_l\d{1,6}\Z")


def recurrent_layers(trial) -> List[str]:
    """The recurrent layers (RNN, GRU, LSTM) whose parameters the run saved (weights or gradients), by name:
    their tanh and sigmoid are computed inside the cell, where no hook sees them."""
    layers = set()
    for name in trial.tensor_names():
        # (the pattern backtracks over the whole name at each of its positions: a 100 KB name a run holds cost
        # seconds per match, at every step -- probe 17b F8; no parameter's name is that long, and the suffix
        # test first leaves every other name after one look at its end)
        if len(name) > MAX_PARAMETER_NAME or not name.endswith(_RECURRENT_ENDINGS) and not _NUMBERED_HH.search(name):
            continue
        m = _RECURRENT_PARAMETER.match(name)
        if m is not None:
            layers.add(m.group("layer"))
    return sorted(layers)


def units_by_samples(value: np.ndarray) -> np.ndarray:
    """``value`` as a 2-D (samples, units) array: axis 0 is the batch, the other axes are flattened. A 1-D
    value is a batch of one unit."""
    return value.reshape(value.shape[0], -1)


#: frameworks whose layout of layer outputs is known: channels (features) last, or channels first with
#: sequences' features last
CHANNELS_LAST_FRAMEWORKS = ("tensorflow",)
CHANNELS_FIRST_FRAMEWORKS = ("pytorch", "mxnet")


class UnitReading(NamedTuple):
    """How to read an activation tensor as (samples, units): ``unit_axis`` indexes the units (None: every
    index but the batch's is a unit of its own), ``batch_axis`` the samples; a unit is active in a sample
    when it is positive at some index of the other axes (some position of a channel's map, some time step of
    a feature)."""

    what: str  # "units", "channels" or "features"
    unit_axis: Optional[int]
    batch_axis: int = 0


def parameter_shapes(trial) -> Dict[str, Tuple[int, ...]]:
    """``{name: shape}`` of the model's parameters the run saved (collection ``weights``, else their
    gradients, collection ``gradients``: the same shapes), each read at its first saved step; empty when the
    run saved neither. Evidence of the layers' kinds: a convolution's kernel has 3 or more dimensions, a
    dense or recurrent layer's 2."""
    collections = trial.collections()
    all_names = trial.tensor_names()
    for cname in ("weights", "gradients"):
        if cname not in collections:
            continue
        shapes = {}
        for name in sorted(collections[cname].members(all_names)):
            try:
                tensor = trial.tensor(name)
                steps = tensor.steps()
                if steps:
                    shapes[name] = tuple(int(d) for d in tensor.shape(steps[0]))
            except SMDebugError:  # a parameter whose shape cannot be read is no evidence
                continue
        if shapes:
            return shapes
    return {}


def unit_readings(shape: Sequence[int], framework: Optional[str],
                  parameters: Sequence[Tuple[int, ...]] = ()) -> List[UnitReading]:
    """The ways DeadRelu reads an activation of ``shape`` as units; the rule takes the one with the fewest
    dead units (more than one only where the run cannot tell the layout).

    * 1-D and 2-D (``(N, F)``, a dense layer): every feature is a unit (``units``).
    * a run whose framework is unknown (not PyTorch, MXNet or TensorFlow): every index but the batch is a
      unit (``units``), the layout being unknown.
    * TensorFlow/Keras (channels last): the last axis, ``(N, ..., C)``: a convolution's channel, a sequence's
      feature (Keras' ``Conv1D`` and per-step ``Dense`` both put it last); the batch is axis 0.
    * PyTorch and MXNet, 4-D and more: the channel axis 1 of ``(N, C, H, W...)``; 3-D: ``(N, C, L)`` of a
      ``Conv1d`` or the features of a sequence ``(N, L, F)`` (``batch_first``) or ``(L, N, F)`` (PyTorch's
      default, MXNet's ``TNC``). The saved parameters tell which: a kernel of the same number of dimensions
      with ``C`` output (or transposed-convolution) channels says channel axis 1; a 2-D weight (dense,
      recurrent, embedding) with ``F`` among its sizes says features last. A sequence's batch axis (0 or 1)
      is not told by the shape: both are read. With no such evidence every candidate is read.
    """
    ndim = len(shape)
    if ndim <= 2:
        return [UnitReading("units", None)]
    if framework in CHANNELS_LAST_FRAMEWORKS:
        return [UnitReading("channels" if ndim >= 4 else "features", ndim - 1)]
    if framework not in CHANNELS_FIRST_FRAMEWORKS:
        return [UnitReading("units", None)]
    channels = UnitReading("channels", 1)
    sequence = [UnitReading("features", ndim - 1, 0)] + ([UnitReading("features", ndim - 1, 1)] if ndim == 3 else [])
    conv = any(len(p) == ndim and shape[1] in p[:2] for p in parameters)
    dense = any(len(p) == 2 and shape[-1] in p for p in parameters)
    readings = ([channels] if conv else []) + (sequence if dense and (ndim == 3 or not conv) else [])
    if readings:
        return readings
    return [channels] + (sequence if ndim == 3 else [])


def _active(value: np.ndarray, reading: UnitReading, nonzero: bool = False) -> np.ndarray:
    """(samples, units) booleans: whether each unit is active (positive somewhere; with ``nonzero``, not 0
    somewhere) in each sample."""
    if reading.unit_axis is None:
        units = units_by_samples(value)
        return units != 0 if nonzero else units > 0
    moved = np.moveaxis(value, (reading.batch_axis, reading.unit_axis), (0, 1))
    moved = moved.reshape(moved.shape[0], moved.shape[1], -1)
    return (moved != 0 if nonzero else moved > 0).any(axis=2)


def _units(shape: Sequence[int], reading: UnitReading) -> int:
    return int(np.prod(shape[1:])) if reading.unit_axis is None else int(shape[reading.unit_axis])


def _samples(values: Sequence[np.ndarray], reading: UnitReading) -> int:
    return sum(int(v.shape[reading.batch_axis]) for v in values)


def dead_units(value, reading: UnitReading, threshold_inactivity: float,
               nonzero: bool = False) -> Tuple[np.ndarray, int]:
    """(indices of the dead units, samples) of ``value`` (an array, or a list of arrays of the same units
    pooled: batches of consecutive saves) read as ``reading``: a unit is dead when it is active (positive
    somewhere in the sample; with ``nonzero``, not 0 somewhere: a Hardswish's output) in fewer than
    ``threshold_inactivity`` percent of the samples. Indices are flat positions for ``units`` and positions
    along ``unit_axis`` otherwise."""
    values = [value] if isinstance(value, np.ndarray) else list(value)
    active = np.concatenate([_active(v, reading, nonzero) for v in values], axis=0)
    active_percent = active.mean(axis=0) * 100
    return np.flatnonzero(active_percent < threshold_inactivity), active.shape[0]


class DeadRelu(Rule):
    """Fires when too many ReLU units of a layer are (almost) never active.

    For every tensor whose name matches ``tensor_regex`` (``re.search``) and that was saved at the step, the
    batch saved there pooled with those of the tensor's saves just before it (same mode) until they hold at
    least ``n >= 100 / threshold_inactivity`` samples (see the module docstring; NotEvaluated, with the count,
    until the saves hold that many)::

        active(unit, sample) = the unit's value > 0 at some position of the sample
        active_percent(unit) = 100 * #{samples where active} / n
        dead(unit)           = active_percent(unit) < threshold_inactivity
        dead_percent         = 100 * #dead units / #units

    A *unit* is what has weights of its own (:func:`unit_readings`):

    * ``(N, F)``, a dense layer: each of the ``F`` features (one position per sample).
    * a convolution's output, ``(N, C, H, W...)`` in PyTorch and MXNet, ``(N, H, W..., C)`` in Keras: each of
      the ``C`` channels, active in a sample when it is positive anywhere in the sample's map. A filter is shared
      by every position, so only a whole channel can die; positions off for every sample (zero-padded borders,
      the strokes of digits in fixed places) are no dead units.
    * a sequence, ``(N, L, F)`` (Keras, PyTorch ``batch_first``) or ``(L, N, F)`` (PyTorch's and MXNet's
      default): each of the ``F`` features, active in a sample when positive at some time step. PyTorch and
      MXNet ``(N, C, L)`` of a ``Conv1d`` are told from sequences by the run's saved weights (or gradients):
      a kernel with ``C`` output channels says channels. Where the run cannot tell the layout (no such
      evidence; a sequence's batch axis), every candidate reading is taken and the one with the fewest dead
      units judged.
    * a run of an unknown framework (no record, nothing to infer it from): every index but the batch (axis 0)
      is a unit, as the layout is unknown.

    The condition is met when ``dead_percent > threshold_layer`` for some tensor, the share is not decided
    by a single unit (with one dead unit fewer it would still be above ``threshold_layer``, or every unit is
    dead), and the layer stays dead: a unit that comes back was never dead. At initialisation a layer fed an
    input still near 0 (an autoencoder's decoder behind its bottleneck) has every unit of negative bias off
    for every sample, and they switch on as the layers before it learn (half of a healthy decoder's units off
    at steps 0-6, one of 32 at step 500). On a run that has ended the layer must be dead at its last saves
    too (the same mode's, pooled as above; when those cannot be judged -- NaN after a divergence -- the
    finding stands); on a run still training (``--follow``) it must have been dead at every judgement of it
    from half-way through the run so far, in at least two pools of saves that share none, as
    LossNotDecreasing reports a stall live, with no unit dead in the earliest of those pools alive again
    now (a layer that revives later may still be reported live). A layer of a few units -- the bottleneck of a
    squeeze-and-excitation block has channels / 16, often 4 -- fed inputs that barely vary across the batch (the channel means of an image) has units that are off for
    the whole batch and on again a few steps later; 3 of its 4 units is no layer-wide death, while all of
    them is. (In a layer of hundreds of units the second test changes nothing.) Tensors with no values,
    scalars and non-numeric tensors are skipped; NaN counts as inactive.

    The inspected tensors are the outputs of the layers of ``collection_names`` (the hooks put every ReLU
    layer there by its type, whatever its name, and record which of its tensors are outputs) and the tensors
    matching ``tensor_regex``. A Hardswish layer (PyTorch's, recorded so by the hook) is negative, and passes
    a gradient, for inputs in (-3, 0), and exactly 0, passing none, at or below -3: its unit is active in a
    sample where its output is not 0.

    :param collection_names: comma-separated collections of ReLU layers (default ``"relu_activations"``);
        empty for none.
    :param tensor_regex: comma-separated regexes of the ReLU outputs (default ``".*relu_output"``, the
        original's: a module named ``layer0_relu`` saves ``layer0_relu_output_0``, which it matches).
    :param threshold_inactivity: percent of samples (default 1.0) under which a unit counts as dead.
    :param threshold_layer: percent of a layer's units (default 50.0) that may be dead.
    """

    def __init__(self, base_trial, tensor_regex=".*relu_output", threshold_inactivity="1.0",
                 threshold_layer="50.0", collection_names="relu_activations", other_trials=None, action_str=None):
        super().__init__(base_trial, other_trials=other_trials, action_str=action_str)
        rule = self.rule_name
        self.tensor_regex = as_list(rule, "tensor_regex", tensor_regex)
        self.collection_names = as_list(rule, "collection_names", collection_names)
        if not (self.tensor_regex or self.collection_names):
            raise SMDebugValueError(f"{rule}: give collection_names or tensor_regex")
        _check_regexes(rule, "tensor_regex", self.tensor_regex)
        self.threshold_inactivity = in_range(rule, "threshold_inactivity",
                                             as_float(rule, "threshold_inactivity", threshold_inactivity), 0, 100)
        self.threshold_layer = in_range(rule, "threshold_layer", as_float(rule, "threshold_layer", threshold_layer),
                                        0, 100)
        self._framework: Optional[str] = None  # the run's, "" when unknown (read at the first judgement)
        self._parameters: List[Tuple[int, ...]] = []  # shapes of the saved weights: the layers' kinds
        self._names_seen = -1  # how many tensors the run had when the weights were last looked for
        self._pool = _Pool(base_trial)
        self._end_pool = _Pool(base_trial)  # (its own cache: pooling the last saves evicts earlier ones)
        #: samples a judgement needs (see the module docstring)
        self.min_samples = min_samples(self.threshold_inactivity)
        #: per tensor: its judgements so far, (step, the first step pooled, its dead units when the layer was
        #: judged dead, else None) (a run read while it trains)
        self._judged: Dict[str, List[Tuple[int, int, Optional[frozenset]]]] = {}
        self._dead_units: frozenset = frozenset()  # of the last layer judged (_judge)
        #: per (tensor, mode) of an ended run: whether it is dead at its last saves, and those steps
        self._at_end: Dict[Tuple[str, object], Tuple[bool, List[int]]] = {}
        #: per tensor: whether its layer is active where not 0 (_nonzero_active)
        self._signed: Dict[str, bool] = {}

    def tensors(self) -> List[str]:
        names = set(collection_tensors(self.base_trial, self.collection_names, "outputs"))
        names.update(select_tensors(self.base_trial, [], self.tensor_regex))
        return sorted(names)

    def invoke_at_step(self, step):
        judged, diverged, short = False, [], []
        need = self.min_samples
        for name in self.tensors():
            values = batches_at(self.base_trial, name, step)
            for value in values:
                if value.ndim == 0 or value.size == 0 or value.dtype.kind not in "fiub":
                    continue
                if value.dtype.kind == "f" and not np.isfinite(value).all():
                    # NaN is not > 0: a diverged layer would read as dead (ExplodingTensor says what it is)
                    diverged.append(name)
                    continue
                readings = self._readings(value.shape)
                if len(values) == 1:
                    pooled, steps = self._pooled(self._pool, name, step, value, readings)
                else:  # several workers' batches of different shapes: each judged on its own
                    pooled, steps = [value], [step]
                if not self._enough(pooled, readings):
                    short.append((name, min(_samples(pooled, r) for r in readings), len(pooled)))
                    continue
                judged = True
                reason = self._judge(name, pooled, readings, steps)
                reason = self._lasting(name, step, min(steps), reason)
                if reason:
                    return reason
        if short and not judged:
            name, samples, saves = short[0]
            self.not_evaluated(_too_few(name, samples, saves, need, self.threshold_inactivity))
        elif diverged and not judged:
            self.not_evaluated(f"the activations hold NaN or infinite values, which say nothing of dead units: "
                               f"{', '.join(sorted(set(diverged))[:3])}")
        return False

    def _enough(self, pooled: List[np.ndarray], readings: List[UnitReading]) -> bool:
        return all(_samples(pooled, r) >= self.min_samples for r in readings)

    def _pooled(self, pool: "_Pool", name: str, step: int, value: np.ndarray, readings: List[UnitReading]):
        """``value`` pooled with the tensor's saves just before ``step`` of the same layout, until enough."""
        def fits(earlier):
            return earlier.ndim == value.ndim and all(
                _units(earlier.shape, r) == _units(value.shape, r) for r in readings)

        return pool.pool(name, step, value, fits, lambda pooled: self._enough(pooled, readings))

    def _lasting(self, name: str, step: int, first_pooled: int, reason: Optional[str]) -> Optional[str]:
        """``reason`` (the layer judged dead at ``step``, its pool beginning at ``first_pooled``) if the death
        lasts (see the class docstring), else None; every judgement of a run still training is remembered."""
        if self.base_trial.loaded_all_steps:
            if not reason:
                return None
            dead, last_steps = self._dead_at_end(name, step)
            if not dead:
                return None
            return reason + (f"; still so at its last saves (steps {min(last_steps)}-{max(last_steps)})"
                             if last_steps and max(last_steps) > step else "")
        history = self._judged.setdefault(name, [])
        history.append((step, first_pooled, self._dead_units if reason else None))
        if not reason:
            return None
        since = [(s, dead) for s, _, dead in history if s >= step / 2]
        if any(dead is None for _, dead in since):
            return None
        apart = [dead for s, dead in since if s < first_pooled]  # (pools that share no save with this one)
        if not apart or not apart[0] <= self._dead_units:
            return None  # (units dead at the earliest of them came back: the layer may be recovering)
        return reason

    def _dead_at_end(self, name: str, step: int) -> Tuple[bool, List[int]]:
        """On an ended run: whether the tensor's layer is dead at its last saves of ``step``'s mode, and the
        steps pooled there; (True, []) when they cannot be judged (the finding at ``step`` then stands)."""
        trial = self.base_trial
        mode = trial.mode(step)
        key = (name, mode)
        if key not in self._at_end:
            self._at_end[key] = (True, [])
            last = next((g for g in reversed(trial.tensor(name).steps()) if trial.mode(g) == mode), None)
            # (None where the last save cannot be pooled: several workers' shapes, no finite numeric value)
            value = self._end_pool._one(name, last) if last is not None and last > step else None
            if value is not None:
                readings = self._readings(value.shape)
                pooled, steps = self._pooled(self._end_pool, name, last, value, readings)
                if self._enough(pooled, readings):
                    self._at_end[key] = (self._judge(name, pooled, readings, steps) is not None, steps)
        return self._at_end[key]

    def _nonzero_active(self, name: str) -> bool:
        """Whether ``name`` is the output of a layer that is active where it is not 0 (see the class docstring);
        looked up once per tensor."""
        if name not in self._signed:
            from smdebug.core.activations import activation_layers

            layers = (activation_layers(self.base_trial) or {}).get(CollectionKeys.RELU_ACTIVATIONS, ())
            self._signed[name] = any(layer.type in _SIGNED_RELUS and layer.output_names([name]) for layer in layers)
        return self._signed[name]

    def _readings(self, shape: Tuple[int, ...]) -> List[UnitReading]:
        if self._framework is None:
            from smdebug.core.run_info import framework_of

            self._framework = framework_of(self.base_trial) or ""
        if len(shape) >= 3 and self._framework in CHANNELS_FIRST_FRAMEWORKS and not self._parameters:
            # read again while there are none, when the run has new tensors (a run followed while it trains)
            known = len(self.base_trial.tensor_names())
            if known != self._names_seen:
                self._names_seen = known
                self._parameters = list(parameter_shapes(self.base_trial).values())
        return unit_readings(shape, self._framework, self._parameters)

    def _judge(self, name: str, pooled: List[np.ndarray], readings: List[UnitReading],
               steps: List[int]) -> Optional[str]:
        """The reason if the pooled batches have too many dead units under every reading of their layout."""
        best = None
        value = pooled[0]
        for reading in readings:
            dead, samples = dead_units(pooled, reading, self.threshold_inactivity, self._nonzero_active(name))
            units = _units(value.shape, reading)
            if best is None or len(dead) / units < len(best[1]) / best[2]:
                best = (reading, dead, units, samples)
        reading, dead, units, samples = best
        self._dead_units = frozenset(int(i) for i in dead)  # (for _lasting: which units, not only how many)
        count = len(dead)
        dead_percent = 100.0 * count / units
        # not decided by one unit (see the docstring): a layer entirely dead always counts
        decided = count == units or 100.0 * (count - 1) / units > self.threshold_layer
        if not (dead_percent > self.threshold_layer and decided):
            return None
        if reading.unit_axis is None:
            what = "units"
        else:
            listed = ", ".join(str(int(i)) for i in dead[:8]) + (", ..." if count > 8 else "")
            axis = "the last axis" if reading.unit_axis == value.ndim - 1 else f"axis {reading.unit_axis}"
            what = f"units ({reading.what}, {axis}; dead: {listed})"
        where = "" if reading.batch_axis == 0 else f" (axis {reading.batch_axis} read as the batch)"
        return (f"{name}: {count} of {units} {what} ({dead_percent:.4g}%) active in "
                f"< {self.threshold_inactivity:g}% of {_pooled_label(samples, steps)}{where} "
                f"(threshold_layer {self.threshold_layer:g}%)")


class SaturatedActivation(Rule):
    """Fires when too many tanh or sigmoid units of a layer are saturated (their input is so large in
    magnitude that the activation is flat and passes almost no gradient).

    The inspected tensors are the *inputs* of the activations: the union of the tensors of
    ``collection_names`` and of those matching ``tensor_regex`` (``re.search``). Of an activation collection
    (``tanh_activations``, ``sigmoid_activations``: the hooks put every such layer there by its type and record
    which of its tensors are inputs) only the layers' inputs are taken, judged with the bounds of the
    collection's kind (for a Keras layer with a fused ``activation=``, the pre-activation the hook captured
    inside it); a layer whose input the hook could not observe contributes nothing. The tanh and sigmoid of a
    recurrent cell (RNN, GRU, LSTM: its gates and state) are computed inside the cell, where no hook sees them:
    a model whose only such units are there is NotApplicable, the verdict naming its recurrent layers. Any other
    tensor whose name contains ``tanh`` (case-insensitive) is judged with the tanh bounds, one whose name
    contains ``sigmoid`` with the sigmoid bounds (``tanh`` wins if both appear); any other selected tensor is
    skipped with a warning logged once. With axis 0 the batch and every other index a unit, over ``n`` samples (the
    batch saved at the step pooled with those of the saves just before it until ``n >= 100 /
    threshold_inactivity``, as DeadRelu)::

        saturated_percent(unit) = 100 * #{samples with x < min or x > max} / n
        saturated(unit)         = saturated_percent(unit) > 100 - threshold_inactivity
        layer_percent           = 100 * #saturated units / #units

    The condition is met when ``layer_percent > threshold_layer`` for some tensor (NaN is not saturated).

    A piecewise-linear layer of these collections (PyTorch's ``Hardtanh``, ``Hardsigmoid``, as the hook recorded
    its type) is flat, with no gradient at all, outside its linear range: its inputs are judged with that range
    (``[min_val, max_val]`` of a Hardtanh, ``[-3, 3]`` of a Hardsigmoid), not with the thresholds below, which
    are where a smooth tanh or sigmoid becomes flat.

    :param collection_names: comma-separated collections to inspect (default
        ``"tanh_activations,sigmoid_activations"``).
    :param tensor_regex: comma-separated regexes (default ``".*tanh_input|.*sigmoid_input"``, e.g.
        ``layer0_tanh_input_0``). Give an empty string to inspect only ``collection_names``.
    :param threshold_tanh_min: lower bound of the unsaturated tanh input (default -9.4999).
    :param threshold_tanh_max: upper bound of the unsaturated tanh input (default 9.4999).
    :param threshold_sigmoid_min: lower bound of the unsaturated sigmoid input (default -23).
    :param threshold_sigmoid_max: upper bound of the unsaturated sigmoid input (default 16.99999).
    :param threshold_inactivity: percent (default 1.0): a unit is saturated when it is out of bounds in more
        than ``100 - threshold_inactivity`` percent of the samples.
    :param threshold_layer: percent of a layer's units (default 50.0) that may be saturated.
    """

    def __init__(self, base_trial, collection_names=_SATURATING, tensor_regex=".*tanh_input|.*sigmoid_input",
                 threshold_tanh_min="-9.4999", threshold_tanh_max="9.4999", threshold_sigmoid_min="-23",
                 threshold_sigmoid_max="16.99999", threshold_inactivity="1.0", threshold_layer="50.0",
                 other_trials=None, action_str=None):
        super().__init__(base_trial, other_trials=other_trials, action_str=action_str)
        rule = self.rule_name
        self.collection_names = as_list(rule, "collection_names", collection_names)
        self.tensor_regex = as_list(rule, "tensor_regex", tensor_regex)
        if not (self.collection_names or self.tensor_regex):
            raise SMDebugValueError(f"{rule}: give collection_names or tensor_regex")
        _check_regexes(rule, "tensor_regex", self.tensor_regex)
        self.threshold_tanh_min = as_float(rule, "threshold_tanh_min", threshold_tanh_min)
        self.threshold_tanh_max = as_float(rule, "threshold_tanh_max", threshold_tanh_max)
        self.threshold_sigmoid_min = as_float(rule, "threshold_sigmoid_min", threshold_sigmoid_min)
        self.threshold_sigmoid_max = as_float(rule, "threshold_sigmoid_max", threshold_sigmoid_max)
        for kind in ("tanh", "sigmoid"):
            low, high = getattr(self, f"threshold_{kind}_min"), getattr(self, f"threshold_{kind}_max")
            if not low < high:
                raise SMDebugValueError(f"{rule}: threshold_{kind}_min ({low:g}) must be below "
                                        f"threshold_{kind}_max ({high:g})")
        self.threshold_inactivity = in_range(rule, "threshold_inactivity",
                                             as_float(rule, "threshold_inactivity", threshold_inactivity), 0, 100)
        self.threshold_layer = in_range(rule, "threshold_layer", as_float(rule, "threshold_layer", threshold_layer),
                                        0, 100)
        self._warned = set()
        self._pool = _Pool(base_trial)
        #: samples a judgement needs (see the module docstring)
        self.min_samples = min_samples(self.threshold_inactivity)
        #: tensor -> (type, min, max) of its piecewise-linear layer, or None (see _flat_outside)
        self._piecewise: Dict[str, Optional[Tuple[str, float, float]]] = {}

    def bounds(self, name: str, collection: str = ""):
        """(kind, min, max) for a tensor (of ``collection``, if selected by one), or None if it is neither a
        tanh nor a sigmoid input."""
        if collection:
            flat = self._flat_outside(name, collection)
            if flat is not None:
                return flat
        lowered = name.lower()
        if collection == CollectionKeys.TANH_ACTIVATIONS:
            return "tanh", self.threshold_tanh_min, self.threshold_tanh_max
        if collection == CollectionKeys.SIGMOID_ACTIVATIONS:
            return "sigmoid", self.threshold_sigmoid_min, self.threshold_sigmoid_max
        if "tanh" in lowered:
            return "tanh", self.threshold_tanh_min, self.threshold_tanh_max
        if "sigmoid" in lowered:
            return "sigmoid", self.threshold_sigmoid_min, self.threshold_sigmoid_max
        return None

    def _flat_outside(self, name: str, collection: str):
        """(type, min, max) where ``name`` is the input of a piecewise-linear layer of ``collection`` (a
        Hardtanh, a Hardsigmoid), else None; looked up once per tensor."""
        if name not in self._piecewise:
            from smdebug.core.activations import activation_layers

            self._piecewise[name] = None
            names = [name]
            for layer in (activation_layers(self.base_trial) or {}).get(collection, ()):
                if layer.input_names(names):
                    self._piecewise[name] = piecewise_linear_range(layer.type)
                    break
        return self._piecewise[name]

    def tensors(self) -> Dict[str, str]:
        """``{name: collection the name was selected by, or ""}``."""
        selected = {n: "" for n in select_tensors(self.base_trial, [], self.tensor_regex)}
        selected.update(collection_tensors(self.base_trial, self.collection_names, "inputs"))
        return dict(sorted(selected.items()))

    def invoke_at_step(self, step):
        need, judged, short = self.min_samples, False, []
        tensors = self.tensors()
        ev = self.evaluation
        if not tensors and ev.absent_by_design and not any(ev.wanted.values()):
            # the hook found no tanh or sigmoid layer: where the model has recurrent cells, say where they are
            recurrent = recurrent_layers(self.base_trial)
            if recurrent:
                self.not_applicable(
                    "the model's tanh and sigmoid units are inside recurrent cells (" + ", ".join(recurrent[:4])
                    + (", ..." if len(recurrent) > 4 else "") + "): their gates and states are computed inside "
                    "the cell, where the hook sees no activation to judge; the model has no tanh or sigmoid layer "
                    "of its own")
        for name, collection in tensors.items():
            bounds = self.bounds(name, collection)
            if bounds is None:
                if name not in self._warned:
                    self._warned.add(name)
                    self.logger.warning("%s: skipping %s: its name says neither tanh nor sigmoid", self.rule_name,
                                        name)
                continue
            kind, low, high = bounds
            values = batches_at(self.base_trial, name, step)
            for value in values:
                if value.ndim == 0 or value.size == 0 or value.dtype.kind not in "fiub":
                    continue

                def fits(earlier, value=value):
                    return earlier.shape[1:] == value.shape[1:]

                def enough(pooled):
                    return sum(v.shape[0] for v in pooled) >= need

                if len(values) == 1:
                    pooled, steps = self._pool.pool(name, step, value, fits, enough)
                else:  # several workers' batches of different shapes: each judged on its own
                    pooled, steps = [value], [step]
                samples = sum(v.shape[0] for v in pooled)
                if samples < need:
                    short.append((name, samples, len(pooled)))
                    continue
                judged = True
                units = np.concatenate([units_by_samples(v) for v in pooled], axis=0)
                out_percent = ((units < low) | (units > high)).mean(axis=0) * 100
                saturated = int((out_percent > 100 - self.threshold_inactivity).sum())
                layer_percent = 100.0 * saturated / units.shape[1]
                if layer_percent > self.threshold_layer:
                    return (f"{name}: {saturated} of {units.shape[1]} {kind} units ({layer_percent:.4g}%) "
                            f"outside [{low:g}, {high:g}] in > {100 - self.threshold_inactivity:g}% of "
                            f"{_pooled_label(units.shape[0], steps)} (threshold_layer {self.threshold_layer:g}%)")
        if short and not judged:
            name, samples, saves = short[0]
            self.not_evaluated(_too_few(name, samples, saves, need, self.threshold_inactivity))
        return False


#: ``Hardtanh(min_val=-1.0, max_val=1.0)``, as the PyTorch hook records a Hardtanh (its own bounds)
_HARDTANH = re.compile(r"^(\w+)\(min_val=([-+0-9.einf]+), max_val=([-+0-9.einf]+)\)$")


def piecewise_linear_range(recorded_type: str) -> Optional[Tuple[str, float, float]]:
    """(type, min, max) of the linear range of a piecewise-linear activation the hook recorded as
    ``recorded_type``, outside which it is flat and passes no gradient; None for any other type."""
    if recorded_type == "Hardsigmoid":  # relu6(x + 3) / 6: flat below -3 and above 3
        return "Hardsigmoid", -3.0, 3.0
    match = _HARDTANH.match(recorded_type)
    if match is None:
        return None
    try:
        low, high = float(match.group(2)), float(match.group(3))
    except ValueError:
        return None
    return (match.group(1), low, high) if low < high else None


def _check_regexes(rule: str, name: str, regexes: List[str]) -> None:
    for regex in regexes:
        try:
            re.compile(regex)
        except re.error as e:
            raise SMDebugValueError(f"{rule}: {name} has an invalid regex {regex!r}: {e}") from None
