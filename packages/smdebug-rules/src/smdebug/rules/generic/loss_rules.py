"""Rules comparing the training and the validation loss: Overfit and Overtraining.

The small helpers at the top (which tensors are losses, cached saved-step lists, cached loss values) are
also used by the other training-progress rules of this package (the loss-curve rules of
:mod:`~smdebug.rules.generic.curve_rules`, WeightUpdateRatio, PoorWeightInitialization).
"""

from __future__ import annotations

import bisect
import math
import re
from statistics import NormalDist
from typing import Dict, List, NamedTuple, Optional, Sequence, Set, Tuple

import numpy as np

from smdebug.core.modes import ModeKeys
from smdebug.core.run_info import evaluated_in_train_mode, framework_of, modes_set, trained_in_eval
from smdebug.exceptions import (
    InvalidWorker,
    MissingEventFile,
    ShapeUnavailableForStep,
    SMDebugValueError,
    StepUnavailable,
    TensorUnavailable,
    TensorUnavailableForStep,
)
from smdebug.rules.evaluation import looking_for, note_read
from smdebug.rules.generic.booster_generalisation import MIN_ROUNDS, BoosterGeneralisation, metric_sets
from smdebug.rules.generic.xgboost_rules import continued_rounds
from smdebug.rules.generic.selection import NamePattern, first_finding, worker_named, workers_at
from smdebug.rules.params import as_bool, as_float, as_int, as_list, in_range
from smdebug.rules.rule import Rule

LOSSES = "losses"
METRICS = "metrics"
#: collections holding parts of the model or of its data, never a loss however small: a one-element parameter
#: (a learnt temperature, a 1-unit output bias), its gradient, a scalar layer output (the scalar fallback took
#: these for losses when a run saved none: a CLIP-style logit scale's gradient "did not decrease")
MODEL_PART_COLLECTIONS = frozenset({
    "weights", "biases", "gradients", "inputs", "outputs", "layers", "optimizer_variables", "predictions",
    "labels", "loss_inputs", "hyperparameters", "feature_importance", "average_shap", "full_shap", "trees"})


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


def _no_validation(rule: Rule, losses: Sequence[str] = ()) -> None:
    """What a rule that compares validation with training says when it judged nothing, by what the run shows
    of its validation:

    * EVAL-mode steps were saved but none of ``losses`` at them: the run validated, its loss was not saved
      there (NotEvaluated, saying so: "no validation" would be false);
    * no EVAL-mode step was saved, but global steps between the TRAIN saves belong to no TRAIN step: steps
      of another mode (EVAL or PREDICT) in which nothing was saved (NotEvaluated, saying so);
    * a run without modes that holds metrics of several evaluation sets (XGBoost's ``train-logloss`` and
      ``validation-logloss``) did validate: NotEvaluated, saying why;
    * otherwise the run never validated: NotApplicable."""
    trial = rule.base_trial
    cache = rule.__dict__.setdefault("_validation_seen", {})
    # (this runs at every unjudged step: the run is read again only once it changed)
    count = (len(trial.tensor_names()), trial.last_step(), trial.loaded_all_steps, tuple(losses))
    if cache.get("count") != count:
        cache.update(count=count, said=_validation_said(trial, losses))
    kind, reason = cache["said"]
    if kind == "not_applicable":
        rule.not_applicable(reason)
    elif reason:
        rule.not_evaluated(reason)


def _validation_said(trial, losses: Sequence[str]) -> Tuple[str, Optional[str]]:
    """``(kind, reason)`` for :func:`_no_validation`: kind ``"not_applicable"`` or ``"not_evaluated"``."""
    if ModeKeys.EVAL in trial.modes():
        eval_steps = trial.steps(mode=ModeKeys.EVAL)
        if losses and not any(trial.tensor(n).steps(mode=ModeKeys.EVAL) for n in losses if trial.has_tensor(n)):
            return ("not_evaluated",
                    f"the run has {len(eval_steps)} saved EVAL-mode steps, but none of its losses "
                    f"({', '.join(sorted(losses)[:3])}{', ...' if len(losses) > 3 else ''}) was saved at them: "
                    "compute the validation loss with the loss the hook saves (a registered loss module, or "
                    "hook.save_scalar in EVAL mode), and let the EVAL save config include the losses collection")
        return ("not_evaluated", None)
    sets = _evaluation_sets(trial)
    if sets:
        return ("not_evaluated",
                f"the run has no EVAL-mode step; it holds metrics of several evaluation sets ({', '.join(sets)}), "
                "which the rule does not tell apart as training and validation (it compares EVAL-mode saves of a "
                "loss with TRAIN-mode ones)")
    unsaved = _other_mode_steps(trial)
    if unsaved:
        return ("not_evaluated",
                f"the run saved nothing in EVAL mode, but {unsaved} of the global steps between its TRAIN saves "
                "are no TRAIN step: steps of another mode (EVAL or PREDICT) in which nothing was saved (let the "
                "EVAL save config save the losses collection, e.g. save_interval=1 for modes.EVAL, and compute "
                "the validation loss with the loss the hook saves)")
    if "EVAL" in modes_set(trial):
        # the script did call set_mode(EVAL): "call set_mode" would be wrong advice. Its validation began no step
        # (another module than the registered one, e.g. an EMA copy, with a functional loss: probe 11a N3)
        return ("not_evaluated",
                "the run has no EVAL-mode step, though the script switched to EVAL mode (hook.set_mode): its "
                "validation was not saved. Either no EVAL step began -- one begins when the registered model runs "
                "in that mode or, after the switch, a registered loss module or hook.record_tensor_value does (a "
                "validation of another module, e.g. an EMA copy, with a functional loss does neither): compute the "
                "validation loss with the registered loss module or record it with hook.record_tensor_value -- or "
                "the EVAL save config saved none of them")
    if framework_of(trial) == "xgboost":
        return ("not_applicable", "the run evaluated no training data beside held-out data (no metric of two "
                                  f"evaluation sets; to have it judged, {validation_advice(trial)})")
    return ("not_applicable", f"the run has no validation: no EVAL-mode step (to have it judged, "
                              f"{validation_advice(trial)})")


def validation_advice(trial) -> str:
    """How a run of this framework gets validation the rules can judge: Keras' fit validates with
    ``validation_data=``/``validation_split=`` (its hook saves those passes in EVAL mode by itself); a loop of
    its own switches the hook's mode around its evaluation."""
    if framework_of(trial) == "tensorflow":
        return ("pass validation_data= or validation_split= to model.fit, so that it validates after each epoch "
                "while it trains")
    if framework_of(trial) == "xgboost":
        return ("evaluate the training data and held-out data at every round: the estimator's "
                "fit(eval_set=[(X_train, y_train), (X_val, y_val)]), or xgboost.train(evals=[(dtrain, 'train'), "
                "(dval, 'validation')])")
    return "call hook.set_mode(modes.EVAL) around evaluation during training"


def _other_mode_steps(trial) -> int:
    """How many global steps between the first and the last saved TRAIN step were of another mode: every step
    of every mode advances the global step, and a TRAIN step's mode step counts TRAIN steps only, so the
    difference of the two over that span is the steps of other modes, saved or not (0 without TRAIN saves;
    steps before the first TRAIN save are not counted: a resumed run's global step need not start at 0)."""
    train = trial.steps(mode=ModeKeys.TRAIN)
    if len(train) < 2:
        return 0
    first, last = trial.global_step(ModeKeys.TRAIN, train[0]), trial.global_step(ModeKeys.TRAIN, train[-1])
    if first is None or last is None:
        return 0
    return max(0, (last - first) - (train[-1] - train[0]))


def _evaluation_sets(trial) -> List[str]:
    """Metrics named ``<evaluation set>-<metric>`` for one metric in two sets or more (XGBoost's evals), e.g.
    ``['train-logloss', 'validation-logloss']`` (the first 6); empty when there are none."""
    return sorted(n for names in metric_sets(trial).values() for n in names)[:6]


class SavedSteps:
    """Per-tensor lists of saved steps (and loss values), cached while the trial knows of no new steps.

    Rules run at every step; asking a Tensor for its steps walks the whole run each time, so the lists are
    kept until the trial has seen a new index file (number of steps, last complete step or end of training
    changed). Values of saved steps never change, so scalar values are kept for the rule's lifetime.
    """

    def __init__(self, trial):
        self.trial = trial
        self._key = None
        self._steps: Dict[tuple, List[int]] = {}
        self._scalars: Dict[tuple, Optional[float]] = {}
        self._trains: Optional[bool] = None
        self._nothing_trained: Optional[Tuple[Optional[str]]] = None  # (trained_nothing's, once read)
        #: per (tensor, step, mode): the workers that saved it there (runs of several workers only)
        self._workers: Dict[Tuple[str, int, ModeKeys], List[str]] = {}
        #: per tensor: [global steps looked at, the workers seen saving it there] (see seen_workers)
        self._seen: Dict[str, list] = {}
        #: a loss read from two tensors (see :func:`paired_losses`): its name -> (training tensor, validation one)
        self.pairs: Dict[str, Tuple[str, str]] = {}

    def pair(self, training: str, validation: str) -> str:
        """One loss whose TRAIN-mode saves are ``training``'s and EVAL-mode saves ``validation``'s; its name."""
        name = f"{training} (training) / {validation} (validation)"
        self.pairs[name] = (training, validation)
        return name

    def real(self, name: str, mode: ModeKeys) -> str:
        """The tensor holding ``name``'s saves of ``mode`` (EVAL: the validation tensor of a pair)."""
        pair = self.pairs.get(name)
        if pair is None:
            return name
        return pair[1] if mode == ModeKeys.EVAL else pair[0]

    def _at(self, name: str, step: int, mode: ModeKeys) -> str:
        """For a pair, the tensor saved at ``step`` of ``mode`` (GLOBAL: whichever saved at that global step)."""
        training, validation = self.pairs[name]
        if mode == ModeKeys.GLOBAL:
            return validation if contains(self.steps(validation), step) else training
        return validation if mode == ModeKeys.EVAL else training

    def _fresh(self) -> None:
        t = self.trial
        # (a count, not len(steps()): a copy of every step at every call made a run's judgement quadratic)
        key = (t.step_count(show_incomplete_steps=True), t.last_complete_step, t.loaded_all_steps)
        if key != self._key:
            self._key = key
            self._steps.clear()
            self._trains = None
            self._nothing_trained = None

    def run_trains(self) -> bool:
        """Whether the run has steps where a model may be trained: TRAIN steps, or steps of no mode (a run
        that does not use modes); False for a run of EVAL and PREDICT steps only."""
        self._fresh()
        if self._trains is None:
            t = self.trial
            evaluated = len(t.steps(mode=ModeKeys.EVAL)) + len(t.steps(mode=ModeKeys.PREDICT))
            self._trains = bool(t.steps(mode=ModeKeys.TRAIN)) or len(t.steps()) > evaluated
        return self._trains

    def trained_nothing(self) -> Optional[str]:
        """:func:`trained_nothing` of the run, read again only once it has new steps."""
        self._fresh()
        if self._nothing_trained is None:
            self._nothing_trained = (trained_nothing(self.trial),)
        return self._nothing_trained[0]

    def steps(self, name: str, mode: ModeKeys = ModeKeys.GLOBAL, worker: Optional[str] = None) -> List[int]:
        """Complete steps (mode steps for a mode, global steps for GLOBAL) where ``name`` was saved (by
        ``worker`` when given: see :meth:`workers`)."""
        self._fresh()
        key = (name, mode) if worker is None else (name, mode, worker)
        steps = self._steps.get(key)
        if steps is None and name in self.pairs:
            training, validation = self.pairs[name]
            if mode == ModeKeys.GLOBAL:
                steps = sorted(set(self.steps(training, mode, worker)) | set(self.steps(validation, mode, worker)))
            else:
                steps = self.steps(self.real(name, mode), mode, worker)
            self._steps[key] = steps
        if steps is None:
            if worker is not None:
                steps = [s for s in self.steps(name, mode) if worker in self.workers(name, s, mode)]
            else:
                try:
                    steps = self.trial.tensor(name).steps(mode=mode)
                except TensorUnavailable:
                    steps = []
            self._steps[key] = steps
        return steps

    def several_workers(self) -> bool:
        """Whether the run has several workers (collection files of more than one): only then are a tensor's
        saves told apart by worker; a run of one worker is read exactly as it was before workers were told
        apart, nothing more looked up."""
        return len(getattr(self.trial, "worker_set", ())) > 1

    def workers(self, name: str, step: int, mode: ModeKeys = ModeKeys.GLOBAL) -> List[Optional[str]]:
        """The workers that saved ``name`` at saved step ``step`` (of ``mode``), sorted, from the step's index
        files (no value is read); ``[None]`` in a run of one worker, where the save is the run's own. Kept:
        the saves of a complete step do not change."""
        if not self.several_workers():
            return [None]
        if name in self.pairs:
            return self.workers(self._at(name, step, mode), step, mode)
        key = (name, step, mode)
        found = self._workers.get(key)
        if found is None:
            found = workers_at(self.trial, name, step, mode)
            if found:
                self._workers[key] = found
        return found

    def seen_workers(self, name: str, upto: int) -> List[Optional[str]]:
        """The workers that saved ``name`` at global steps ``<= upto``, sorted (``[None]`` in a run of one
        worker); read incrementally, each saved step looked at once."""
        if not self.several_workers():
            return [None]
        entry = self._seen.setdefault(name, [0, set()])
        steps = self.steps(name)
        end = bisect.bisect_right(steps, upto)
        for g in steps[entry[0]:end]:
            entry[1].update(self.workers(name, g))
        entry[0] = max(entry[0], end)
        return sorted(entry[1])

    def mean(self, name: str, step: int, mode: ModeKeys = ModeKeys.GLOBAL, worker: Optional[str] = None
             ) -> Optional[float]:
        """Mean of the tensor's values at ``step`` as a float (a loss saved per sample counts as its mean),
        ``worker``'s copy when given; None if only reductions or nothing were saved there."""
        if name in self.pairs:
            return self.mean(self._at(name, step, mode), step, mode, worker)
        key = (name, step, mode) if worker is None else (name, step, mode, worker)
        if key not in self._scalars:
            kwargs = {"mode": mode} if worker is None else {"mode": mode, "worker": worker}
            try:
                value = np.asarray(self.trial.tensor(name).value(step, **kwargs), dtype=np.float64)
                self._scalars[key] = float(value.mean()) if value.size else None
            except MissingEventFile:
                raise  # saved, but its file is gone: an error, not "only reductions saved"
            except (TensorUnavailableForStep, InvalidWorker, TypeError, ValueError):
                self._scalars[key] = None
        elif self._scalars[key] is not None:
            note_read(name)  # judged again from the value read earlier
        return self._scalars[key]


