"""Rules about the course of the loss: LossNotDecreasing, Overfit and Overtraining.

The small helpers at the top (which tensors are losses, cached saved-step lists, cached loss values) are
also used by the other training-progress rules of this package (WeightUpdateRatio,
PoorWeightInitialization).
"""

from __future__ import annotations

import bisect
import re
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from smdebug.core.modes import ModeKeys
from smdebug.exceptions import (
    MissingEventFile,
    ShapeUnavailableForStep,
    SMDebugValueError,
    TensorUnavailable,
    TensorUnavailableForStep,
)
from smdebug.rules.evaluation import looking_for, note_read
from smdebug.rules.params import as_bool, as_float, as_int, as_list
from smdebug.rules.rule import Rule

LOSSES = "losses"


# ----------------------------------------------------------------------------------------------------------
# helpers shared by the training-progress rules
# ----------------------------------------------------------------------------------------------------------
def parse_mode(rule: str, name: str, value) -> Optional[ModeKeys]:
    """A mode parameter: None/"" (automatic), a ModeKeys, or its name in any case ("train", "EVAL")."""
    if value is None or isinstance(value, ModeKeys):
        return value
    if isinstance(value, str):
        text = value.strip().upper()
        if text in ("", "NONE"):
            return None
        if text in ModeKeys.__members__:
            return ModeKeys[text]
    raise SMDebugValueError(
        f"{rule}: {name} must be one of {', '.join(ModeKeys.__members__)} (or empty for automatic), got {value!r}")


class SavedSteps:
    """Per-tensor lists of saved steps (and loss values), cached while the trial knows of no new steps.

    Rules run at every step; asking a Tensor for its steps walks the whole run each time, so the lists are
    kept until the trial has seen a new index file (number of steps, last complete step or end of training
    changed). Values of saved steps never change, so scalar values are kept for the rule's lifetime.
    """

    def __init__(self, trial):
        self.trial = trial
        self._key = None
        self._steps: Dict[Tuple[str, ModeKeys], List[int]] = {}
        self._scalars: Dict[Tuple[str, int, ModeKeys], Optional[float]] = {}

    def _fresh(self) -> None:
        t = self.trial
        key = (len(t.steps(show_incomplete_steps=True)), t.last_complete_step, t.loaded_all_steps)
        if key != self._key:
            self._key = key
            self._steps.clear()

    def steps(self, name: str, mode: ModeKeys = ModeKeys.GLOBAL) -> List[int]:
        """Complete steps (mode steps for a mode, global steps for GLOBAL) where ``name`` was saved."""
        self._fresh()
        steps = self._steps.get((name, mode))
        if steps is None:
            try:
                steps = self.trial.tensor(name).steps(mode=mode)
            except TensorUnavailable:
                steps = []
            self._steps[(name, mode)] = steps
        return steps

    def mean(self, name: str, step: int, mode: ModeKeys = ModeKeys.GLOBAL) -> Optional[float]:
        """Mean of the tensor's values at ``step`` as a float (a loss saved per sample counts as its mean);
        None if only reductions or nothing were saved there."""
        key = (name, step, mode)
        if key not in self._scalars:
            try:
                value = np.asarray(self.trial.tensor(name).value(step, mode=mode), dtype=np.float64)
                self._scalars[key] = float(value.mean()) if value.size else None
            except MissingEventFile:
                raise  # saved, but its file is gone: an error, not "only reductions saved"
            except (TensorUnavailableForStep, TypeError, ValueError):
                self._scalars[key] = None
        elif self._scalars[key] is not None:
            note_read(name)  # judged again from the value read earlier
        return self._scalars[key]


def auto_mode(saved: SavedSteps, name: str, mode: Optional[ModeKeys]) -> ModeKeys:
    """``mode`` if given; otherwise TRAIN when the tensor has TRAIN-mode saves, else GLOBAL."""
    if mode is not None:
        return mode
    return ModeKeys.TRAIN if saved.steps(name, ModeKeys.TRAIN) else ModeKeys.GLOBAL


