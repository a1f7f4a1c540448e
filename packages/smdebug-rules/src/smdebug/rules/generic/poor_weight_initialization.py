"""PoorWeightInitialization: symptoms of badly scaled initial weights in the first steps of training."""

from __future__ import annotations

import re
from typing import Dict, Optional, Tuple

import numpy as np

from smdebug.core.modes import ModeKeys
from smdebug.exceptions import MissingEventFile, SMDebugValueError, TensorUnavailableForStep
from smdebug.rules.evaluation import looking_for
from smdebug.rules.generic.loss_rules import (
    LossSelection,
    NoImprovement,
    SavedSteps,
    auto_mode,
    contains,
    mode_label,
    step_in_mode,
)
from smdebug.rules.generic.selection import collection_tensors
from smdebug.rules.params import as_float, as_int, as_list
from smdebug.rules.rule import Rule

GRADIENTS = "gradients"


class PoorWeightInitialization(Rule):
    """Fires, during the first ``steps`` global steps only (steps ``0 .. steps-1``), when one of three
    symptoms of a poor weight initialisation shows:

    (a) **activation inputs**: among the tensors matching ``activation_inputs_regex`` saved at the step
        (one per layer, at least two), ``max(variance) / min(variance) > threshold`` (a zero smallest
        variance with a non-zero largest one counts as an infinite ratio);
    (b) **gradients**: a tensor of the ``gradients`` collection (with at least two values) has
        ``percentile(g, 95) - percentile(g, 5) < distribution_range`` (numpy's linear percentiles);
    (c) **loss**: a loss (``losses`` collection; TRAIN-mode saves if it has any, else all saves) has not
        gone below its lowest earlier value for ``patience`` consecutive saves.

    Checks run in this order at each step; the reason names the first one met. Variances and percentiles
    are taken over all values of a tensor (batch included).

    :param activation_inputs_regex: regex (or list of regexes) of the activation-input tensors.
        Default ``".*relu_input"``; the empty string for none.
    :param collection_names: comma-separated collections of activation layers whose *inputs* are also
        activation inputs (the hooks put every ReLU layer in ``relu_activations`` by its type and record which
        of its tensors are inputs). Default ``"relu_activations"``.
    :param threshold: largest tolerated ratio of activation-input variances (> 0). Default ``"10.0"``.
    :param distribution_range: smallest tolerated 5th-95th percentile spread of a gradient (>= 0).
        Default ``"0.001"``.
    :param patience: consecutive loss saves without a new lowest loss (>= 1). Default ``"5"``.
    :param steps: number of initial global steps examined (>= 1). Default ``"10"``.
    """

    def __init__(self, base_trial, activation_inputs_regex=".*relu_input", threshold="10.0",
                 distribution_range="0.001", patience="5", steps="10", collection_names="relu_activations",
                 other_trials=None, action_str=None):
        super().__init__(base_trial, other_trials=other_trials, action_str=action_str)
        name = self.rule_name
        regexes = ([activation_inputs_regex] if isinstance(activation_inputs_regex, str)
                   else as_list(name, "activation_inputs_regex", activation_inputs_regex))
        regexes = [r for r in regexes if r.strip()]
        self.collection_names = as_list(name, "collection_names", collection_names)
        if not (regexes or self.collection_names):
            raise SMDebugValueError(f"{name}: give activation_inputs_regex or collection_names")
        try:
            self._activation_regexes = [re.compile(r) for r in regexes]
        except re.error as e:
            raise SMDebugValueError(f"{name}: activation_inputs_regex is not a valid regular expression: {e}") from None
        self.activation_inputs_regex = activation_inputs_regex
        self.threshold = as_float(name, "threshold", threshold)
        if not self.threshold > 0:
            raise SMDebugValueError(f"{name}: threshold must be > 0, got {self.threshold!r}")
        self.distribution_range = as_float(name, "distribution_range", distribution_range)
        if not self.distribution_range >= 0:
            raise SMDebugValueError(f"{name}: distribution_range must be >= 0, got {self.distribution_range!r}")
        self.patience = as_int(name, "patience", patience, minimum=1)
        self.steps = as_int(name, "steps", steps, minimum=1)
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
        if ratio > self.threshold:
            return (f"activation inputs: variance ratio {ratio:.4g} > threshold {self.threshold:g} at step {step} "
                    f"({high}: {variances[high]:.4g}, {low}: {variances[low]:.4g})")
        return None

    def _gradients(self, names, step) -> Optional[str]:
        coll = self.base_trial.collections().get(GRADIENTS)
        looking_for(f"collection {GRADIENTS!r}", [n for n in names if coll.matches(n)] if coll is not None else [])
        if coll is None:
            return None
        for name in names:
            if not coll.matches(name):
                continue
            value = self._value(name, step)
            if value is None or value.size < 2:
                continue
            p5, p95 = np.percentile(value.ravel(), [5, 95])
            spread = float(p95 - p5)
            if spread < self.distribution_range:
                return (f"gradients: {name} spans only {spread:.4g} between its 5th and 95th percentiles "
                        f"(< distribution_range {self.distribution_range:g}) at step {step}")
        return None

    def _loss(self, step) -> Optional[str]:
        for name in self._losses.names():
            mode = auto_mode(self._saved, name, None)
            s = step_in_mode(self.base_trial, step, mode)
            steps = self._saved.steps(name, mode)
            if s is None or not contains(steps, s):
                continue
            tracker = self._trackers.setdefault((name, mode), NoImprovement(0.0))
            state = tracker.at(self._saved, name, mode, steps, s)
            if state is None or state[1] is None:
                continue
            wait, best, best_step = state
            if wait >= self.patience:
                return (f"loss: {name} has not gone below {best:.6g} ({mode_label(mode)} {best_step}) for {wait} "
                        f"saves (patience {self.patience}) at step {step}")
        return None

    def invoke_at_step(self, step):
        if step >= self.steps:
            self.not_evaluated(f"judges the first steps={self.steps} global steps only")
            return False
        names = self.base_trial.tensor_names(step=step)
        return self._activations(names, step) or self._gradients(names, step) or self._loss(step) or False