def auto_mode(saved: SavedSteps, name: str, mode: Optional[ModeKeys]) -> Optional[ModeKeys]:
    """``mode`` if given; otherwise TRAIN when the tensor has TRAIN-mode saves, else GLOBAL (a validation loss
    saved in EVAL steps of a run that trains is judged along the run) -- and None when the run has EVAL and
    PREDICT steps only: nothing is trained there, so a curve that does not fall or a weight that does not move
    is no fault."""
    if mode is not None:
        return mode
    if saved.steps(name, ModeKeys.TRAIN):
        return ModeKeys.TRAIN
    return ModeKeys.GLOBAL if saved.run_trains() else None


#: a loss module's output as the PyTorch and MXNet hooks name it: ``<Class>_output_0``, a second instance of the
#: class ``<Class>_1_output_0``; the module's inputs are ``<module>_input_0`` (predictions), ``_input_1`` (targets)
_LOSS_MODULE_OUTPUT = re.compile(r"^(?P<module>(?P<kind>.+?)(?:_\d+)?)_output_\d+$")


def loss_kind(name: str) -> Optional[str]:
    """The loss class of a loss module's output tensor ``name`` (``CrossEntropyLoss`` for
    ``CrossEntropyLoss_1_output_0``), None for a tensor not named as one."""
    m = _LOSS_MODULE_OUTPUT.match(name)
    return m.group("kind") if m else None


def loss_input(name: str, index: int = 0) -> Optional[str]:
    """The tensor name of input ``index`` of the loss module whose output is ``name`` (``CrossEntropyLoss_1_input_0``
    for ``CrossEntropyLoss_1_output_0``), None for a tensor not named as a loss module's output."""
    m = _LOSS_MODULE_OUTPUT.match(name)
    return f"{m.group('module')}_input_{index}" if m else None


#: the words of a scalar's name that say which data it was computed on (``train_loss``, ``val/loss``)
_TRAINING_WORDS = frozenset({"train", "training", "tr"})
_VALIDATION_WORDS = frozenset({"val", "valid", "validation", "eval", "evaluation", "dev", "test"})
_NAME_WORDS = re.compile(r"[/_.\-]+")


def _role_free(name: str, mode: ModeKeys) -> Optional[str]:
    """``name`` without the words that say which data it was computed on (``scalar/train_loss`` and
    ``scalar/val_loss`` are both ``scalar loss``), for a tensor saved in ``mode`` only; None when a word says
    the other data (a TRAIN-mode ``val_loss``) or nothing is left."""
    words = [w for w in _NAME_WORDS.split(name.lower()) if w]
    other = _VALIDATION_WORDS if mode == ModeKeys.TRAIN else _TRAINING_WORDS
    if any(w in other for w in words):
        return None
    kept = [w for w in words if w not in _TRAINING_WORDS | _VALIDATION_WORDS]
    return " ".join(kept) or None


def paired_losses(saved: SavedSteps, names: Sequence[str]) -> List[str]:
    """``names`` with each loss saved in TRAIN mode only joined to the one of its kind saved in EVAL mode only
    (see :meth:`SavedSteps.pair`): a loop that trains with one loss instance and validates with another --
    ``CrossEntropyLoss(label_smoothing=0.1)`` for training, a plain ``CrossEntropyLoss()`` for validation, each
    registered -- saves them as two tensors (``CrossEntropyLoss_output_0``, ``CrossEntropyLoss_1_output_0``),
    neither with both modes, and the rules comparing validation with training found nothing to compare
    (probe 17a F2). Joined only when exactly one loss of the kind is saved in each mode alone; losses of
    different kinds are never joined (their values are not on one scale). A loss that is no loss module's output
    is of the kind its name says once the words naming its data are left out: ``train_loss`` and ``val_loss``
    saved by a loop (``hook.save_scalar``: probe 18a F6), ``loss`` and ``val_loss``, ``train/loss`` and
    ``test/loss``."""
    def kind(name: str, mode: ModeKeys) -> Optional[str]:
        return loss_kind(name) or _role_free(name, mode)

    train_only = [n for n in names if saved.steps(n, ModeKeys.TRAIN) and not saved.steps(n, ModeKeys.EVAL)]
    eval_only = [n for n in names if saved.steps(n, ModeKeys.EVAL) and not saved.steps(n, ModeKeys.TRAIN)]
    joined, out = set(), []
    for t in train_only:
        k = kind(t, ModeKeys.TRAIN)
        same = [e for e in eval_only if k is not None and kind(e, ModeKeys.EVAL) == k]
        if len(same) == 1 and sum(kind(o, ModeKeys.TRAIN) == k for o in train_only) == 1:
            joined.update((t, same[0]))
            out.append(saved.pair(t, same[0]))
    return [n for n in names if n not in joined] + out


#: why a rule about training judged nothing in a run of evaluation steps only
EVALUATION_ONLY = "the run has EVAL/PREDICT steps only, where nothing is trained ({})"


def trained_nothing(trial) -> Optional[str]:
    """The run's steps (``"EVAL 10, PREDICT 5 steps"``) when it trained nothing: a trained model evaluated (a
    checkpoint validated, then predicting). Every saved step is an EVAL or PREDICT step, the script never
    switched the hook to TRAIN mode, and the hook saw no optimizer step the model in those steps (the PyTorch
    hook records a model trained while in eval() mode, whose training steps it saved as EVAL steps: that run
    trained). None otherwise, and for a run with no step yet.

    The one test of every rule that judges training -- its gradients, its weight updates, its validation
    against its training loss: such a run has none of them, by its nature, and the rule is NotApplicable
    (:data:`EVALUATION_ONLY`), not short of data."""
    counts = {m: len(trial.steps(mode=m)) for m in (ModeKeys.EVAL, ModeKeys.PREDICT)}
    evaluated = sum(counts.values())
    if not evaluated or trial.steps(mode=ModeKeys.TRAIN) or len(trial.steps()) > evaluated:
        return None  # (no step, a TRAIN step, or steps of no mode: a run that does not use modes)
    if "TRAIN" in modes_set(trial) or trained_in_eval(trial) is not None:
        return None
    return ", ".join(f"{m.name} {n}" for m, n in counts.items() if n) + " steps"


def said_trained_nothing(rule: Rule, saved: "SavedSteps", judges: str) -> bool:
    """Whether the run trained nothing (:func:`trained_nothing`); if so ``rule`` says NotApplicable, naming the
    run's steps and what it ``judges`` of training (``"gradients"``)."""
    nothing = saved.trained_nothing()
    if nothing:
        rule.not_applicable(EVALUATION_ONLY.format(f"{nothing}; the rule judges {judges}"))
    return bool(nothing)


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
    nothing was asked for explicitly and the run has no loss, every scalar tensor that is no part of the model or
    its data (:data:`MODEL_PART_COLLECTIONS`: a one-element weight or its gradient is no loss) -- but a scalar
    the run's hook filed as a *metric that is not a loss* (in ``metrics``, not in ``losses``: XGBoost's auc, ndcg@k, map,
    where higher is better) is no loss to minimise: it is followed as ``1 - value`` when its values lie in
    [0, 1] (an error rate: 1 - AUC) by rules that ask for it (``invert_scores``: the loss-curve rules), and
    left out otherwise (:attr:`inverted` names those followed so).

    Reading such a metric as a loss made a rising AUC or NDCG look like a loss that does not decrease."""

    def __init__(self, trial, collection_names: List[str], tensor_regex: List[str], use_losses_collection: bool,
                 scalar_fallback: bool = True, invert_scores: bool = False):
        self.trial = trial
        self.invert_scores = invert_scores
        self.collection_names = collection_names
        self.regexes = [NamePattern(r) for r in tensor_regex]
        self.use_losses_collection = use_losses_collection
        self.scalar_fallback = scalar_fallback and not (collection_names or tensor_regex)
        self._cached: Optional[Tuple[int, List[str]]] = None
        self._is_scalar: Dict[str, bool] = {}
        #: scores where higher is better, followed as 1 - value
        self.inverted: Set[str] = set()

    def names(self) -> List[str]:
        all_names = self.trial.tensor_names()
        if self._cached is None or self._cached[0] != len(all_names):
            self._cached = (len(all_names), *self._choose(all_names))
        for what, found in self._cached[2]:
            looking_for(what, found)
        return self._cached[1]

    def label(self, name: str) -> str:
        """How the rule names the curve it follows in its findings."""
        return f"1 - {name}" if name in self.inverted else name

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
        self.inverted = set()
        if not chosen and self.scalar_fallback:
            scores = self._scores(collections, all_names)
            parts = self._model_parts(collections, all_names)
            chosen = {n for n in all_names if n not in parts and self._scalar(n) and n not in scores}
            if self.invert_scores:
                self.inverted = {n for n in scores if self._scalar(n) and self._unit_interval(n)}
            chosen |= self.inverted
            looked.append(("scalar tensors (no loss collection or regex)", sorted(chosen)))
            if scores - self.inverted:
                looked.append(("metrics that are not losses (left out)", sorted(scores - self.inverted)))
        return sorted(chosen), looked

    @staticmethod
    def _model_parts(collections, all_names: List[str]) -> Set[str]:
        """The tensors that are parts of the model or its data (:data:`MODEL_PART_COLLECTIONS`, activation
        collections, and gradients by their ``gradient/`` name when the run lists no collection for them)."""
        claims = [c for name, c in collections.items()
                  if name in MODEL_PART_COLLECTIONS or name.endswith("_activations")]
        return {n for n in all_names if n.startswith("gradient/") or any(c.matches(n) for c in claims)}

    @staticmethod
    def _scores(collections, all_names: List[str]) -> Set[str]:
        """The tensors the hook filed as metrics but not as losses."""
        metrics, losses = collections.get(METRICS), collections.get(LOSSES)
        if metrics is None or losses is None:
            return set()
        return {n for n in all_names if metrics.matches(n) and not losses.matches(n)}

    def _unit_interval(self, name: str) -> bool:
        """Whether the metric's first saved value lies in [0, 1] (AUC, NDCG, MAP and precision always do)."""
        tensor = self.trial.tensor(name)
        steps = tensor.steps()
        if not steps:
            return False
        try:
            value = np.asarray(tensor.value(steps[0]), dtype=np.float64)
        except MissingEventFile:
            raise
        except (TensorUnavailableForStep, TypeError, ValueError):
            return False
        return bool(value.size) and bool(np.all((value >= 0) & (value <= 1)))

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


