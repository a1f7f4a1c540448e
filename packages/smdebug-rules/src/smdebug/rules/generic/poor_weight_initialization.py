"""PoorWeightInitialization: symptoms of badly scaled initial weights in the first steps of training."""

from __future__ import annotations

import re
from typing import Dict, Optional, Tuple

import numpy as np

from smdebug.core.modes import ModeKeys
from smdebug.exceptions import MissingEventFile, SMDebugValueError, TensorUnavailableForStep
from smdebug.rules.evaluation import looking_for
from smdebug.rules.generic.learning_pace import LearningPace
from smdebug.rules.generic.loss_rules import (
    LossSelection,
    NoImprovement,
    SavedSteps,
    auto_mode,
    contains,
    mode_label,
    step_in_mode,
)
from smdebug.rules.generic.selection import NamePattern, collection_tensors, is_bias
from smdebug.rules.params import as_float, as_int, as_list
from smdebug.rules.rule import Rule

GRADIENTS = "gradients"
#: a depthwise convolution's kernel as Keras names it (``.../depthwise_kernel``, ``...:0`` in TF 2's Keras)
_DEPTHWISE = re.compile(r"depthwise_kernel(?::\d+)?$")


class PoorWeightInitialization(Rule):
    """Fires, during the first ``steps`` global steps only (steps ``0 .. steps-1``), when one of three
    symptoms of a poor weight initialisation shows:

    (a) **activation inputs**: among the ``n`` tensors matching ``activation_inputs_regex`` saved at the
        step (one per layer, at least two), ``(max(variance) / min(variance)) ** (1 / (n - 1)) > threshold``:
        the ratio per layer, as a geometric mean over the ``n - 1`` layers between (a zero smallest variance
        with a non-zero largest one counts as an infinite ratio). A badly scaled initialisation multiplies or
        divides the variance of pre-activations by about the fan-in at every layer (weights drawn from
        N(0, 1): about half the layer's width, 64 per layer at width 128; weights 100x too small: thousands).
        Sound initialisations do not keep it constant either, and the test cannot tell growth from shrinkage
        (the run does not record the layers' order): PyTorch's default weights with a ReLU shrink it about
        6-fold per layer, and on two- and three-layer convolutional nets 4 to 32 channels wide, with and
        without pooling, at twelve seeds, we measured per-layer ratios with a median of 6 and a 90th
        percentile of 13 over two layers (one ratio, dominated by a first layer with a fan-in of 9, which
        varies widely from seed to seed: past 25 only at 4 channels), at most 9 over three layers; Kaiming's
        or Glorot's weights at most 19 over two layers and 27 over three (4 channels again). Hence the default
        of 25: a network initialised as its framework does is flagged for its usual shrinkage only when its
        layers are a handful of units wide (the earlier default of 10 flagged a healthy PyTorch CNN 16
        channels wide at 11), and one drawn from N(0, 1) still is, from about 64 units wide.
        (The original compared the extremes directly, which flagged any healthy network 3 layers deep.)
        Keras' depthwise kernels (DepthwiseConv2D, SeparableConv2D) start about channels/2 times too small for
        the inputs each output sees (their initialisers count the channels in the fan-in): without
        normalisation a stack of them shrinks the signal past the threshold, and its training stalls at first;
        the finding then names them and the scale they pass on (PyTorch's grouped convolutions are initialised
        for their true fan-in and are not flagged).
    (b) **gradients**: among the gradients of the layers' weights (tensors of the ``gradients`` collection
        with at least 2 dimensions; biases, whatever their rank (see VanishingGradient), and normalisation
        parameters are left out: a bias followed by BatchNorm gets no gradient by construction), with
        ``spread(g) = percentile(g', 95) - percentile(g', 5)`` (numpy's linear percentiles) over ``g'``, the
        entries of ``g`` that are not zero -- an embedding's rows of tokens absent from the batch, and the
        columns of input units that were off for the whole batch (a squeeze-and-excitation bottleneck's ReLUs,
        fed channel means), get no gradient, which says nothing of the initialisation -- some tensor has::

            spread(g) < distribution_range   or   spread(g) < relative_range * max over tensors of spread

        or every weight gradient has a spread of 0 (constant initialisation: every unit of a layer gets the
        same gradient). The relative test is scale-free (a converging model's gradients are small
        everywhere; a badly initialised layer's are small next to the others'). A gradient that is exactly
        zero at the step, while others are not, is left out of it: the weights behind a layer initialised at
        zero on purpose get none at the first step (LoRA's zero ``B`` leaves ``A`` none; a residual branch whose
        last scale starts at zero), as do those behind units that are off for the whole batch, which is
        DeadRelu's finding. Nor does a narrow gradient count while its weight keeps learning, when the run
        saved the weights: at least ``learning_fraction`` of the relative pace of the fastest weight whose
        gradient is not in question (:mod:`~smdebug.rules.generic.learning_pace`: Adam-style optimizers move a
        transformer's small-initialised query and key projections, whose gradients are each proportional to the
        other's weights, at the others' pace);
    (c) **loss**: a loss (``losses`` collection; TRAIN-mode saves if it has any, else all saves) has not
        gone below its lowest earlier value for ``patience`` consecutive saves (only when ``patience`` is
        given: off by default, since a loss held flat by a learning-rate warmup looks the same in the first
        steps; LossNotDecreasing judges a loss that does not fall), and is not below its first
        save's value either (a minibatch loss that made progress but is noisy is not stuck).

    Checks run in this order at each step; the reason names the first one met. Variances and percentiles
    are taken over all values of a tensor (batch included).

    :param activation_inputs_regex: regex (or list of regexes) of the activation-input tensors.
        Default ``".*relu_input"``; the empty string for none.
    :param collection_names: comma-separated collections of activation layers whose *inputs* are also
        activation inputs (the hooks put every ReLU layer in ``relu_activations`` by its type and record which
        of its tensors are inputs). Default ``"relu_activations"``.
    :param threshold: largest tolerated ratio of activation-input variances per layer (> 0). Default
        ``"25.0"`` (10 before: see (a)).
    :param distribution_range: smallest tolerated 5th-95th percentile spread of a gradient (absolute, >= 0).
        Default ``"0"`` (the original's 0.001 flagged recurrent weights and any model whose gradients are
        small; give it to get the absolute test back).
    :param relative_range: smallest tolerated spread of a weight gradient relative to the largest spread at
        the step (>= 0). Default ``"0.001"``.
    :param patience: consecutive loss saves without a new lowest loss (>= 0; 0: the loss test is off).
        Default ``"0"`` (the original's 5 fired on healthy runs with a learning-rate warmup).
    :param steps: number of initial global steps examined (>= 1). Default ``"10"``.
    :param learning_fraction: a weight with a narrow gradient that moves at least this fraction of the fastest
        weight's relative pace is still learning (0 turns the check off). Default ``"0.01"``.
    """

    def __init__(self, base_trial, activation_inputs_regex=".*relu_input", threshold="25.0",
                 distribution_range="0", patience="0", steps="10", collection_names="relu_activations",
                 relative_range="0.001", learning_fraction="0.01", other_trials=None, action_str=None):
        super().__init__(base_trial, other_trials=other_trials, action_str=action_str)
        name = self.rule_name
        regexes = ([activation_inputs_regex] if isinstance(activation_inputs_regex, str)
                   else as_list(name, "activation_inputs_regex", activation_inputs_regex))
        regexes = [r for r in regexes if r.strip()]
        self.collection_names = as_list(name, "collection_names", collection_names)
        if not (regexes or self.collection_names):
            raise SMDebugValueError(f"{name}: give activation_inputs_regex or collection_names")
        try:
            self._activation_regexes = [NamePattern(r, name) for r in regexes]
        except re.error as e:
            raise SMDebugValueError(f"{name}: activation_inputs_regex is not a valid regular expression: {e}") from None
        self.activation_inputs_regex = activation_inputs_regex
        self.threshold = as_float(name, "threshold", threshold)
        if not self.threshold > 0:
            raise SMDebugValueError(f"{name}: threshold must be > 0, got {self.threshold!r}")
        self.distribution_range = as_float(name, "distribution_range", distribution_range)
        if not self.distribution_range >= 0:
            raise SMDebugValueError(f"{name}: distribution_range must be >= 0, got {self.distribution_range!r}")
        self.relative_range = as_float(name, "relative_range", relative_range)
        if not (self.relative_range >= 0 and np.isfinite(self.relative_range)):
            raise SMDebugValueError(f"{name}: relative_range must be a finite number >= 0, got {relative_range!r}")
        self.patience = as_int(name, "patience", patience, minimum=0)
        self.steps = as_int(name, "steps", steps, minimum=1)
        self.learning_fraction = as_float(name, "learning_fraction", learning_fraction)
        if not (0 <= self.learning_fraction <= 1):
            raise SMDebugValueError(f"{name}: learning_fraction must be in [0, 1], got {learning_fraction!r}")
        self._pace = LearningPace(base_trial)
        self._saved = SavedSteps(base_trial)
        self._losses = LossSelection(base_trial, [], [], use_losses_collection=True, scalar_fallback=False)
        self._trackers: Dict[Tuple[str, ModeKeys], NoImprovement] = {}

    def _value(self, name: str, step: int) -> Optional[np.ndarray]:
        try:
            value = np.asarray(self.base_trial.tensor(name).value(step), dtype=np.float64)
        except MissingEventFile:
            raise  # saved, but its file is gone: an error, not "not saved"
        except (TensorUnavailableForStep, TypeError, ValueError):  # not saved here, or not numbers
            return None
        return value

    def _activations(self, names, step) -> Optional[str]:
        variances = {}
        for regex in self._activation_regexes:
            looking_for(f"tensors matching {regex.pattern!r}", [n for n in names if regex.search(n)])
        by_collection = collection_tensors(self.base_trial, self.collection_names, "inputs")
        for name in names:
            if name in by_collection or any(r.search(name) for r in self._activation_regexes):
                value = self._value(name, step)
                if value is not None and value.size:
                    variances[name] = float(np.var(value))
        if len(variances) < 2:
            return None
        high = max(variances, key=variances.get)
        low = min(variances, key=variances.get)
        if variances[high] == 0 or not np.isfinite(variances[high]):
            return None
        ratio = variances[high] / variances[low] if variances[low] > 0 else float("inf")
        per_layer = ratio ** (1 / (len(variances) - 1))
        if per_layer > self.threshold:
            return (f"activation inputs: variance ratio {ratio:.4g} over {len(variances)} layers ({per_layer:.4g} per "
                    f"layer) > threshold {self.threshold:g} at step {step} ({high}: {variances[high]:.4g}, {low}: "
                    f"{variances[low]:.4g}){self._depthwise_scale()}")
        return None

    def _depthwise_scale(self) -> str:
        """What the finding adds when the run's depthwise kernels (Keras ``depthwise_kernel``, shape ``(height,
        width, channels, multiplier)``) start at a scale that passes on less than a third of their input's
        variance: ``taps * mean(w^2)``, ``taps = height * width``, the inputs each output sees. Keras' initialisers
        take a kernel's fan-in as height x width x channels, which for a depthwise kernel counts channels that no
        output sees: its default Glorot scale is about channels/2 times too small, and a stack of them shrinks the
        signal that much per layer (a Keras SeparableConv2D net at its defaults: 885-fold over two layers, and
        its loss stalled at log 10 for two epochs where the same net initialised for fan-in 9 learned at once).
        Every framework's default for a true fan-in passes on 1/3 (PyTorch) to 2 (He); PyTorch counts a grouped
        convolution's fan-in right."""
        notes = []
        for name in sorted(collection_tensors(self.base_trial, ["weights"])):
            if not _DEPTHWISE.search(name):
                continue
            steps = self.base_trial.tensor(name).steps()
            value = self._value(name, steps[0]) if steps else None  # (its first save: the initialisation)
            if value is None or value.ndim != 4 or value.shape[2] < 2:
                continue
            taps = int(value.shape[0] * value.shape[1])
            variance = float(np.mean(np.square(value)))
            if taps * variance < 1 / 3:
                notes.append(f"{name} {tuple(value.shape)}: {taps} taps x variance {variance:.3g} = "
                             f"{taps * variance:.2g}, the scale of a fan-in of {taps * int(value.shape[2])}")
        if not notes:
            return ""
        more = f" and {len(notes) - 3} more" if len(notes) > 3 else ""
        return ("; depthwise kernels initialised for a fan-in that counts their input channels (Keras' initialisers "
                "do: each output sees only height x width inputs) pass on a fraction of their input's variance: "
                + "; ".join(notes[:3]) + more + " (sound: 1/3 to 2; give depthwise_initializer the scale of a fan-in "
                "of height x width, e.g. stddev sqrt(2 / taps))")

    def _gradients(self, names, step) -> Optional[str]:
        coll = self.base_trial.collections().get(GRADIENTS)
        looking_for(f"collection {GRADIENTS!r}", [n for n in names if coll.matches(n)] if coll is not None else [])
        if coll is None:
            return None
        spreads = {}
        zero = set()  # gradients with no entry other than 0 at the step
        for name in names:
            if not coll.matches(name) or is_bias(name):
                continue
            value = self._value(name, step)
            if value is None or value.ndim < 2 or value.size < 2:
                continue
            entries = value[value != 0]
            if entries.size == 0:
                spreads[name] = 0.0
                zero.add(name)
                continue
            p5, p95 = np.percentile(entries, [5, 95])
            spreads[name] = float(p95 - p5)
        if not spreads:
            return None
        largest = max(spreads.values())
        if largest == 0 and len(spreads) >= 1:
            return (f"gradients: every weight gradient ({len(spreads)} tensors) is constant at step {step} "
                    "(spread 0: the units of each layer get the same gradient, as after a constant initialisation)")
        narrow = {name for name, spread in spreads.items()
                  if name not in zero and (spread < self.distribution_range or spread < self.relative_range * largest)}
        # the gradients not in question show how fast a layer learns at this step
        reference = {name: None for name in spreads if name not in narrow and name not in zero}
        for name, spread in spreads.items():
            if name not in narrow or self._pace.keeps_learning(name, None, step, reference, self.learning_fraction):
                continue
            if spread < self.distribution_range:
                return (f"gradients: {name} spans only {spread:.4g} between its 5th and 95th percentiles "
                        f"(< distribution_range {self.distribution_range:g}) at step {step}")
            return (f"gradients: {name} spans only {spread:.4g} between its 5th and 95th percentiles, "
                    f"{spread / largest:.3g} of the largest spread {largest:.4g} (< relative_range "
                    f"{self.relative_range:g}) at step {step}")
        return None

    def _loss(self, step) -> Optional[str]:
        if not self.patience:
            return None
        for name in self._losses.names():
            mode = auto_mode(self._saved, name, None)
            if mode is None:
                continue  # (evaluation only: no training whose loss could stall)
            s = step_in_mode(self.base_trial, step, mode)
            steps = self._saved.steps(name, mode)
            if s is None or not contains(steps, s):
                continue
            tracker = self._trackers.setdefault((name, mode), NoImprovement(0.0))
            state = tracker.at(self._saved, name, mode, steps, s)
            if state is None or state[1] is None:
                continue
            wait, best, best_step = state
            first = self._saved.mean(name, steps[0], mode)
            now = self._saved.mean(name, s, mode)
            if wait >= self.patience and (first is None or now is None or now >= first):
                return (f"loss: {name} has not gone below {best:.6g} ({mode_label(mode)} {best_step}) for {wait} "
                        f"saves (patience {self.patience}) at step {step}")
        return None

    def invoke_at_step(self, step):
        if step >= self.steps:
            self.not_evaluated(f"judges the first steps={self.steps} global steps only")
            return False
        names = self.base_trial.tensor_names(step=step)
        return self._activations(names, step) or self._gradients(names, step) or self._loss(step) or False