def step_in_mode(trial, step: int, mode: ModeKeys) -> Optional[int]:
    """The mode step of global step ``step`` if that step belongs to ``mode`` (GLOBAL: the step itself)."""
    if mode == ModeKeys.GLOBAL:
        return step
    step_mode, mode_step = trial.mode_modestep(step)
    return mode_step if step_mode == mode else None


def contains(sorted_steps: Sequence[int], step: int) -> bool:
    i = bisect.bisect_left(sorted_steps, step)
    return i < len(sorted_steps) and sorted_steps[i] == step


def mode_label(mode: ModeKeys) -> str:
    return "step" if mode == ModeKeys.GLOBAL else f"{mode.name} step"


class LossSelection:
    """Which tensors are losses: named collections and regexes, plus the ``losses`` collection; when
    nothing was asked for explicitly and the run has no loss collection, every scalar tensor."""

    def __init__(self, trial, collection_names: List[str], tensor_regex: List[str], use_losses_collection: bool,
                 scalar_fallback: bool = True):
        self.trial = trial
        self.collection_names = collection_names
        self.regexes = [re.compile(r) for r in tensor_regex]
        self.use_losses_collection = use_losses_collection
        self.scalar_fallback = scalar_fallback and not (collection_names or tensor_regex)
        self._cached: Optional[Tuple[int, List[str]]] = None
        self._is_scalar: Dict[str, bool] = {}

    def names(self) -> List[str]:
        all_names = self.trial.tensor_names()
        if self._cached is None or self._cached[0] != len(all_names):
            self._cached = (len(all_names), *self._choose(all_names))
        for what, found in self._cached[2]:
            looking_for(what, found)
        return self._cached[1]

    def _choose(self, all_names: List[str]):
        """(loss names, [(what was looked for, what matched)])."""
        collections = self.trial.collections()
        wanted = list(self.collection_names)
        if self.use_losses_collection and LOSSES not in wanted and (LOSSES in collections or not wanted):
            wanted.append(LOSSES)
        chosen, looked = set(), []
        for cname in wanted:
            coll = collections.get(cname)
            found = [n for n in all_names if coll.matches(n)] if coll is not None else []
            looked.append((f"collection {cname!r}", found))
            chosen.update(found)
        for r in self.regexes:
            found = [n for n in all_names if r.search(n)]
            looked.append((f"tensors matching {r.pattern!r}", found))
            chosen.update(found)
        if not chosen and self.scalar_fallback:
            chosen = {n for n in all_names if self._scalar(n)}
            looked.append(("scalar tensors (no loss collection or regex)", sorted(chosen)))
        return sorted(chosen), looked

    def _scalar(self, name: str) -> bool:
        if name not in self._is_scalar:
            try:
                tensor = self.trial.tensor(name)
                steps = tensor.steps(show_incomplete_steps=True)
                self._is_scalar[name] = bool(steps) and int(np.prod(tensor.shape(steps[0]))) == 1
            except MissingEventFile:
                raise
            except (TensorUnavailableForStep, ShapeUnavailableForStep):  # only reductions saved: no shape
                self._is_scalar[name] = False
        return self._is_scalar[name]