def _bad_regex(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return True
    return False


# ----------------------------------------------------------------------------------------------------------
# validation passes (Overfit, Overtraining)
# ----------------------------------------------------------------------------------------------------------
class ValidationPass(NamedTuple):
    """One evaluation of a loss: a pass of consecutive EVAL-mode saves with no step of another mode between
    them (Keras saves one EVAL step per validation batch; a PyTorch loop that evaluates batch by batch in
    EVAL mode does the same)."""

    first: int  # global step of the pass's first EVAL save of the loss
    last: int  # global step of its last one
    first_mode: int  # their EVAL mode steps
    last_mode: int
    saves: int  # EVAL saves of the loss in the pass
    value: float  # the pass's validation loss (see ValidationPasses)
    train: Optional[float]  # the training loss before it; None if no TRAIN save came before
    recorded: bool  # value is the pass's loss as the hook recorded it (``val_<loss>``)


class ValidationPasses:
    """For one loss: its validation passes in order, read once, incrementally along the loss's saved steps.

    **Grouping.** Two EVAL-mode saves belong to one pass when no step of another mode lies between them: the
    mode-step counter rose by as much as the global step (every step between was an EVAL step), or, for a run
    that numbers its EVAL steps itself, none of the saved steps between is of another mode. A pass ends at
    the loss's next save that is not in it, or at any later step of the run outside it, or at the end of
    training; until then (the last pass of a run still being written) it is not an evaluation yet.

    **Value.** A pass of one save is that save. For longer passes the saves can mean two things: Keras saves
    its *running mean* over the pass so far at each validation batch (reset at each pass: the last save is
    the pass's loss), a loop that saves each batch's own loss saves per-batch losses (the pass's loss is
    their mean). The run tells them apart where the hook recorded the evaluation's own result: the Keras hook
    saves ``val_<loss>`` once, at the pass's last step (Keras' ``val_loss``, what its EarlyStopping
    monitors); that value is taken. Otherwise the pass's value is the mean of its saves: exactly the pass's
    loss for per-batch losses, and for running means a fixed weighted mean of all of the pass's batches
    (batch ``j`` of ``n`` weighs ``sum(1/i for i in j..n) / n``), the same weights at every pass over the same
    validation batches -- so passes compare like with like. The last save alone would be one batch's loss
    for per-batch losses (the noisiest choice there), so the mean is the robust choice for both. Per-batch
    losses are averaged by the batches' rows where the run tells them -- the first axis of the loss's first
    input saved at that step (``<loss>_input_0`` for ``<loss>_output_0``; ``Hook.recommended`` saves it at the
    first steps of each mode) -- and, for later passes whose inputs were not saved, by the rows the earlier
    passes of as many saves had, where those all agree (a validation loader yields the same batches at every
    pass): a last batch of 28 rows after two of 256 weighs 28/540, not a third (probe 17a F1: that batch, one
    confidently wrong digit, read as a validation loss rising 80% on a run whose true one was flat).

    **Training loss.** Each pass carries the mean of the loss's TRAIN-mode saves between the previous pass and
    this one (the latest such mean when none was saved between them; None before any).

    **Worker.** With ``worker`` (a run whose workers all save the loss), that worker's saves only: its own
    validation passes against its own training loss. None: the run's saves as they always were read.
    """

    def __init__(self, trial, saved: SavedSteps, name: str, worker: Optional[str] = None):
        self.trial, self.saved, self.name, self.worker = trial, saved, name, worker
        self.marker = f"val_{name}"
        self.passes: List[ValidationPass] = []
        self._done = 0  # saved steps of the loss looked at
        self._open: List[Tuple[int, int]] = []  # (global step, EVAL step) of the saves of the open pass
        self._values: List[float] = []  # their values (saves with only reductions have none)
        self._trains: List[float] = []  # TRAIN values since the last pass
        self._train: Optional[float] = None  # the latest training mean
        #: the loss's first TRAIN save: the model before it learned (or as early as the run shows it)
        self.first_train: Optional[float] = None
        self._rows: List[Optional[int]] = []  # the batch rows of each of _values (None: not saved)
        #: per number of saves in a pass: the batch rows such passes had (None once two passes disagreed)
        self._batch_rows: Dict[int, Optional[Tuple[int, ...]]] = {}
        self._input = loss_input(saved.real(name, ModeKeys.EVAL))

    def extend(self, upto: int) -> int:
        """Read the loss's saves up to global step ``upto``; returns how many passes ended (new ones)."""
        before = len(self.passes)
        steps = self.saved.steps(self.name)
        end = bisect.bisect_right(steps, upto)
        for g in steps[self._done:end]:
            if not self._own(self.name, g):
                continue
            mode, m = self.trial.mode_modestep(g)
            if mode == ModeKeys.EVAL:
                if self._open and not self._same_pass(self._open[-1], (g, m)):
                    self._close(g)
                self._open.append((g, m))
                value = self.saved.mean(self.name, g, ModeKeys.GLOBAL, self.worker)
                if value is not None:
                    self._values.append(value)
                    self._rows.append(self._batch_rows_at(g))
                continue
            if self._open:  # a step of another mode: the pass ended
                self._close(g)
            if mode == ModeKeys.TRAIN:
                value = self.saved.mean(self.name, g, ModeKeys.GLOBAL, self.worker)
                if value is not None:
                    self._trains.append(value)
                    if self.first_train is None:
                        self.first_train = value
        self._done = max(self._done, end)
        if self._open:
            following = next((g for g in steps[end:] if self._own(self.name, g)), None)
            if self._ended(following):
                self._close(following)
        return len(self.passes) - before

    def _own(self, name: str, step: int) -> bool:
        """Whether global step ``step``'s save of ``name`` is one this reader follows (every save without a
        worker)."""
        return self.worker is None or self.worker in self.saved.workers(name, step)

    def _same_pass(self, a: Tuple[int, int], b: Tuple[int, int]) -> bool:
        """Whether EVAL saves ``a`` and ``b`` (global step, EVAL step; ``a`` first) are of one pass."""
        (ga, ma), (gb, mb) = a, b
        if gb - ga <= 1:
            return True
        if mb - ma < gb - ga:  # fewer EVAL steps than steps between them: steps of another mode
            return False
        if mb - ma == gb - ga:  # the hook's own numbering: every step between was an EVAL step
            return True
        steps = self.trial.steps()  # EVAL steps numbered by the loop: what was saved between tells
        i, j = bisect.bisect_right(steps, ga), bisect.bisect_left(steps, gb)
        return all(self.trial.mode(s) == ModeKeys.EVAL for s in steps[i:j])

    def _ended(self, following: Optional[int]) -> bool:
        """Whether the open pass has ended: the loss's next save (``following``) is not in it, or -- with no
        later save of the loss yet -- the run went on past it (its last step is not in it) or ended."""
        last = self._open[-1]
        if following is not None:
            mode, m = self.trial.mode_modestep(following)
            return mode != ModeKeys.EVAL or not self._same_pass(last, (following, m))
        if self.trial.loaded_all_steps:
            return True
        steps = self.trial.steps()
        if not steps or steps[-1] <= last[0]:
            return False
        mode, m = self.trial.mode_modestep(steps[-1])
        return mode != ModeKeys.EVAL or not self._same_pass(last, (steps[-1], m))

    def _recorded(self, following: Optional[int]) -> Optional[float]:
        """The pass's loss as the hook recorded it: ``val_<loss>`` saved once in EVAL mode in the pass (from its
        first save to the loss's next save outside it, ``following``), or None."""
        steps = self.saved.steps(self.marker)
        if not steps:
            return None
        first, last = self._open[0], self._open[-1]
        i = bisect.bisect_left(steps, first[0])
        j = bisect.bisect_left(steps, following) if following is not None else len(steps)
        inside = []
        for g in steps[i:j]:
            if not self._own(self.marker, g):
                continue
            mode, m = self.trial.mode_modestep(g)
            if mode == ModeKeys.EVAL and (g <= last[0] or self._same_pass(last, (g, m))):
                inside.append(g)
        if len(inside) != 1:
            return None
        return self.saved.mean(self.marker, inside[0], ModeKeys.GLOBAL, self.worker)

    def _batch_rows_at(self, step: int) -> Optional[int]:
        """The rows of the batch the loss was computed on at ``step``: the first axis of its first input, when
        that was saved then (read from the index: no tensor is loaded)."""
        if self._input is None or not self.trial.has_tensor(self._input):
            return None
        try:
            shape = self.trial.tensor(self._input).shape(step, worker=self.worker)
        except (TensorUnavailableForStep, StepUnavailable, ShapeUnavailableForStep, InvalidWorker):
            return None
        return int(shape[0]) if shape and int(shape[0]) > 0 else None

    def _pass_value(self) -> Optional[float]:
        """The mean of the open pass's per-batch values, weighted by their batches' rows where known (see the
        class docstring)."""
        if not self._values:
            return None
        n = len(self._values)
        rows: Optional[Sequence[Optional[int]]] = self._rows
        if n > 1 and all(r is not None for r in self._rows):
            known = tuple(self._rows)
            if n not in self._batch_rows:
                self._batch_rows[n] = known
            elif self._batch_rows[n] != known:
                self._batch_rows[n] = None
        elif n > 1:
            rows = self._batch_rows.get(n)
        if n > 1 and rows is not None and all(r is not None for r in rows):
            return float(np.average(self._values, weights=np.asarray(rows, dtype=np.float64)))
        return float(np.mean(self._values))

    def _close(self, following: Optional[int]) -> None:
        if self._trains:
            self._train, self._trains = float(np.mean(self._trains)), []
        recorded = self._recorded(following) if len(self._open) > 1 or not self._values else None
        value = recorded if recorded is not None else self._pass_value()
        if value is not None:
            (g0, m0), (g1, m1) = self._open[0], self._open[-1]
            self.passes.append(ValidationPass(g0, g1, m0, m1, len(self._open), value, self._train,
                                              recorded is not None))
        self._open, self._values, self._rows = [], [], []


def describe_pass(p: ValidationPass, mode: bool = False) -> str:
    """Where a pass is, for messages: ``step 7`` for a pass of one save, ``steps 50-62`` for a longer one
    (``EVAL step``/``EVAL steps`` and EVAL mode steps with ``mode``)."""
    first, last = (p.first_mode, p.last_mode) if mode else (p.first, p.last)
    label = "EVAL step" if mode else "step"
    return f"{label} {last}" if p.saves == 1 else f"{label}s {first}-{last}"


def describe_passes(passes: Sequence[ValidationPass]) -> str:
    """What an evaluation was, for messages on runs with passes of several saves (empty otherwise)."""
    longest = max((p.saves for p in passes), default=1)
    if longest <= 1:
        return ""
    how = "val_* as recorded by the hook" if any(p.recorded for p in passes) else "the mean of its saves"
    return f"; an evaluation is a validation pass (up to {longest} EVAL saves; its loss: {how})"


def ended_now(p: ValidationPass, step: int, previous: Optional[int]) -> bool:
    """Whether pass ``p``, found ended when the rule was invoked at ``step``, is judged there: at its last save,
    or later when that save was the step the rule was invoked at before (a run still being written: the step
    that showed the pass ended came after it) -- not a pass that ended before the rule started."""
    return p.last == step or (previous is not None and p.last >= previous)


# ----------------------------------------------------------------------------------------------------------
# Overfit
# ----------------------------------------------------------------------------------------------------------
class Evaluations:
    """For one loss: its evaluations in order -- each validation pass (:class:`ValidationPasses`) with a
    training loss before it: ``val`` the pass's validation loss, ``train`` the mean of the TRAIN-mode saves
    between the previous pass and this one -- read once, incrementally."""

    def __init__(self, trial, saved: SavedSteps, name: str, worker: Optional[str] = None):
        self.reader = ValidationPasses(trial, saved, name, worker)
        self.passes: List[ValidationPass] = []
        self.steps: List[int] = []  # global step of each evaluation's last EVAL save
        self.val: List[float] = []
        self.train: List[float] = []

    def extend(self, upto: int) -> int:
        """Read up to global step ``upto``; returns how many evaluations ended (new ones)."""
        new = self.reader.extend(upto)
        added = 0
        for p in self.reader.passes[len(self.reader.passes) - new:]:
            if p.train is None:
                continue  # no training loss before it
            self.passes.append(p)
            self.steps.append(p.last)
            self.val.append(p.value)
            self.train.append(p.train)
            added += 1
        return added


def running_medians(values: List[float], window: int) -> List[float]:
    """``m[i]`` = median of ``values[i - window + 1 .. i]`` for ``i >= window - 1`` (a list ``window - 1``
    shorter than ``values``)."""
    return [float(np.median(values[i - window + 1:i + 1])) for i in range(window - 1, len(values))]


def evaluation_noise(values: Sequence[float]) -> float:
    """The noise of one evaluation, estimated from the curve itself: the robust spread (1.4826 x median absolute
    deviation) of its successive differences, over sqrt(2) -- a difference of two evaluations carries the
    noise of both, and a trend shifts every difference alike, so it does not count as noise. 0 for fewer
    than 3 values."""
    if len(values) < 3:
        return 0.0
    d = np.diff(np.asarray(values, dtype=np.float64))
    return float(1.4826 * np.median(np.abs(d - np.median(d))) / np.sqrt(2))


#: the most values the trend test compares pairwise (a longer series is thinned evenly)
TREND_POINTS = 256


def trend_p_value(values: Sequence[float], rising: bool) -> float:
    """One-sided p-value of Kendall's trend test (Mann-Kendall) that ``values`` rise (``rising``) or fall in
    their order: the chance that values in random order would be as ordered. Rank-based, so the size of single
    noisy evaluations does not matter, only how consistently they move one way. Normal approximation with a
    continuity correction (conservative for short series: 5 values in perfect order give 0.014 against an exact
    0.008); 1.0 for fewer than 3 values. A series longer than :data:`TREND_POINTS` is thinned to that many
    evenly spaced values first (the test compares every pair: its cost grows with the square of the length;
    thinning keeps the order and only makes the test more cautious)."""
    x = np.asarray(values, dtype=np.float64)
    if len(x) > TREND_POINTS:
        x = x[np.linspace(0, len(x) - 1, TREND_POINTS).round().astype(int)]
    n = len(x)
    if n < 3:
        return 1.0
    s = float(np.sum(np.sign(x[None, :] - x[:, None])[np.triu_indices(n, 1)]))
    if not rising:
        s = -s
    var = n * (n - 1) * (2 * n + 5) / 18.0
    if s <= 0:
        return 1.0
    z = (s - 1) / np.sqrt(var)
    return float(0.5 * math.erfc(z / np.sqrt(2)))


# ----------------------------------------------------------------------------------------------------------
# the validation loss row by row (Overfit's rise against the sampling noise of its validation rows)
# ----------------------------------------------------------------------------------------------------------
def _log_softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def _rowwise(values: np.ndarray) -> np.ndarray:
    """Per-row means of element-wise losses of shape (rows, ...)."""
    return values.reshape(len(values), -1).mean(axis=1)


def _cross_entropy(pred: np.ndarray, label: np.ndarray) -> Optional[np.ndarray]:
    """Per-row cross-entropy of scores (rows, classes) against integer class labels (rows,)."""
    if pred.ndim != 2 or pred.shape[1] < 2 or label.shape != (len(pred),):
        return None
    if not np.all((label == np.round(label)) & (label >= 0) & (label < pred.shape[1])):
        return None
    return -_log_softmax(pred)[np.arange(len(pred)), label.astype(np.int64)]


def _cross_entropy_of_probabilities(pred: np.ndarray, label: np.ndarray) -> Optional[np.ndarray]:
    """The same for probabilities (a softmax output layer, as Keras' sparse categorical cross-entropy takes)."""
    if pred.ndim != 2 or pred.shape[1] < 2 or np.any(pred < 0) or np.any(pred > 1):
        return None
    return _cross_entropy(np.log(np.clip(pred, 1e-7, 1.0)), label)


def _same_shape(pred: np.ndarray, label: np.ndarray) -> Optional[Tuple[np.ndarray, np.ndarray]]:
    """Predictions and targets of one shape (a trailing axis of 1 on either side dropped), or None."""
    if pred.ndim > 1 and pred.shape[-1] == 1 and pred.ndim == label.ndim + 1:
        pred = pred[..., 0]
    if label.ndim > 1 and label.shape[-1] == 1 and label.ndim == pred.ndim + 1:
        label = label[..., 0]
    return (pred, label) if pred.shape == label.shape and len(pred) else None


def _binary_cross_entropy(pred: np.ndarray, label: np.ndarray, logits: bool) -> Optional[np.ndarray]:
    pair = _same_shape(pred, label)
    if pair is None or np.any(pair[1] < 0) or np.any(pair[1] > 1):
        return None
    x, y = pair
    if logits:
        return _rowwise(np.maximum(x, 0) - x * y + np.log1p(np.exp(-np.abs(x))))
    if np.any(x < 0) or np.any(x > 1):
        return None
    x = np.clip(x, 1e-7, 1 - 1e-7)
    return _rowwise(-(y * np.log(x) + (1 - y) * np.log(1 - x)))


def _regression(pred: np.ndarray, label: np.ndarray, kind: str) -> Optional[np.ndarray]:
    pair = _same_shape(pred, label)
    if pair is None:
        return None
    d = np.abs(pair[0] - pair[1])
    if kind == "squared":
        return _rowwise(d ** 2)
    if kind == "absolute":
        return _rowwise(d)
    return _rowwise(np.where(d < 1, 0.5 * d ** 2, d - 0.5))  # smooth L1 / Huber at 1


def _class_errors(pred: np.ndarray, label: np.ndarray) -> np.ndarray:
    """Per row, 1 where the highest score is not the labelled class (the rows _cross_entropy accepted)."""
    return (np.argmax(pred, axis=-1) != label.astype(np.int64)).astype(np.float64)


def _binary_errors(pred: np.ndarray, label: np.ndarray, threshold: float) -> Optional[np.ndarray]:
    """Per row, the share of its outputs on the wrong side of ``threshold`` (0 for logits, 0.5 for probabilities);
    None for soft targets (label smoothing, distillation), which have no right side."""
    x, y = _same_shape(pred, label)
    if not np.all((y == 0) | (y == 1)):
        return None
    return _rowwise(((x > threshold) != (y == 1)).astype(np.float64))


#: losses whose per-row value can be computed from saved predictions and labels: the one whose mean matches the
#: loss the run saved is taken (a weighted or smoothed loss matches none: the rule then keeps its own tests);
#: with, for a classification, each row's error (misclassified: 1) from the same predictions
ROW_LOSSES = (
    ("cross-entropy", _cross_entropy, _class_errors),
    ("cross-entropy", _cross_entropy_of_probabilities, _class_errors),
    ("binary cross-entropy", lambda p, y: _binary_cross_entropy(p, y, logits=True),
     lambda p, y: _binary_errors(p, y, 0.0)),
    ("binary cross-entropy", lambda p, y: _binary_cross_entropy(p, y, logits=False),
     lambda p, y: _binary_errors(p, y, 0.5)),
    ("squared error", lambda p, y: _regression(p, y, "squared"), None),
    ("absolute error", lambda p, y: _regression(p, y, "absolute"), None),
    ("smooth L1 error", lambda p, y: _regression(p, y, "smooth"), None),
)


def _matches(rows: np.ndarray, saved: float) -> bool:
    """Whether per-row losses average to the saved loss (as float32 computes it)."""
    return bool(np.isfinite(rows).all()) and abs(float(rows.mean()) - saved) <= 1e-3 * abs(saved) + 1e-5


class ValidationRows:
    """For one loss: the per-row validation loss of each validation pass, from the predictions and labels the run
    saved at the pass's EVAL saves (the registered loss module's inputs ``<Loss>_input_0``/``_input_1`` next to its
    output ``<Loss>_output_0``, or the run's only ``predictions`` and ``labels`` tensors), by the loss among
    :data:`ROW_LOSSES` whose row mean matches the loss saved at each of them. None for a pass where that cannot be
    done (inputs not saved at every save of the pass, no loss matches): the rule then keeps its own tests."""

    def __init__(self, trial, saved: SavedSteps, name: str):
        self.trial, self.saved, self.name = trial, saved, name
        self.inputs = self._inputs()
        self.kind: Optional[str] = None  # the loss found to match
        self._rows: Dict[int, Optional[np.ndarray]] = {}  # per pass (its first step)
        #: per pass of a classification: each row's error (see ROW_LOSSES), None where there is none
        self._errors: Dict[int, Optional[np.ndarray]] = {}
        #: per pass no fixed loss matched: the positive-class weight a weighted binary cross-entropy would need
        #: to match it, and the two parts of its per-row loss (see _weighted)
        self._fits: Dict[int, Tuple[float, np.ndarray, np.ndarray]] = {}

    def _inputs(self) -> Optional[Tuple[str, str]]:
        names = set(self.trial.tensor_names())
        loss = self.saved.real(self.name, ModeKeys.EVAL)  # (a pair's validation tensor: its rows are judged)
        predictions, targets = loss_input(loss, 0), loss_input(loss, 1)
        if predictions in names and targets in names:
            return predictions, targets
        collections = self.trial.collections()
        found = []
        for cname in ("predictions", "labels"):
            coll = collections.get(cname)
            matched = [n for n in names if coll is not None and coll.matches(n) and n != loss]
            if len(matched) != 1:
                return None
            found.append(matched[0])
        return found[0], found[1]

    def of(self, p: ValidationPass) -> Optional[np.ndarray]:
        """The per-row losses of pass ``p`` in the order saved, or None."""
        if p.first not in self._rows:
            self._rows[p.first] = self._read(p) if self.inputs is not None else None
        if self._rows[p.first] is None and p.first in self._fits:
            return self._weighted(p.first)
        return self._rows[p.first]

    def errors_of(self, p: ValidationPass) -> Optional[np.ndarray]:
        """Each row's classification error at pass ``p`` (1: misclassified), in the order of :meth:`of`; None for a
        loss that is no classification, or a pass whose rows were not read."""
        self.of(p)
        return self._errors.get(p.first)

    def _weighted(self, first: int) -> Optional[np.ndarray]:
        """A binary cross-entropy whose positive rows weigh ``w`` (PyTorch's ``pos_weight``, a class weight): one
        unknown, fitted on each pass to its saved loss; taken only when another pass's fit agrees (the weight is
        the run's, the same at every evaluation -- one pass alone fits any loss)."""
        w, positive, negative = self._fits[first]
        if self.kind not in (None, "weighted binary cross-entropy"):
            return None
        if not any(f != first and abs(v - w) <= 1e-3 * abs(w) for f, (v, _, _) in self._fits.items()):
            return None
        self.kind = "weighted binary cross-entropy"
        return w * positive + negative

    def _value(self, tensor: str, step: int) -> Optional[np.ndarray]:
        try:
            return np.asarray(self.trial.tensor(tensor).value(step), dtype=np.float64)
        except MissingEventFile:
            raise
        except (TensorUnavailable, TensorUnavailableForStep, TypeError, ValueError):
            return None

    def _read(self, p: ValidationPass) -> Optional[np.ndarray]:
        steps = self.saved.steps(self.name)
        saves = steps[bisect.bisect_left(steps, p.first):bisect.bisect_right(steps, p.last)]
        preds, labels, losses = [], [], []
        for g in saves:
            pred, label = self._value(self.inputs[0], g), self._value(self.inputs[1], g)
            if pred is None or label is None or pred.ndim == 0 or len(pred) != len(label):
                return None
            preds.append(pred)
            labels.append(label)
            losses.append(self.saved.mean(self.name, g))
        for kind, rows_of, errors_of in ROW_LOSSES:
            if self.kind is not None and kind != self.kind:
                continue
            rows = [rows_of(pr, la) for pr, la in zip(preds, labels)]
            if any(r is None for r in rows):
                continue
            every = all(v is not None and _matches(r, v) for r, v in zip(rows, losses))
            if every or _matches(np.concatenate(rows), p.value):
                self.kind = kind
                errors = [errors_of(pr, la) for pr, la in zip(preds, labels)] if errors_of else [None]
                self._errors[p.first] = None if any(e is None for e in errors) else np.concatenate(errors)
                return np.concatenate(rows)
        self._fit_weight(p, preds, labels)
        return None

    def _fit_weight(self, p: ValidationPass, preds: List[np.ndarray], labels: List[np.ndarray]) -> None:
        """The positive-class weight ``w`` with which a binary cross-entropy of logits averages to the pass's loss:
        per row ``w * y * softplus(-x) + (1 - y) * softplus(x)``, so ``w = (loss - mean negative part) / mean
        positive part`` (kept in ``_fits`` when positive and finite)."""
        pairs = [_same_shape(pr, la) for pr, la in zip(preds, labels)]
        if any(pair is None for pair in pairs):
            return
        x = np.concatenate([pair[0] for pair in pairs])
        y = np.concatenate([pair[1] for pair in pairs])
        if not np.all((y == 0) | (y == 1)):
            return
        positive = _rowwise(y * (np.maximum(-x, 0) + np.log1p(np.exp(-np.abs(x)))))
        negative = _rowwise((1 - y) * (np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))))
        if positive.mean() <= 0:
            return
        w = (p.value - negative.mean()) / positive.mean()
        if np.isfinite(w) and w > 0:
            self._fits[p.first] = (float(w), positive, negative)


def errors_held(rows: ValidationRows, passes: Sequence[ValidationPass], best: List[int], now: List[int],
                how: str = "rose from its best", verdict: str = "overfitting") -> Optional[str]:
    """For a classification whose validation loss rose (or stopped improving) while training went on: why that
    is no overfitting when the validation error rate, over the same rows, is no higher at the last evaluations
    (``now``) than at the best (``best``: indexes into ``passes``), or None (it rose, however little, or the rows
    have no errors to count). A model that goes on fitting its training set grows more confident on the
    validation rows it gets wrong, and their cross-entropy rises while it classifies no worse: stopping at the
    best validation loss would keep no better classifier (probe 19a F8: validation accuracy 0.850 at the best
    loss, 0.862 at the end, and held-out accuracy no better early-stopped). Any rise of the error rate keeps the
    finding: a loss that rose beyond its noise is evidence enough, and a few rows more misclassified on a small
    validation set can be points of held-out accuracy (a LoRA fine-tune: 11.1% -> 12.3% on 300 rows, 4 points
    better early-stopped)."""
    before = [rows.errors_of(passes[j]) for j in best]
    after = [rows.errors_of(passes[j]) for j in now]
    if any(e is None for e in before + after) or len({len(e) for e in before + after}) != 1:
        return None
    then, later = np.mean(before, axis=0), np.mean(after, axis=0)
    n = len(then)
    if later.mean() > then.mean():
        return None
    return (f"the validation loss {how}, but its error rate did not rise with it (misclassified "
            f"{then.mean():.1%} of the {n} validation rows at its best, {later.mean():.1%} at the last "
            f"evaluations): a model more confident on the rows it gets wrong, not one that classifies worse, "
            f"so it was not reported as {verdict}")


def rows_carrying(d: np.ndarray) -> Tuple[int, float]:
    """The fewest rows whose change ``d`` adds up to the whole rise (``d.sum() > 0``), and what the other rows
    did (their mean change)."""
    order = np.sort(d)[::-1]
    k = int(np.searchsorted(np.cumsum(order), d.sum())) + 1
    k = min(k, len(d))
    rest = order[k:]
    return k, float(rest.mean()) if len(rest) else 0.0


def ended_run_said(rule: Rule, names: Sequence[str], said) -> Optional[str]:
    """``said(names, last step)`` on a run that has ended (None on a live one), computed once per state of the run:
    it is asked at every step the rule does not judge, and reads the whole run."""
    trial = rule.base_trial
    if not trial.loaded_all_steps:
        return None
    cache = rule.__dict__.setdefault("_ended_said", {})
    key = (len(trial.tensor_names()), trial.last_step(), tuple(names))
    if cache.get("key") != key:
        last = key[1]
        cache.update(key=key, said=said(names, last) if last is not None else None)
    return cache["said"]


#: the shortest median of evaluations Overfit judges with on a run that ended with fewer than ``2 * window``
#: evaluations (one evaluation alone is that evaluation's noise)
SHORT_WINDOW = 2


def after_training(trial, saved: SavedSteps, name: str, passes: Sequence[ValidationPass]) -> Optional[str]:
    """When every validation pass of loss ``name`` came after its last TRAIN-mode save (a test evaluation once
    training had ended, not validation while it trained), what was seen, as a template of ``{shown}`` (the
    loss) and ``{rule}``; None otherwise (or without TRAIN saves)."""
    train = saved.steps(name, ModeKeys.TRAIN)
    last = trial.global_step(ModeKeys.TRAIN, train[-1]) if train else None
    if not passes or last is None or passes[0].first < last:
        return None
    where = ", ".join(describe_pass(p) for p in passes[:3]) + (", ..." if len(passes) > 3 else "")
    count = f"{len(passes)} pass{'es' if len(passes) != 1 else ''}"
    return ("{shown}: evaluated only after training ended (" + count + " of EVAL-mode saves at " + where +
            f", after the last TRAIN save at step {last}): a test evaluation, not validation during training, "
            "which {rule} follows along training (to have it judged, " + validation_advice(trial) + ")")


#: Overfit without rows to test a rise by: the least share of the validation loss's fall a rise must be
ROWLESS_RISE_SHARE = 0.01