# ----------------------------------------------------------------------------------------------------------
# LossNotDecreasing
# ----------------------------------------------------------------------------------------------------------
class LossNotDecreasing(Rule):
    """Fires when a loss did not decrease enough (or rose too much) over ``num_steps`` steps.

    **Losses inspected.** The union of the tensors of ``collection_names`` and those matching
    ``tensor_regex``, plus the ``losses`` collection when ``use_losses_collection`` is true and the run has
    one. When neither ``collection_names`` nor ``tensor_regex`` is given and that yields nothing, every
    scalar (one-value) tensor of the run is inspected. An explicit selection is never widened. A loss saved
    with several values (per sample) is reduced by its mean.

    **Steps.** Each loss is followed in one mode: ``mode`` if given, otherwise TRAIN when the loss has
    TRAIN-mode saves, else GLOBAL; ``num_steps`` counts steps of that mode. The schedule depends only on the
    loss's saved steps, not on where the rule was started: the loss is evaluated at a saved step ``s`` that
    has a saved step ``p <= s - num_steps`` (``p`` = the newest such step); after an evaluation at ``s`` the
    next one is at the first saved step ``>= s + num_steps``. Example: saved every 3 steps, num_steps 10 ->
    evaluations at 12 (vs 0), 24 (vs 12), 36 (vs 24), ...

    **Condition.** With ``tol`` = ``increase_threshold_percent`` if given, else ``diff_percent``::

        fires  iff  loss[s] >= loss[p] + |loss[p]| * tol / 100

    so ``tol = 0`` means "did not decrease", ``tol > 0`` tolerates a rise of less than ``tol`` percent and
    ``tol < 0`` demands a decrease of more than ``|tol|`` percent. (``|loss[p]|`` keeps the meaning for
    negative losses.)

    :param collection_names: collections holding losses (list or comma-separated string). Default None.
    :param tensor_regex: regexes of loss tensor names (list or comma-separated string). Default None.
    :param use_losses_collection: also inspect the ``losses`` collection. Default ``"True"``.
    :param num_steps: distance in steps between the compared losses (>= 1). Default ``"10"``.
    :param diff_percent: the tolerance ``tol`` above, in percent. Default ``"0.0"``.
    :param increase_threshold_percent: newer name of the same tolerance; used instead of ``diff_percent``
        when given. Giving both with different values is an error (a ``diff_percent`` of 0 -- the default --
        never conflicts). Default None.
    :param mode: ``"TRAIN"``, ``"EVAL"``, ``"PREDICT"`` or ``"GLOBAL"``; None/empty for automatic (above).
    """

    def __init__(self, base_trial, collection_names=None, tensor_regex=None, use_losses_collection="True",
                 num_steps="10", diff_percent="0.0", increase_threshold_percent=None, mode=None,
                 other_trials=None, action_str=None):
        super().__init__(base_trial, other_trials=other_trials, action_str=action_str)
        name = self.rule_name
        self.collection_names = as_list(name, "collection_names", collection_names)
        self.tensor_regex = as_list(name, "tensor_regex", tensor_regex)
        self.use_losses_collection = as_bool(name, "use_losses_collection", use_losses_collection)
        self.num_steps = as_int(name, "num_steps", num_steps, minimum=1)
        self.diff_percent = as_float(name, "diff_percent", diff_percent)
        self.increase_threshold_percent = as_float(name, "increase_threshold_percent", increase_threshold_percent,
                                                   allow_none=True)
        if (self.increase_threshold_percent is not None and self.diff_percent != 0
                and self.diff_percent != self.increase_threshold_percent):
            raise SMDebugValueError(
                f"{name}: diff_percent ({self.diff_percent:g}) and increase_threshold_percent "
                f"({self.increase_threshold_percent:g}) are two names of one tolerance; give one of them")
        self.tolerance_percent = (self.increase_threshold_percent if self.increase_threshold_percent is not None
                                  else self.diff_percent)
        for pname, pvalue in (("diff_percent", self.diff_percent),
                              ("increase_threshold_percent", self.increase_threshold_percent)):
            if pvalue is not None and not np.isfinite(pvalue):
                raise SMDebugValueError(f"{name}: {pname} must be a finite number, got {pvalue!r}")
        self.mode = parse_mode(name, "mode", mode)
        for bad in (r for r in self.tensor_regex if _bad_regex(r)):
            raise SMDebugValueError(f"{name}: tensor_regex {bad!r} is not a valid regular expression")
        self._saved = SavedSteps(base_trial)
        self._losses = LossSelection(base_trial, self.collection_names, self.tensor_regex,
                                     self.use_losses_collection)
        self._schedules: Dict[Tuple[str, ModeKeys], Tuple[List[int], Dict[int, int]]] = {}

    def _schedule(self, name: str, mode: ModeKeys) -> Dict[int, int]:
        """{evaluated step: compared step} for one loss, from its saved steps alone."""
        steps = self._saved.steps(name, mode)
        cached = self._schedules.get((name, mode))
        if cached is not None and cached[0] is steps:
            return cached[1]
        schedule: Dict[int, int] = {}
        last = None
        for s in steps:
            if last is not None and s < last + self.num_steps:
                continue
            i = bisect.bisect_right(steps, s - self.num_steps)
            if i == 0:
                continue
            schedule[s] = steps[i - 1]
            last = s
        self._schedules[(name, mode)] = (steps, schedule)
        return schedule

    def invoke_at_step(self, step):
        judged = False
        for name in self._losses.names():
            mode = auto_mode(self._saved, name, self.mode)
            s = step_in_mode(self.base_trial, step, mode)
            if s is None:
                continue
            p = self._schedule(name, mode).get(s)
            if p is None:
                continue
            now, then = self._saved.mean(name, s, mode), self._saved.mean(name, p, mode)
            if now is None or then is None:
                continue
            judged = True
            tol = self.tolerance_percent
            limit = then + abs(then) * tol / 100.0
            if now >= limit:
                change = (now - then) / abs(then) * 100.0 if then else float("inf") if now > then else 0.0
                what = "did not decrease" if tol == 0 else (
                    f"rose by at least {tol:g}%" if tol > 0 else f"did not decrease by more than {-tol:g}%")
                label = mode_label(mode)
                return (f"{name} {what} over {self.num_steps} steps: {then:.6g} at {label} {p} -> {now:.6g} at "
                        f"{label} {s} ({change:+.3g}%)")
        if not judged:
            self.not_evaluated(f"needs two saves of a loss at least num_steps={self.num_steps} steps apart"
                               + (f" in mode {self.mode.name}" if self.mode is not None else ""))
        return False