class Overfit(Rule):
    """Fires when the validation (EVAL) loss rises above its best while the training (TRAIN) loss keeps
    falling, and sits above the training loss: the model learns its training set at the expense of data it
    has not seen.

    **Losses.** Tensors matching ``tensor_regex``; without it, the ``losses`` collection (or, if the run has
    none, every scalar tensor). Each loss needs TRAIN-mode and EVAL-mode saves; a loss saved per sample counts
    as its mean. Two instances of one loss class, one saved in TRAIN mode only and the other in EVAL mode only
    (training with label smoothing, validating without), are read as one loss (:func:`paired_losses`).

    **Evaluations.** Each validation pass -- consecutive EVAL-mode saves of the loss with no step of another
    mode between them (one save per validation batch, as Keras saves them, or a single save) -- with a TRAIN
    save before it is one evaluation ``k``: ``val[k]`` = the pass's validation loss (``val_<loss>`` where the
    hook recorded it, as the Keras hook does; otherwise the mean of the pass's saves -- see
    :class:`ValidationPasses`), ``train[k]`` = mean of the TRAIN losses saved between the previous pass and
    this one. An evaluation is judged once its pass has ended: at the pass's last EVAL save (while following a
    run still being written, possibly at the first step after it that shows the pass ended). Medians over the
    last ``window`` evaluations smooth both (``V[k]``, ``T[k]``); ``b`` is the evaluation with the lowest
    ``V`` so far. At an evaluation ``k`` judged at a step ``>= start_step`` with at least ``2 * window``
    evaluations so far::

        rose    = V[k] > V[b] + |V[b]| * rise_percent / 100     (validation worse than its best)
        learned = T[k] < T[b]                                    (training still improved since then)
        gap     = (V[k] - T[k]) / |T[k]| > ratio_threshold        (validation above training)

    and the rule fires when all three hold at ``k`` and the ``patience - 1`` evaluations before it. (Counting
    each validation batch as an evaluation made one pass at fixed weights look like many evaluations, and
    medians mix batches of one pass with those of the next.)

    A gap alone is not overfitting (a healthy model's validation loss is often 20-200% above its training
    loss, the original's only test), nor is one noisy evaluation: the validation loss must have *turned*,
    by ``rise_percent`` of its best, in medians of several evaluations, while training went on improving.

    Two more conditions judge the same at an evaluation ``k`` (``patience`` counts evaluations in a row where
    any of the three holds), from the curves' own noise rather than from the gap -- ``ratio_threshold``'s gap is only reached once
    the training loss nears 0, so overfitting caught earlier, or a validation loss that was never any good,
    passed unseen. ``sigma`` is the noise of one evaluation of the validation loss, estimated from the
    evaluations so far (:func:`evaluation_noise`: the robust spread of successive differences, so a trend is
    not counted as noise).

    * **a sustained rise** (``significance > 0``): ``rose`` and ``learned`` as above, the rise beyond noise
      (``V[k] - V[b] > 3 sigma``), validation above training (``V[k] > T[k]``), at least as many evaluations
      after the best median's as up to it (the rise lasted as long as the descent: a shorter bump, which a
      healthy curve can make and leave again, is not judged yet), and, over the evaluations from the best
      ``b`` to ``k``, the validation losses rising and the training losses falling in order, each at
      one-sided significance ``significance`` by Kendall's trend test (:func:`trend_p_value`). One turn of
      noise, or a validation loss that wanders up and down around a plateau, is not ordered enough; a model
      that memorises its training set pushes its validation loss up evaluation after evaluation, long before
      its training loss reaches 0.
    * **never generalised** (``never_improved``): the validation loss never improved -- its best median is
      within ``3 sigma`` of its first one, ``V[0] - V[b] <= 3 sigma`` -- and never got below the training loss
      the model started from (``V[b] >= L0``, ``L0`` the loss's first TRAIN save or, if higher, ``train[0]``),
      while the training loss fell by ``train_progress_percent`` of it (``T[k] <= L0 * (1 -
      train_progress_percent / 100)``, a positive ``L0``): whatever the model learned on its training
      set did not carry over at all. Training and validation data that differ (validation prepared otherwise,
      targets scaled with other statistics, a feature leaked into the training set only) look like this. A
      healthy model that reaches its best validation loss before the first evaluation is well below the
      loss it started from. This condition wins over the two above: a validation loss that never improved had
      no best to turn from, so where one of them holds too (validation labels misaligned: the loss rises from
      the first evaluation on, before training fell by ``train_progress_percent``) the finding is this one,
      not "overfitting".

    **A finished run with few evaluations.** No more evaluations can come: with fewer than ``2 * window`` but
    at least 4, the medians are of half of them (:meth:`Overfit._window_for`; Keras' ``fit(epochs=5,
    validation_data=...)`` validates 5 times); with fewer, or with evaluations only after the last TRAIN save
    (a test pass once training ended), the rule is NotApplicable and says what it saw. A run still being
    written waits for more.

    **Rows.** Every evaluation is of the same validation rows, so a steady rise over evaluations can be a few
    rows the model gets ever more confidently wrong, which a validation set of other rows would not show. Where
    the run saved the loss's predictions and labels at the EVAL steps (``Hook.recommended`` does, on its
    tapered schedule), the rise of either overfitting condition is first tested paired over the rows, the best
    median's evaluations against the last ones (:meth:`Overfit._rise_over_rows`, :class:`ValidationRows`: the
    per-row loss is whichever of cross-entropy, binary cross-entropy -- with a fitted positive-class weight --,
    squared, absolute or smooth-L1 error matches the saved loss); a rise within the rows' noise is no
    overfitting, and a finding says how many rows carry the rise when few do. Where it cannot be read, the
    conditions stand as above.

    **Workers** (a data-parallel run whose workers all save the loss): each worker's validation passes are
    judged against that worker's own training loss, and a finding names the worker (one several workers show
    is said once, naming the others). Validation on rank 0 only is common: a worker that saved no EVAL step
    has no evaluation to judge, and that is no fault. A run of one worker reads as before.

    **Boosters** (an XGBoost run: no modes, each round's metric of every evaluation set, ``validation_0-logloss``
    of the training rows beside ``validation_1-logloss``): there are no validation passes, and a booster's training
    metric falls at every round, so the rule asks one question, from the first round on: did the held-out metric
    follow at all? It fires when a held-out set's best is below its first round (or, where the hook saved that
    set's labels, the best constant prediction on them, if higher) by no more than 10% of the share the training
    metric lost, once that share is at least 10% (both curves with 5 saves or more; see
    :mod:`~smdebug.rules.generic.booster_generalisation`). The training set is the one named ``train``
    (``dtrain``, ``training``), else the one whose metric fell most. Judged: metrics where lower is better and 0 is
    a perfect fit (rmse, rmsle, mae, mape, mphe, logloss, mlogloss, error, merror, quantile); the others (auc, ndcg,
    the negative log-likelihoods) leave the rule NotApplicable. A run that evaluated held-out data only
    (``eval_set=[(X_val, y_val)]``) is judged once it has ended, where the hook saved that set's predictions and
    labels: no saved round's predictions beating the best constant prediction row by row beyond chance is the
    same finding; without them, NotApplicable.
    ``start_step``, ``patience`` and the other parameters are those of the validation passes above and are not
    used; ``tensor_regex`` selects the metrics.

    :param tensor_regex: regexes of the loss tensors (list or comma-separated string). Default None.
    :param start_step: first global step evaluated. Default ``"0"``.
    :param patience: consecutive evaluations (validation passes) needed (>= 1). Default ``"1"``.
    :param ratio_threshold: the smallest relative gap of validation over training loss. Default ``"20"`` (the
        validation loss 21 times the training loss: a memorising model's training loss goes to ~0 while its
        validation loss rises -- 200-500 times the training loss in the benchmark's overfitting runs; a
        healthy model's validation loss is commonly 1.2-6 times its training loss, which the original's 0.1
        flagged).
    :param window: evaluations (validation passes) per median (>= 1). Default ``"3"``.
    :param rise_percent: how far above its best the smoothed validation loss must be, in percent (>= 0).
        Default ``"10"``.
    :param significance: the one-sided significance level of the trend tests of the sustained-rise condition
        (0-0.5; ``"0"`` turns that condition off). Default ``"0.01"``.
    :param never_improved: judge the never-generalised condition. Default ``"True"``.
    :param train_progress_percent: how much the training loss must have fallen for the never-generalised
        condition, in percent of the loss the model started from, ``L0`` (0-100). Default ``"90"`` (an
        order of magnitude, as Overtraining's).
    """

    def __init__(self, base_trial, tensor_regex=None, start_step="0", patience="1", ratio_threshold="20",
                 window="3", rise_percent="10", significance="0.01", never_improved="True",
                 train_progress_percent="90", other_trials=None, action_str=None):
        super().__init__(base_trial, other_trials=other_trials, action_str=action_str)
        name = self.rule_name
        self.tensor_regex = as_list(name, "tensor_regex", tensor_regex)
        for bad in (r for r in self.tensor_regex if _bad_regex(r)):
            raise SMDebugValueError(f"{name}: tensor_regex {bad!r} is not a valid regular expression")
        self.start_step = as_int(name, "start_step", start_step, minimum=0)
        self.patience = as_int(name, "patience", patience, minimum=1)
        # (a gap of validation over training: below 0 any validation loss at or above training's would do)
        self.ratio_threshold = in_range(name, "ratio_threshold", as_float(name, "ratio_threshold", ratio_threshold), 0)
        self.window = as_int(name, "window", window, minimum=1)
        self.rise_percent = as_float(name, "rise_percent", rise_percent)
        if not (self.rise_percent >= 0 and np.isfinite(self.rise_percent)):
            raise SMDebugValueError(f"{name}: rise_percent must be a finite number >= 0, got {rise_percent!r}")
        self.significance = in_range(name, "significance", as_float(name, "significance", significance), 0, 0.5)
        self.never_improved = as_bool(name, "never_improved", never_improved)
        self.train_progress_percent = in_range(name, "train_progress_percent",
                                               as_float(name, "train_progress_percent", train_progress_percent), 0, 100)
        self._saved = SavedSteps(base_trial)
        self._losses = LossSelection(base_trial, [], self.tensor_regex, use_losses_collection=not self.tensor_regex,
                                     scalar_fallback=not self.tensor_regex)
        #: per (loss, worker): its evaluations, and whether the condition was met at each
        self._evaluations: Dict[Tuple[str, Optional[str]], Evaluations] = {}
        self._met: Dict[Tuple[str, Optional[str]], Dict[int, bool]] = {}
        #: per (loss, worker) of a finished run: every evaluation, to see past the one judged
        self._complete: Dict[Tuple[str, Optional[str]], Evaluations] = {}
        self._previous: Optional[int] = None  # the step invoked before
        #: per loss: its validation loss row by row, where the run saved its inputs
        self._rows: Dict[str, ValidationRows] = {}
        self._said_in_eval = False  # (see _trained_in_eval: said once)
        patterns = [NamePattern(r, name) for r in self.tensor_regex]
        #: a boosting run's metrics of its training and held-out sets (see :meth:`_judge_booster`)
        self._booster = BoosterGeneralisation(
            base_trial, self._saved, (lambda n: any(p.search(n) for p in patterns)) if patterns else None)

    def _condition(self, ev: Evaluations, k: int, w: int) -> Tuple[bool, str]:
        """(met, why) at evaluation ``k`` with medians of ``w`` evaluations: the first of the three conditions met,
        in the class docstring's order -- except that a validation loss that never improved is never said to
        have overfitted (see :meth:`_never_generalised`)."""
        V = running_medians(ev.val[:k + 1], w)
        T = running_medians(ev.train[:k + 1], w)
        b = int(np.argmin(V))
        sigma = evaluation_noise(ev.val[:k + 1])
        passes = f"medians of {w} evaluations{self._short_window(w, ev)}{describe_passes(ev.passes[:k + 1])}"
        overfitting = self._overfitting(ev, k, w, V, T, b, sigma)
        if overfitting:
            beyond, said = self._rise_over_rows(ev, k, w, b, V)
            if beyond is None and not self._visible_rise(ev, V, b):
                beyond, said = False, "a rise too small a part of the validation loss's fall, with no rows to test it"
            if beyond is False:
                self.logger.debug("%s: %s at evaluation %d not reported: %s", self.rule_name, ev.reader.name, k, said)
                overfitting = None
            elif said:
                overfitting += f"; {said}"
        never = self._never_generalised(ev, w, V, T, b, sigma, overfitting is not None)
        if never:
            return True, f"{never}; {passes}"
        if overfitting:
            return True, f"{overfitting}; {passes}"
        return False, ""

    def _rise_over_rows(self, ev: Evaluations, k: int, w: int, b: int,
                        V: List[float]) -> Tuple[Optional[bool], str]:
        """(whether the validation loss's rise from the best median's evaluations to the last ``w`` is beyond the
        sampling noise of the validation rows, what carries it) -- None when the rows cannot be read. ``V``: the
        running medians of ``w`` validation losses up to evaluation ``k`` (those of :meth:`_condition`).

        The trend test counts each evaluation as evidence, but the evaluations are of the SAME rows: a few rows
        the model gets confidently wrong, growing more confident at every evaluation, make a steady rise that a
        validation set of other rows would not show (probe 14a F2: 4 of 114 rows carried a "p = 0.001" rise).
        So the rise is tested paired, row by row: ``d`` = each row's mean loss over the last ``w`` evaluations
        minus its mean over the best median's ``w``; the rise counts when ``mean(d) > z * sd(d) / sqrt(rows)``
        at the one-sided level ``significance`` (0.01 when that is 0)."""
        if ev.reader.worker is not None:
            return None, ""
        rows = self._rows.get(ev.reader.name)
        if rows is None:
            rows = self._rows[ev.reader.name] = ValidationRows(self.base_trial, self._saved, ev.reader.name)
        best_passes = [j for j in range(b, b + w) if rows.of(ev.passes[j]) is not None]
        now_passes = [j for j in range(k - w + 1, k + 1) if rows.of(ev.passes[j]) is not None]
        at = best_at = ""
        first_now = k - w + 1
        if not now_passes:
            # (a tapered schedule saves the predictions at fewer evaluations than the loss: the last evaluation
            # after the best median's window that has them stands in -- when a few rows carry the rise, its
            # ratio to its standard error is about the square root of their number, whatever its size)
            later = [j for j in range(k - w, b + w - 1, -1) if rows.of(ev.passes[j]) is not None]
            if later:
                now_passes, at, first_now = [later[0]], f" at {describe_pass(ev.passes[later[0]])}", later[0]
        if not best_passes and now_passes:
            best_passes, best_at = self._best_stand_in(ev, k, w, b, V, rows, first_now)
        best = [rows.of(ev.passes[j]) for j in best_passes]
        now = [rows.of(ev.passes[j]) for j in now_passes]
        if not best or not now or len({len(r) for r in best + now}) != 1 or len(best[0]) < 2:
            return None, ""
        d = np.mean(now, axis=0) - np.mean(best, axis=0)
        n, rise = len(d), float(d.mean())
        se = float(d.std(ddof=1) / np.sqrt(n))
        z = NormalDist().inv_cdf(1 - (self.significance or 0.01))
        baseline = best_at or "the best median's evaluations"
        where = (f"{rows.kind} of the {n} validation rows from their saved predictions and labels, {baseline} "
                 f"against {at[4:] if at else 'the last ones'}")
        if not (rise > z * se):
            return False, (f"per row ({where}): a rise of {rise:.4g}, within {z:.2f} times its standard error "
                           f"{se:.3g} over the rows")
        # (only the last evaluations themselves tell where the error rate ended: not a stand-in for them)
        held = errors_held(rows, ev.passes, best_passes, now_passes) if not at else None
        if held:
            self.caveat(f"{ev.reader.name}: {held}")
            return False, held
        said = f"per row ({where}): +{rise:.4g}, {rise / se:.1f} times its standard error over the rows" if se else ""
        carrying, rest = rows_carrying(d)
        if carrying <= max(3, n // 10):
            said += (f"; {carrying} of the {n} rows carry the whole rise (the other {n - carrying}: "
                     f"{rest:+.3g} on average)")
        return True, said

    @staticmethod
    def _visible_rise(ev: Evaluations, V: List[float], b: int) -> bool:
        """Where the rows of the rise cannot be tested (no predictions saved near the best), whether the rise
        from the best median ``V[b]`` to the last ``V[-1]`` is at least :data:`ROWLESS_RISE_SHARE` of the fall
        the validation loss had made, from the loss the model started from to its best. ``rise_percent`` is a
        share of the best itself: a model near-perfect on a small validation set has a best near 0, and one
        row whose margin shrinks makes it rise by 10% (0.0131 -> 0.0146 on 36 rows, from 1.1 at the start,
        accuracy 1.0 throughout: probe 16a F3) -- the per-row test tells that apart, and without rows the
        rise must at least be a visible part of what training achieved. A loss with no fall to measure by
        (its best not below where it started) is judged as before."""
        l0 = max(ev.reader.first_train, ev.train[0])
        fall = l0 - V[b]
        if not (fall > 0 and np.isfinite(fall)):
            return True
        return V[-1] - V[b] >= ROWLESS_RISE_SHARE * fall

    @staticmethod
    def _best_stand_in(ev: Evaluations, k: int, w: int, b: int, V: List[float], rows: "ValidationRows",
                       before: int) -> Tuple[list, str]:
        """The evaluation (its index, in a list) that stands in for the best median's when none of those has saved rows (a
        tapered schedule saves the predictions at evaluations 0-9, 10, 20, 40, ...: the best is rarely among
        them), and how a finding names it: of the evaluations before ``before`` (the first of the last ones)
        that have rows, the one with the lowest validation loss, if it lies in the lower half of the rise from
        the best median to the last one -- a stand-in far above the best would hide a real rise. ``([], "")``
        when none does. Without it the per-row test never ran on such runs, and a rise that one row carried
        (a correctly classified row whose margin shrinks, on a 36-row validation set) was reported as overfitting
        (probe 16a F3)."""
        saved = [j for j in range(0, min(before, k - w + 1)) if rows.of(ev.passes[j]) is not None]
        if not saved:
            return [], ""
        low, high = V[b], V[-1]  # (the medians of _condition, over the same evaluations)
        j = min(saved, key=lambda i: ev.val[i])
        if not ev.val[j] <= low + (high - low) / 2:
            return [], ""
        return [j], f"{describe_pass(ev.passes[j])} (the saved evaluation nearest the best)"

    def _overfitting(self, ev: Evaluations, k: int, w: int, V: List[float], T: List[float], b: int,
                     sigma: float) -> Optional[str]:
        """Why evaluation ``k`` shows overfitting by the gap or the sustained-rise condition, or None."""
        v, t, vb, tb = V[-1], T[-1], V[b], T[b]
        rose = v > vb + abs(vb) * self.rise_percent / 100
        learned = t < tb
        gap = (v - t) / abs(t) if t else float("inf")
        turned = (f"overfitting: median validation loss {vb:.4g} at its best ({describe_pass(ev.passes[b + w - 1])}) "
                  f"-> {v:.4g} (+{(v - vb) / abs(vb) if vb else float('inf'):.1%}, rise_percent {self.rise_percent:g}")
        if rose and learned and gap > self.ratio_threshold:
            return (f"{turned}) while the median training loss fell {tb:.4g} -> {t:.4g}; validation {gap:.1%} "
                    f"above training (ratio_threshold {self.ratio_threshold:g})")
        # (evaluations after the best median's window, and up to its end: a turn is judged once it lasted as
        # long as the descent before it -- a bump shorter than that is the curve wandering, as often as not)
        after, before = k - (b + w - 1), b + w
        if self.significance > 0 and rose and learned and v - vb > 3 * sigma and v > t and after >= before:
            # (raw evaluations from the start of the best median's window to k: the stretch since the best)
            p_val = trend_p_value(ev.val[b:k + 1], rising=True)
            p_train = trend_p_value(ev.train[b:k + 1], rising=False)
            if p_val <= self.significance and p_train <= self.significance:
                noise = f"{(v - vb) / sigma:.1f} times its noise {sigma:.3g}" if sigma else "no noise"
                return (f"{turned}; {noise} per evaluation) while the median training loss fell {tb:.4g} -> "
                        f"{t:.4g}: over the {k + 1 - b} evaluations from the best median's on, validation "
                        f"rose and training fell steadily (trend p-values {p_val:.2g} and {p_train:.2g} <= "
                        f"significance {self.significance:g})")
        return None

    def _never_generalised(self, ev: Evaluations, w: int, V: List[float], T: List[float], b: int, sigma: float,
                           overfitting: bool) -> Optional[str]:
        """Why the validation loss shows no generalisation (the never-improved condition), or None. It wins over
        overfitting: a validation loss that never improved on its first evaluations, and never got below the
        loss the model started from, had no best to turn from -- misaligned validation labels made it rise from
        the first evaluation on, and "overfitting" sent the user to regularisation instead of the validation data
        (probe 14a F3). Said as soon as an overfitting condition holds, or once training progressed by
        ``train_progress_percent``."""
        # (the loss the model started from: its first training save, or the mean up to the first evaluation if
        # higher -- a model that learned much before its first evaluation is not judged by what it had learned)
        l0, v0, vb, v, t = max(ev.reader.first_train, ev.train[0]), V[0], V[b], V[-1], T[-1]
        if not (self.never_improved and l0 > 0 and v0 - vb <= 3 * sigma and vb >= l0):
            return None
        progressed = t <= l0 * (1 - self.train_progress_percent / 100)
        if not (progressed or overfitting):
            return None
        noise = f"within 3 times its noise {sigma:.3g}" if sigma else "no noise"
        rise = f"; {v:.4g} now (+{(v - vb) / abs(vb):.1%})" if v > vb and vb else ""
        best = ("its lowest" if b == 0 else
                f"{vb:.4g} at its best ({describe_pass(ev.passes[b + w - 1])}; {noise} per evaluation)")
        return (f"no generalisation: the validation loss never improved: median {v0:.4g} at the first "
                f"evaluations ({describe_pass(ev.passes[w - 1])}), {best}{rise}, and never below the training loss "
                f"the model started from ({l0:.4g}), while the median training loss fell to {t:.4g} "
                f"(-{(l0 - t) / l0:.1%}"
                + (f", train_progress_percent {self.train_progress_percent:g}" if progressed else "")
                + "): what the model learned did not carry over to the validation data (training and validation "
                "data prepared differently? validation labels misaligned with their inputs?)")

    def _fires(self, ev: Evaluations, k: int, history: Dict[int, bool], w: int) -> Optional[str]:
        """Why the rule fires at evaluation ``k`` (the condition met there and at the ``patience - 1``
        evaluations before it; medians of ``w`` evaluations), or None; ``history`` keeps whether it was met at
        each evaluation."""
        met, why = self._condition(ev, k, w)
        history[k] = met
        if not met:
            return None
        streak = 1
        j = k - 1
        while streak < self.patience and j >= 0 and ev.steps[j] >= self.start_step:
            if j not in history:
                history[j] = (j + 1 >= 2 * w) and self._condition(ev, j, w)[0]
            if not history[j]:
                break
            streak += 1
            j -= 1
        return why if streak >= self.patience else None

    def _all_evaluations(self, name: str, worker: Optional[str]) -> Evaluations:
        """Every evaluation of a finished run (read once, whole)."""
        full = self._complete.get((name, worker))
        if full is None:
            full = self._complete[(name, worker)] = Evaluations(self.base_trial, self._saved, name, worker)
            full.extend(self.base_trial.steps()[-1])
        return full

    def _window_for(self, name: str, worker: Optional[str]) -> int:
        """The evaluations per median: ``window``, or -- on a run that has ended with fewer than ``2 * window``
        evaluations, where no more will come -- half of them, down to :data:`SHORT_WINDOW` (Keras' tutorial
        ``fit(epochs=5, validation_data=...)`` validates 5 times: "needs 6" made a healthy finished run
        "could not judge"). Shorter medians there are safe from false alarms: fewer than 6 evaluations are never
        ordered enough for the trend test at significance 0.01, so only the large gap and the never-improved
        conditions can fire."""
        if not self.base_trial.loaded_all_steps:
            return self.window
        n = len(self._all_evaluations(name, worker).val)
        if n >= 2 * self.window or n // 2 < SHORT_WINDOW:
            return self.window
        return n // 2

    def _short_window(self, w: int, ev: Evaluations) -> str:
        """For findings made with a shorter window than asked for: why."""
        if w >= self.window:
            return ""
        return (f" (not window={self.window}: the run ended after {len(ev.val)} evaluations, fewer than 2 * window "
                f"= {2 * self.window})")

    def _too_few(self, names: Sequence[str]) -> Optional[str]:
        """On a run that has ended with validation passes but too few evaluations to judge, what was seen and
        why it cannot be judged (None when nothing was seen): said as NotApplicable -- no more can come, and a
        run that validated a few times is no less judged than one that never did."""
        return ended_run_said(self, names, self._too_few_in)

    def _too_few_in(self, names: Sequence[str], last: int) -> Optional[str]:
        """:meth:`_too_few` of the run ended at step ``last``."""
        seen = []  # (evaluations, name, worker, all evaluations)
        for name in names:
            if not self._saved.steps(name, ModeKeys.TRAIN):
                continue  # (no training loss to compare with: not a matter of how often it validated)
            for worker in self._saved.seen_workers(name, last):
                full = self._all_evaluations(name, worker)
                if len(full.val) >= 2 * self._window_for(name, worker):
                    return None  # (judged, or judged at evaluations to come in this pass over the run)
                if full.reader.passes:
                    seen.append((len(full.val), name, worker, full))
        if not seen:
            return None
        n, name, worker, full = max(seen, key=lambda e: e[0])
        shown = worker_named(name, worker) if worker is not None else name
        after = after_training(self.base_trial, self._saved, name, full.reader.passes)
        if after:
            return after.format(shown=shown, rule="Overfit")
        least = 2 * min(self.window, SHORT_WINDOW)
        return (f"{shown}: validated {n} time{'s' if n != 1 else ''} (validation passes with TRAIN "
                f"saves before them), too few for a validation trend: it needs at least {least} evaluations "
                f"(2 * window = {2 * self.window}; medians of {min(self.window, SHORT_WINDOW)} on a run that ended "
                "with fewer), and the run has ended")

    def _new_best_later(self, name: str, worker: Optional[str], ev: Evaluations, k: int, w: int) -> Optional[str]:
        """On a finished run, how the validation loss came back to its best after evaluation ``k`` (a median of
        ``window`` evaluations at or below the best so far at ``k``), or None: a rise the run later left was a
        transient (BatchNormalization's moving statistics catching up with raw features, a warm-up bump, one
        row's margin shrinking for a while), not training past its best model. A memorising model never comes
        back to its best."""
        if not self.base_trial.loaded_all_steps:
            return None
        full = self._all_evaluations(name, worker)
        if len(full.val) <= k + 1 or full.val[:k + 1] != ev.val[:k + 1]:
            return None
        medians = running_medians(ev.val[:k + 1], w)
        best = min(medians)
        if medians[-1] <= best:
            return None  # (nothing rose at k to come back from: a validation loss flat since its first evaluations)
        later = running_medians(full.val, w)[k - w + 2:]  # (medians of windows ending after k)
        # (back at its best is enough: a rise of 10% of a small best, 0.119 -> 0.132 on a 114-row validation set
        # whose accuracy never moved, came back to 0.117 by the end -- probe 16a F3 -- and a memorising model's
        # validation loss does not come back to its best at all)
        if not later or min(later) > best:
            return None
        j = int(np.argmin(later)) + k + 1
        return (f"the validation loss later came back to a median of {min(later):.4g} "
                f"({describe_pass(full.passes[j])}), at or below its best of {best:.4g} at the time")

    def _trained_in_eval(self, step: int) -> Optional[str]:
        """At the first step from the one where the PyTorch hook saw an optimizer step the model while
        ``model.training`` was False (``_meta.trained_in_eval``): the finding, once. Such a loop called
        ``model.eval()`` to validate and never ``model.train()`` again: the rest of training ran with Dropout off
        and BatchNorm on its running statistics, and its steps were saved as EVAL steps, so that the run looks
        like a short training followed by a long evaluation -- every rule judging training or validation passed
        it (probe 19a F1: held-out accuracy 0.806 against 0.854)."""
        if self._said_in_eval:
            return None
        at = trained_in_eval(self.base_trial)
        if at is None or not self.reached(step, at):
            return None
        self._said_in_eval = True
        self.mark_evaluated()
        return (f"the model trained in eval() mode: an optimizer stepped it at step {at} while model.training was "
                f"False, and training went on so, saved as EVAL steps ({len(self.base_trial.steps(mode=ModeKeys.EVAL))}"
                f" of them); Dropout was off and BatchNorm used its running statistics while the model trained, and "
                f"no step from there is a validation: call model.train() after each validation pass (if training in "
                f"eval() is deliberate, BatchNorm frozen for fine-tuning, call hook.set_mode(smd.modes.TRAIN))")

    def _evaluated_in_train_mode(self, step: int) -> Optional[str]:
        """At the first step from the one where the PyTorch hook saw forward passes of the model without gradients
        in train() mode followed by more training (``_meta.evaluated_in_train_mode``): the finding, once. Such a
        loop validates under ``torch.no_grad()`` without ``model.eval()``: Dropout stays on and BatchNorm normalises
        by the batch and learns the validation data's statistics, and the passes are saved as training steps, so
        that the run seems to have no validation (probe 19a F3: held-out accuracy 0.798 against 0.867)."""
        if self._said_in_eval:
            return None
        record = evaluated_in_train_mode(self.base_trial)
        if record is None or not self.reached(step, record["step"]):
            return None
        self._said_in_eval = True
        self.mark_evaluated()
        modules = record["modules"]
        named = f" ({', '.join(modules[:3])}{', ...' if len(modules) > 3 else ''})" if modules else ""
        return (f"the model was evaluated in train() mode: {record['forwards']} forward pass(es) without gradients "
                f"ran with model.training True before training went on at step {record['step']}; its Dropout/"
                f"BatchNorm layers{named} behave as in training there (random units dropped, BatchNorm normalising "
                f"by the batch and learning its statistics), so any score of those passes is not the model's, and "
                f"the passes were saved as training steps: call model.eval() before validating and model.train() "
                f"after")

    def _judge_booster(self, step: int) -> Optional[bool]:
        """A boosting run (metrics of several evaluation sets, no modes): whether a held-out set's metric never
        followed the training set's, judged at every step from the start (see
        :mod:`~smdebug.rules.generic.booster_generalisation`); None for another run."""
        if not self._booster.applies():
            return None
        rounds = continued_rounds(self.base_trial)
        if rounds:
            # what the held-out and training metrics gained is measured from the run's first round, here a model
            # already trained: both had gained most of what they would before the run began, and what is left
            # (the training metric still falling, the held-out one at its plateau) read as "no generalisation"
            # on a healthy continued model (probe 18a F2)
            self.not_applicable(f"the run continues a model trained for {rounds} rounds before (xgb_model): its "
                                "first round is not the model's first, so what the held-out metric gained since "
                                "the model's start is not in the run")
            return False
        alone = self._booster.held_out_alone()
        if alone is not None:
            return self._judge_held_out_alone(alone, step)
        pairs = self._booster.pairs()
        failing, judged = [], False
        for pair in pairs:
            done, finding = self._booster.judge(pair, step)
            judged = judged or done
            if finding:
                failing.append((None, finding))
        if failing:
            return first_finding(failing)
        if judged:
            return False
        if not pairs:
            sets = ", ".join(_evaluation_sets(self.base_trial))
            self.not_applicable(
                f"the run's evaluation sets share no metric the rule judges ({sets}): it compares a held-out set's "
                "rmse, rmsle, mae, mape, mphe, logloss, mlogloss, error, merror or quantile with the training data's")
        elif len(self._booster.unjudged) == len(pairs):
            self.not_applicable("; ".join(sorted(set(self._booster.unjudged.values()))))
        elif self.base_trial.loaded_all_steps:
            self.not_applicable(f"the run ended before the rule could judge it: it needs {MIN_ROUNDS} rounds of both "
                                "the training and the held-out metric")
        else:
            self.not_evaluated(f"needs {MIN_ROUNDS} saved rounds of both the training and the held-out metric")
        return False

    def _judge_held_out_alone(self, name: str, step: int) -> bool:
        """A boosting run that evaluated one held-out set only: judged at its last step, once it has ended."""
        if self.base_trial.loaded_all_steps and step >= self.base_trial.last_complete_step:
            judged, finding = self._booster.judge_alone(name)
            if finding:
                return finding
            if judged:
                return False
            self.not_applicable(f"the run evaluated one data set only ({name}) and its predictions and labels could "
                                f"not be tested row by row (to have it judged, {validation_advice(self.base_trial)})")
        else:
            self.not_evaluated(f"the run evaluates one data set only ({name}): its predictions are tested against "
                               "its labels once the run has ended")
        return False

    def invoke_at_step(self, step):
        booster = self._judge_booster(step)
        if booster is not None:
            return booster
        in_eval = self._trained_in_eval(step) or self._evaluated_in_train_mode(step)
        if in_eval:
            return in_eval
        judged = ended = False
        previous, self._previous = self._previous, step
        losses = paired_losses(self._saved, self._losses.names())  # (once a step: both uses below)
        for name in losses:
            workers = self._saved.seen_workers(name, step)  # ([None] in a run of one worker)
            failing = []  # [(worker, finding)]
            for worker in workers:
                ev = self._evaluations.get((name, worker))
                if ev is None:
                    ev = self._evaluations[(name, worker)] = Evaluations(self.base_trial, self._saved, name, worker)
                # (read at every step, before start_step too: a pass that ended before it is not judged later)
                if not (ev.extend(step) and step >= self.start_step and ended_now(ev.passes[-1], step, previous)):
                    continue  # no evaluation ended at this step (or none of this worker's: it does not validate)
                ended = True
                k = len(ev.steps) - 1
                w = self._window_for(name, worker)
                if k + 1 < 2 * w:
                    continue
                judged = True
                note_read(name)
                why = self._fires(ev, k, self._met.setdefault((name, worker), {}), w)
                if why:
                    later = self._new_best_later(name, worker, ev, k, w)
                    if later:
                        self.logger.debug("%s: %s at step %d not reported: %s", self.rule_name, name, step, later)
                        why = None
                if why:
                    shown = worker_named(name, worker) if len(workers) > 1 else name
                    failing.append((worker, f"{shown}: {why}"
                                    + (f"; for {self.patience} evaluations" if self.patience > 1 else "")))
            if failing:
                return first_finding(failing)
        if not judged and said_trained_nothing(self, self._saved, "validation passes against the training loss "
                                                                  "before them"):
            return False
        if not judged:
            seen = max((len(ev.val) for ev in self._evaluations.values()), default=0)
            too_few = self._too_few(losses)
            if too_few:
                self.not_applicable(too_few)  # (the run has ended: nothing more to wait for)
                return False
            if ended or 0 < seen < 2 * self.window:
                # (said at every step once a pass was seen: a later step's generic reason hid how many there were)
                self.not_evaluated(f"needs 2 * window = {2 * self.window} evaluations (validation passes of "
                                   "EVAL-mode saves of a loss with TRAIN-mode saves before them); "
                                   f"{seen} found {'' if self.base_trial.loaded_all_steps else 'so far'}".rstrip())
            else:
                self.not_evaluated(f"judges each validation pass (consecutive EVAL-mode saves of a loss) once it "
                                   f"ended, from start_step={self.start_step}, against the TRAIN-mode saves before it")
            _no_validation(self, self._losses.names())
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


class Plateau:
    """Along a series (appended in order): how many values since the best last improved, where ``v``
    improves on the best ``b`` when ``b - v >= max(delta, |b| * min_delta_percent / 100)`` and ``b - v > 0``."""

    def __init__(self, delta: float, min_delta_percent: float):
        self.delta, self.rel = delta, min_delta_percent / 100
        self.best: Optional[float] = None
        self.best_index = -1
        self.wait = 0
        self.count = 0

    def add(self, value: float) -> None:
        if self.best is None or (value < self.best and self.best - value >= max(self.delta, abs(self.best) * self.rel)):
            self.best, self.best_index, self.wait = value, self.count, 0
        else:
            self.wait += 1
        self.count += 1


class Overtraining(Rule):
    """Early stopping as a rule: fires when the validation loss stopped improving while training went on
    improving the training loss, or when the training loss stopped improving long before training ended.

    **Losses.** The ``losses`` collection (or, if the run has none, every scalar tensor); a loss saved per
    sample counts as its mean. TRAIN-mode saves are the training loss and EVAL-mode saves the validation
    loss; a loss saved without modes (GLOBAL only) counts as a training loss. Two instances of one loss class,
    one saved in TRAIN mode only and the other in EVAL mode only, are read as one loss (:func:`paired_losses`).

    **Evaluations.** An evaluation is one validation pass: consecutive EVAL-mode saves of the loss with no
    step of another mode between them (Keras saves one EVAL step per validation batch; a loop may save one
    EVAL step per evaluation or one per batch). Its validation loss is ``val_<loss>`` where the hook recorded
    it (the Keras hook does, at the pass's last step), otherwise the mean of the pass's saves (see
    :class:`ValidationPasses`). A pass is judged once it has ended: at its last EVAL save (while following a
    run still being written, possibly at the first step after it that shows the pass ended). Counting each
    validation batch as an evaluation made one pass at fixed weights look like many evaluations without
    improvement.

    **Series.** The validation loss is judged as the running median of its last ``window_validation``
    evaluations, the training loss as medians of consecutive blocks of ``window_train`` TRAIN saves (so one noisy
    minibatch or evaluation neither makes nor breaks an improvement). Along each series the first value sets
    the best ``b``; a later value ``v`` *improves* when ``b - v >= max(delta, |b| * min_delta_percent / 100)``
    and ``v < b`` (then ``v`` is the best): a relative improvement, which a converging loss keeps making
    at every scale, where the original's absolute 0.01 was out of reach of any loss below about 0.1.

    **Condition.** When an evaluation ends, if the validation series has not improved for the last ``w`` values
    with ``w >= patience_validation`` and ``w >=`` the number of values up to its best (at least half of
    the evaluations so far came after the best: training went on at least as long as it took to get
    there), *and* the training series fell by at least ``train_progress_percent`` since the best validation
    value (training went on learning the training set, not the task; a training loss that did not change,
    e.g. 0 throughout, did not fall; a training loss not positive there has no such share -- a likelihood
    without its constant term, an ELBO -- and the test is not made for it, which the verdict says). A
    validation series whose best is its first value never improved at all: the
    finding says the model never generalised (no point to stop early at), not that training went on past its best.
    With ``judge_training``, also at a
    TRAIN save that completes a block, when the last ``patience_train`` blocks were no improvement (the
    original's test on the training loss alone; off by default: a healthy run's training loss converges
    and stops improving too, and nothing tells the two apart without a validation loss). It fires again at
    every further such evaluation or save.

    **A finished run with few evaluations** (fewer than ``window_validation``, or only after the last TRAIN
    save: a test pass) is NotApplicable, saying what was seen, where a run still being written waits for more.

    **Workers** (a data-parallel run whose workers all save the loss): each worker's series -- its validation
    passes, its training loss -- is its own, as in Overfit; a worker that saved no EVAL step (validation on
    rank 0 only) is judged on its training loss alone (with ``judge_training``) or not at all, which is no
    fault. A run of one worker reads as before.

    :param patience_train: blocks of TRAIN saves without improvement (>= 1). Default ``"5"``.
    :param patience_validation: evaluations (validation passes) without improvement (>= 1). Default ``"10"``.
    :param delta: smallest absolute decrease that counts as an improvement (>= 0). Default ``"0"`` (the
        original's ``"0.01"`` is still accepted; the larger of the two thresholds applies).
    :param min_delta_percent: smallest decrease that counts as an improvement, relative to the best, in
        percent (>= 0). Default ``"1"``.
    :param window_train: TRAIN saves per block (>= 1). Default ``"10"``.
    :param window_validation: evaluations (validation passes) per running median (>= 1). Default ``"3"``.
    :param train_progress_percent: how much the training loss must have fallen since the best validation
        value, in percent (0-100). Default ``"90"`` (an order of magnitude: a healthy run's training loss
        goes on falling slowly after its validation loss levels off; a model that memorises its training set
        drives it towards 0).
    :param judge_training: also fire on the training loss alone (``patience_train``). Default ``"False"``.
    """

    def __init__(self, base_trial, patience_train="5", patience_validation="10", delta="0", min_delta_percent="1",
                 window_train="10", window_validation="3", train_progress_percent="90", judge_training="False",
                 other_trials=None, action_str=None):
        super().__init__(base_trial, other_trials=other_trials, action_str=action_str)
        name = self.rule_name
        self.patience_train = as_int(name, "patience_train", patience_train, minimum=1)
        self.patience_validation = as_int(name, "patience_validation", patience_validation, minimum=1)
        self.delta = as_float(name, "delta", delta)
        if not (self.delta >= 0 and np.isfinite(self.delta)):
            raise SMDebugValueError(f"{name}: delta must be a finite number >= 0, got {self.delta!r}")
        self.min_delta_percent = as_float(name, "min_delta_percent", min_delta_percent)
        if not (self.min_delta_percent >= 0 and np.isfinite(self.min_delta_percent)):
            raise SMDebugValueError(f"{name}: min_delta_percent must be a finite number >= 0, got "
                                    f"{min_delta_percent!r}")
        self.window_train = as_int(name, "window_train", window_train, minimum=1)
        self.window_validation = as_int(name, "window_validation", window_validation, minimum=1)
        self.train_progress_percent = in_range(name, "train_progress_percent",
                                               as_float(name, "train_progress_percent", train_progress_percent), 0, 100)
        self.judge_training = as_bool(name, "judge_training", judge_training)
        self._saved = SavedSteps(base_trial)
        self._losses = LossSelection(base_trial, [], [], use_losses_collection=True)
        #: per (loss, mode, worker): [values read, their mode steps, Plateau over the smoothed series, next to
        #: read, smoothed series as (mode step, median)] -- the training loss (TRAIN, or GLOBAL without modes)
        self._series: Dict[Tuple[str, ModeKeys, Optional[str]], list] = {}
        #: per (loss, worker): its validation passes, and [pass values, smoothed series as (pass index, median),
        #: Plateau]
        self._passes: Dict[Tuple[str, Optional[str]], ValidationPasses] = {}
        #: losses whose training-progress test could not be measured (not positive): name -> the value there
        self._unmeasured: Dict[str, float] = {}
        self._validation: Dict[Tuple[str, Optional[str]], list] = {}
        #: per (loss, worker) of a finished run: every validation pass, read whole
        self._all_passes: Dict[Tuple[str, Optional[str]], ValidationPasses] = {}
        #: per (loss, worker, first step of a pass): where the pass is in training, for findings
        self._trained: Dict[Tuple[str, Optional[str], int], str] = {}
        #: per loss: its validation loss row by row, where the run saved its inputs (see _errors_held)
        self._rows: Dict[str, ValidationRows] = {}
        self._previous: Optional[int] = None  # the step invoked before

    def _series_at(self, name: str, mode: ModeKeys, s: int, worker: Optional[str]) -> list:
        """Read the loss's saves of ``mode`` (TRAIN or GLOBAL; ``worker``'s when given) up to mode step ``s`` into
        its smoothed series."""
        entry = self._series.get((name, mode, worker))
        if entry is None:
            entry = self._series[(name, mode, worker)] = [[], [], Plateau(self.delta, self.min_delta_percent), 0, []]
        values, steps, plateau, done, smoothed = entry
        source = self._saved.steps(name, mode)
        end = bisect.bisect_right(source, s)
        for m in source[done:end]:
            if worker is not None and worker not in self._saved.workers(name, m, mode):
                continue
            value = self._saved.mean(name, m, mode, worker)
            if value is None:
                continue
            values.append(value)
            steps.append(m)
            if len(values) % self.window_train == 0:
                smoothed.append((m, float(np.median(values[-self.window_train:]))))
                plateau.add(smoothed[-1][1])
        entry[3] = max(done, end)
        return entry

    def _judge_training(self, name: str, mode: ModeKeys, s: int, worker: Optional[str] = None
                        ) -> Tuple[bool, Optional[str]]:
        """(judged, finding) at the training save of mode step ``s`` (``worker``'s): read for the validation
        test, judged alone only with ``judge_training``."""
        if not contains(self._saved.steps(name, mode), s):
            return False, None
        if worker is not None and worker not in self._saved.workers(name, s, mode):
            return False, None
        _, _, plateau, _, smoothed = self._series_at(name, mode, s, worker)
        if not smoothed or smoothed[-1][0] != s or not self.judge_training:
            return False, None  # no new value of the smoothed series at this save, or not judged alone
        note_read(name)
        if plateau.wait < self.patience_train:
            return True, None
        best_step = smoothed[plateau.best_index][0]
        return True, (f"{self._shown(name, worker)}: training loss has not improved by {self.min_delta_percent:g}% "
                      f"for {plateau.wait} "
                      f"blocks of {self.window_train} saves (best median {plateau.best:.6g} at {mode_label(mode)} "
                      f"{best_step}; patience_train {self.patience_train})")

    def _judge_validation(self, name: str, step: int, previous: Optional[int], worker: Optional[str] = None
                          ) -> Tuple[bool, Optional[str]]:
        """(judged, finding) at global step ``step`` for the validation passes of the loss (``worker``'s) that
        ended there (``previous``: the step invoked before)."""
        passes = self._passes.get((name, worker))
        if passes is None:
            passes = self._passes[(name, worker)] = ValidationPasses(self.base_trial, self._saved, name, worker)
        new = passes.extend(step)
        if not new:
            return False, None
        values, smoothed, plateau = self._validation.setdefault(
            (name, worker), [[], [], Plateau(self.delta, self.min_delta_percent)])
        w = self.window_validation
        for i in range(len(passes.passes) - new, len(passes.passes)):
            values.append(passes.passes[i].value)
            if len(values) >= w:
                smoothed.append((i, float(np.median(values[-w:]))))
                plateau.add(smoothed[-1][1])
        if (not smoothed or smoothed[-1][0] != len(passes.passes) - 1
                or not ended_now(passes.passes[-1], step, previous)):
            return False, None  # no new value of the smoothed series yet, or one that ended before the rule started
        note_read(name)
        if plateau.wait < self.patience_validation or plateau.wait < plateau.best_index + 1:
            return True, None
        train = self._series.get((name, ModeKeys.TRAIN, worker))
        if train is None or len(train[4]) < 2:
            return True, None
        best = passes.passes[smoothed[plateau.best_index][0]]
        before = [v for m, v in train[4] if self.base_trial.global_step(ModeKeys.TRAIN, m) <= best.last]
        last = train[4][-1][1]
        if before and not before[-1] > 0:
            # (a share of the loss's value is no measure of a loss that takes values <= 0: any fall of a negative
            # loss passes "<= L * (1 - p)" -- a Poisson or Gaussian likelihood without its constant term, an
            # ELBO. Said, not guessed: probe 16a F1, a healthy Poisson regression read as overtraining)
            self._unmeasured.setdefault(name, before[-1])
            self.caveat(self._unmeasured_text())
            return True, None
        # (a training loss that did not change did not fall: 0 -> 0 passes "<= 0 * (1 - p)" but is no progress)
        if not before or not (last < before[-1] and last <= before[-1] * (1 - self.train_progress_percent / 100)):
            return True, None
        # (the loss the model started from: its first TRAIN save, or the first median if higher, as Overfit's)
        start = max(v for v in (passes.first_train, train[4][0][1]) if v is not None)
        if plateau.best_index == 0 and plateau.best >= start:
            # best at its first evaluations, and no lower than the loss the model started from: the model never
            # generalised, so there was no point to stop early at (probe 12b W1: "has not improved ... for 17
            # evaluations" read as overtraining past a best epoch). A first validation far below that start is a
            # model that generalised within its first epoch and then overtrained: the plain words below (probe 19a
            # W1: "never generalised ... check the validation data" of a validation loss at 0.37 from 1.39)
            return True, (f"{self._shown(name, worker)}: validation loss never improved by {self.min_delta_percent:g}% "
                          f"on its first evaluations (median {plateau.best:.6g} at {describe_pass(best, mode=True)}) "
                          f"in {plateau.wait} evaluations while the training loss fell ({before[-1]:.6g} -> "
                          f"{last:.6g}, medians of {self.window_train} saves): the model never generalised, so "
                          "early stopping has no better point to keep; check that the validation data is prepared "
                          f"as the training data (the same scaling, the same labels){describe_passes(passes.passes)}")
        held = self._errors_held(name, worker, passes, smoothed[plateau.best_index][0])
        if held:
            self.caveat(f"{name}: {held}")
            return True, None
        now = smoothed[-1][1]
        rise = f" (+{(now - plateau.best) / abs(plateau.best):.1%})" if plateau.best and now > plateau.best else ""
        return True, (f"{self._shown(name, worker)}: validation loss has not improved by "
                      f"{self.min_delta_percent:g}% for "
                      f"{plateau.wait} evaluations (best median {plateau.best:.6g} at "
                      f"{describe_pass(best, mode=True)}{self._trained_by(name, worker, best)}; now {now:.6g}{rise}; "
                      f"patience_validation {self.patience_validation}) while the training loss went on "
                      f"falling ({before[-1]:.6g} -> {last:.6g}, medians of {self.window_train} saves)"
                      f"{describe_passes(passes.passes)}")

    def _errors_held(self, name: str, worker: Optional[str], passes: ValidationPasses, best_end: int) -> Optional[str]:
        """Why a validation loss that stopped improving is no overtraining for a classifier whose validation error
        rate did not rise since its best (see :func:`errors_held`), or None. The best window's evaluations with
        saved rows are compared with the last window's; a tapered schedule saves the rows at fewer evaluations,
        so the saved evaluation with the lowest loss up to the best window's end stands in for the best, while
        the last window's must have been saved (an earlier evaluation does not tell where the error rate ended:
        None)."""
        if worker is not None:
            return None
        rows = self._rows.get(name)
        if rows is None:
            rows = self._rows[name] = ValidationRows(self.base_trial, self._saved, name)
        if rows.inputs is None:
            return None
        p, w = passes.passes, self.window_validation
        saved = [j for j in range(len(p)) if rows.of(p[j]) is not None]
        best = [j for j in saved if best_end - w < j <= best_end] or [
            min((j for j in saved if j <= best_end), key=lambda j: p[j].value, default=None)]
        # (the last window's own evaluations only: an earlier one says nothing of where the error rate ended)
        now = [j for j in saved if j > len(p) - 1 - w and j > best_end]
        if None in best or not now:
            return None
        return errors_held(rows, p, best, now, how="stopped improving", verdict="overtraining")

    def _unmeasured_text(self) -> str:
        losses = ", ".join(f"{n} ({v:.4g})" for n, v in self._unmeasured.items())
        return (f"the training loss's fall since the validation's best was not measured for {losses}: it is not "
                f"positive there, and train_progress_percent ({self.train_progress_percent:g}) is a share of the "
                "loss's value (a likelihood without its constant term can be negative), so whether the validation "
                "loss stopped improving while training went on was not judged for it")

    def _shown(self, name: str, worker: Optional[str]) -> str:
        """The loss as findings name it: with ``worker`` once several workers saved it."""
        return worker_named(name, worker) if len(self._saved.seen_workers(name, self._previous)) > 1 else name

    def _trained_by(self, name: str, worker: Optional[str], p: ValidationPass) -> str:
        """Where pass ``p`` is in training, for findings: ``, after TRAIN step 180`` (the last TRAIN save of the
        loss before it -- the point early stopping would have kept); empty when none came before."""
        key = (name, worker, p.first)
        if key not in self._trained:  # (kept: the rule fires again at each later evaluation, from the same best)
            train = self._series.get((name, ModeKeys.TRAIN, worker))
            self._trained[key] = ""
            for m in reversed(train[1] if train else []):
                g = self.base_trial.global_step(ModeKeys.TRAIN, m)
                if g is not None and g <= p.first:
                    self._trained[key] = f", after TRAIN step {m}"
                    break
        return self._trained[key]

    def invoke_at_step(self, step):
        step_mode, mode_step = self.base_trial.mode_modestep(step)
        judged = False
        previous, self._previous = self._previous, step
        losses = paired_losses(self._saved, self._losses.names())  # (once a step: both uses below)
        for name in losses:
            has_modes = bool(self._saved.steps(name, ModeKeys.TRAIN) or self._saved.steps(name, ModeKeys.EVAL))
            failing = []  # [(worker, finding)]: each worker's series (a run of one worker: [None])
            for worker in self._saved.seen_workers(name, step):
                if not has_modes:
                    found = self._judge_training(name, ModeKeys.GLOBAL, step, worker)
                else:
                    found = (False, None)
                    if step_mode == ModeKeys.TRAIN:
                        found = self._judge_training(name, ModeKeys.TRAIN, mode_step, worker)
                    if found[1] is None:
                        validation = self._judge_validation(name, step, previous, worker)
                        found = (found[0] or validation[0], validation[1])
                judged = judged or found[0]
                if found[1] is not None:
                    failing.append((worker, found[1]))
            if failing:
                return first_finding(failing)
        if not judged and said_trained_nothing(self, self._saved, "validation passes (and training saves) "
                                                                  "while the model trains"):
            return False
        if not judged:
            self.not_evaluated(f"needs window_validation={self.window_validation} evaluations (validation passes of "
                               f"EVAL-mode saves) of a loss (or, with judge_training, blocks of "
                               f"window_train={self.window_train} training saves)")
            if not self.judge_training:
                too_few = self._too_few(losses)
                if too_few:
                    self.not_applicable(too_few)  # (the run has ended: nothing more to wait for)
                else:
                    _no_validation(self, self._losses.names())
        return False

    def _too_few(self, names: Sequence[str]) -> Optional[str]:
        """On a run that has ended with validation passes but fewer than ``window_validation`` of them (nothing
        judged, no more to come), what was seen and why it cannot be judged; None otherwise. (With fewer
        evaluations than ``window_validation + patience_validation`` the rule could not fire anyway.)"""
        return ended_run_said(self, names, self._too_few_in)

    def _too_few_in(self, names: Sequence[str], last: int) -> Optional[str]:
        """:meth:`_too_few` of the run ended at step ``last``."""
        seen = []
        for name in names:
            if not self._saved.steps(name, ModeKeys.TRAIN):
                continue  # (no training loss saved: not a matter of how often it validated)
            for worker in self._saved.seen_workers(name, last):
                passes = self._all_passes.get((name, worker))
                if passes is None:  # (a reader of its own: the one judged from reads along the steps)
                    passes = self._all_passes[(name, worker)] = ValidationPasses(self.base_trial, self._saved, name,
                                                                                 worker)
                    passes.extend(last)
                if len(passes.passes) >= self.window_validation:
                    return None  # (judged, or judged at passes to come in this pass over the run)
                if passes.passes:
                    seen.append((len(passes.passes), name, worker, passes.passes))
        if not seen:
            return None
        n, name, worker, found = max(seen, key=lambda e: e[0])
        shown = worker_named(name, worker) if worker is not None else name
        after = after_training(self.base_trial, self._saved, name, found)
        if after:
            return after.format(shown=shown, rule="Overtraining")
        return (f"{shown}: validated {n} time{'s' if n != 1 else ''}, too few to judge early "
                f"stopping: it needs window_validation={self.window_validation} evaluations for one median, and "
                f"{self.window_validation + self.patience_validation} to find patience_validation="
                f"{self.patience_validation} without improvement; the run has ended")