def _bad_regex(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return True
    return False


# ----------------------------------------------------------------------------------------------------------
# Overfit
# ----------------------------------------------------------------------------------------------------------
class Overfit(Rule):
    """Fires when the validation (EVAL) loss drifts above the training (TRAIN) loss.

    **Losses.** Tensors matching ``tensor_regex``; without it, the ``losses`` collection (or, if the run
    has none, every scalar tensor). Each loss needs TRAIN-mode and EVAL-mode saves; a loss saved per sample
    counts as its mean.

    **Evaluations.** Every global step ``g >= start_step`` at which the loss was saved in EVAL mode is one
    evaluation. The saved steps of the loss, in global order, form alternating *passes*: runs of EVAL
    steps separated by runs of TRAIN steps (steps of other modes are ignored). At ``g``::

        val   = mean of the EVAL losses of the current pass, from its first step up to g
        train = mean of the TRAIN losses saved between the previous EVAL pass and the current one
        ratio = (val - train) / |train|

    An evaluation with no TRAIN loss before its pass, or with ``train == 0``, is skipped (it neither counts
    nor breaks a streak). With one EVAL step per evaluation pass (the usual schedule) ``val`` is simply that
    step's loss; with several, every step of the pass is one evaluation on the running mean of the pass.

    **Condition.** Fires at ``g`` when ``ratio > ratio_threshold`` at ``g`` and at the ``patience - 1``
    evaluations before it (counted from ``start_step``); so it fires again at every further evaluation
    while the streak lasts. The verdict depends only on the saved data, not on where the rule was started.

    :param tensor_regex: regexes of the loss tensors (list or comma-separated string). Default None.
    :param start_step: first global step evaluated. Default ``"0"``.
    :param patience: consecutive evaluations needed (>= 1). Default ``"1"``.
    :param ratio_threshold: largest tolerated relative excess of validation over training loss.
        Default ``"0.1"`` (10 %).
    """

    def __init__(self, base_trial, tensor_regex=None, start_step="0", patience="1", ratio_threshold="0.1",
                 other_trials=None, action_str=None):
        super().__init__(base_trial, other_trials=other_trials, action_str=action_str)
        name = self.rule_name
        self.tensor_regex = as_list(name, "tensor_regex", tensor_regex)
        for bad in (r for r in self.tensor_regex if _bad_regex(r)):
            raise SMDebugValueError(f"{name}: tensor_regex {bad!r} is not a valid regular expression")
        self.start_step = as_int(name, "start_step", start_step, minimum=0)
        self.patience = as_int(name, "patience", patience, minimum=1)
        self.ratio_threshold = as_float(name, "ratio_threshold", ratio_threshold)
        self._saved = SavedSteps(base_trial)
        self._losses = LossSelection(base_trial, [], self.tensor_regex, use_losses_collection=not self.tensor_regex,
                                     scalar_fallback=not self.tensor_regex)
        self._results: Dict[Tuple[str, int], Optional[Tuple[float, float, float]]] = {}

    def _evaluate(self, name: str, steps: List[int], i: int) -> Optional[Tuple[float, float, float]]:
        """(val, train, ratio) of the evaluation at ``steps[i]`` (an EVAL step), or None if skipped."""
        key = (name, steps[i])
        if key in self._results:
            return self._results[key]
        mode_of = self.base_trial.mode
        evals, trains = [], []
        j = i
        while j >= 0 and mode_of(steps[j]) != ModeKeys.TRAIN:
            if mode_of(steps[j]) == ModeKeys.EVAL:
                evals.append(steps[j])
            j -= 1
        while j >= 0 and mode_of(steps[j]) != ModeKeys.EVAL:
            if mode_of(steps[j]) == ModeKeys.TRAIN:
                trains.append(steps[j])
            j -= 1
        result = None
        val_values = [v for v in (self._saved.mean(name, g) for g in evals) if v is not None]
        train_values = [v for v in (self._saved.mean(name, g) for g in trains) if v is not None]
        if val_values and train_values:
            val, train = float(np.mean(val_values)), float(np.mean(train_values))
            if train != 0:
                result = (val, train, (val - train) / abs(train))
        self._results[key] = result
        return result

    def invoke_at_step(self, step):
        if step < self.start_step or self.base_trial.mode(step) != ModeKeys.EVAL:
            self.not_evaluated(f"judges at EVAL-mode saves of a loss from start_step={self.start_step}, "
                               "against the TRAIN-mode saves before them")
            return False
        judged = False
        for name in self._losses.names():
            steps = self._saved.steps(name)
            i = bisect.bisect_left(steps, step)
            if i >= len(steps) or steps[i] != step:
                continue
            current = self._evaluate(name, steps, i)
            if current is None:
                continue
            judged = True
            if not current[2] > self.ratio_threshold:
                continue
            streak = 1
            j = i - 1
            while streak < self.patience and j >= 0 and steps[j] >= self.start_step:
                if self.base_trial.mode(steps[j]) == ModeKeys.EVAL:
                    earlier = self._evaluate(name, steps, j)
                    if earlier is not None:
                        if not earlier[2] > self.ratio_threshold:
                            break
                        streak += 1
                j -= 1
            if streak >= self.patience:
                val, train, ratio = current
                return (f"{name}: validation loss {val:.4g} is {ratio:.1%} above training loss {train:.4g} "
                        f"(ratio_threshold {self.ratio_threshold:g}) for {self.patience} evaluation(s)")
        if not judged:
            self.not_evaluated("needs EVAL-mode saves of a loss with non-zero TRAIN-mode saves before them")
        return False


# ----------------------------------------------------------------------------------------------------------
# Overtraining
# ----------------------------------------------------------------------------------------------------------
class NoImprovement:
    """For one loss in one mode: after each saved step, how many saves since the best loss last improved.

    A save improves on the best loss ``b`` when ``v < b`` and ``b - v >= delta``. The first save sets the
    best. Computed incrementally along the saved steps and kept, so the answer at a step does not depend on
    where the rule started.
    """

    def __init__(self, delta: float):
        self.delta = delta
        self.steps: List[int] = []
        self.waits: List[int] = []
        self.bests: List[Tuple[float, int]] = []  # (best value, its step) after each save
        self._source: Optional[List[int]] = None

    def at(self, saved: SavedSteps, name: str, mode: ModeKeys, steps: List[int], step: int
           ) -> Optional[Tuple[int, float, int]]:
        """(saves without improvement, best, best step) after ``step``; None if ``step`` is not saved."""
        i = bisect.bisect_left(steps, step)
        if i >= len(steps) or steps[i] != step:
            return None
        if steps is not self._source:
            k = len(self.steps)
            if k > len(steps) or self.steps != steps[:k]:  # steps appeared before the ones processed
                self.steps, self.waits, self.bests = [], [], []
            self._source = steps
        k = len(self.steps)
        for s in steps[k:i + 1]:
            value = saved.mean(name, s, mode)
            if not self.bests:
                best, best_step, wait = (value, s, 0) if value is not None else (None, None, 0)
            else:
                (best, best_step), wait = self.bests[-1], self.waits[-1]
                if value is None:
                    pass  # only reductions saved: not a loss save
                elif best is None or (value < best and best - value >= self.delta):
                    best, best_step, wait = value, s, 0
                else:
                    wait += 1
            self.steps.append(s)
            self.waits.append(wait)
            self.bests.append((best, best_step))
        best, best_step = self.bests[i]
        return self.waits[i], best, best_step


class Overtraining(Rule):
    """Early stopping as a rule: fires when the training or the validation loss stopped improving.

    **Losses.** The ``losses`` collection (or, if the run has none, every scalar tensor); a loss saved per
    sample counts as its mean. TRAIN-mode saves are the training loss and EVAL-mode saves the validation
    loss; a loss saved without modes (GLOBAL only) counts as a training loss.

    **Condition**, separately for the training and the validation loss, along its saves in order: the
    first save sets the best loss ``b``; a later save ``v`` is an *improvement* when ``v < b`` and
    ``b - v >= delta`` (absolute, like Keras' ``EarlyStopping(min_delta=...)``; ``v`` becomes the best).
    The rule fires at a TRAIN save when the last ``patience_train`` TRAIN saves were no improvement, and at
    an EVAL save when the last ``patience_validation`` EVAL saves were no improvement -- and again at every
    further save without improvement.

    :param patience_train: TRAIN saves without improvement (>= 1). Default ``"5"``.
    :param patience_validation: EVAL saves without improvement (>= 1). Default ``"10"``.
    :param delta: smallest decrease that counts as an improvement (absolute, >= 0). Default ``"0.01"``.
    """

    def __init__(self, base_trial, patience_train="5", patience_validation="10", delta="0.01", other_trials=None,
                 action_str=None):
        super().__init__(base_trial, other_trials=other_trials, action_str=action_str)
        name = self.rule_name
        self.patience_train = as_int(name, "patience_train", patience_train, minimum=1)
        self.patience_validation = as_int(name, "patience_validation", patience_validation, minimum=1)
        self.delta = as_float(name, "delta", delta)
        if not (self.delta >= 0 and np.isfinite(self.delta)):
            raise SMDebugValueError(f"{name}: delta must be a finite number >= 0, got {self.delta!r}")
        self._saved = SavedSteps(base_trial)
        self._losses = LossSelection(base_trial, [], [], use_losses_collection=True)
        self._trackers: Dict[Tuple[str, ModeKeys], NoImprovement] = {}

    def invoke_at_step(self, step):
        step_mode, mode_step = self.base_trial.mode_modestep(step)
        judged = False
        for name in self._losses.names():
            has_modes = bool(self._saved.steps(name, ModeKeys.TRAIN) or self._saved.steps(name, ModeKeys.EVAL))
            if has_modes:
                if step_mode not in (ModeKeys.TRAIN, ModeKeys.EVAL):
                    continue
                mode, s = step_mode, mode_step
            else:
                mode, s = ModeKeys.GLOBAL, step
            tracker = self._trackers.setdefault((name, mode), NoImprovement(self.delta))
            state = tracker.at(self._saved, name, mode, self._saved.steps(name, mode), s)
            if state is None or state[1] is None:
                continue
            judged = True
            note_read(name)
            wait, best, best_step = state
            patience = self.patience_validation if mode == ModeKeys.EVAL else self.patience_train
            if wait >= patience:
                kind = "validation" if mode == ModeKeys.EVAL else "training"
                return (f"{name}: {kind} loss has not improved by {self.delta:g} for {wait} saves "
                        f"(best {best:.6g} at {mode_label(mode)} {best_step}; patience {patience})")
        if not judged:
            self.not_evaluated("needs saves of a loss (TRAIN, EVAL or without modes)")
        return False
