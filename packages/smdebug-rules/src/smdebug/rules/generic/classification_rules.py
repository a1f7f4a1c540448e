"""Rules on a classifier's labels and predictions: the confusion matrix, imbalanced or mispredicted classes.

Labels and predictions are saved tensors (e.g. ``hook.save_tensor("labels", y, "labels")``). Class ids are
taken as follows: a tensor with one more dimension than its partner holds scores (probabilities, logits,
one-hot vectors) and becomes its ``argmax`` over its class axis: the last (``(N, C)``, Keras's ``(N, H, W,
C)``), or the second for labels with positions (PyTorch's ``(N, C, H, W)`` scores of ``(N, H, W)`` labels;
shapes that fit both ways take the framework's order); labels are rounded to the nearest integer;
predictions with one score per label are thresholded by what they are (:mod:`.prediction_scale`: the
XGBoost objective or the recorded loss says probabilities, above 0.5, or raw margins, above 0; with no
record, values without fractions are ids and values in [0, 1] probabilities, and other scores are not
turned into classes at all: Confusion is then NotEvaluated and says why); negative ids are ignored, and so are ids
beyond the classes that scores with a class axis tell apart (a loss's ``ignore_index``, such as 255 on the unlabelled
borders of segmentation masks: a cross-entropy fails on any other such target). When several label tensors
(``labels_0``, ``labels_1``...) are selected, they are paired in order of their trailing number with the
prediction tensors; values saved by several workers are pooled. Label tensors of different tasks (two
classification losses of a multi-task model, two outputs of a Keras model: :mod:`.label_tasks`) are judged
apart, each task by itself, and a finding names its labels.
"""

from __future__ import annotations

import hashlib
import math
from statistics import NormalDist
from typing import Dict, List, Optional, Tuple

import numpy as np

from smdebug.core import loss_inputs
from smdebug.core.class_weights import recorded_class_weights
from smdebug.core.modes import ModeKeys
from smdebug.core.run_info import framework_of
from smdebug.exceptions import SMDebugValueError
from smdebug.rules.evaluation import looking_for
from smdebug.rules.generic import label_tasks
from smdebug.rules.generic.activation_rules import _check_regexes, batches_at
from smdebug.rules.generic.ignored_targets import beyond_classes
from smdebug.rules.generic.ignored_targets import class_axes as _class_axes
from smdebug.rules.generic.input_rules import StepSums
from smdebug.rules.generic.prediction_scale import recorded_kind, scores_to_ids
from smdebug.rules.generic.selection import MAX_CLASS_ID, collection_tensors, select_tensors, stopped_on_request
from smdebug.rules.generic.xgboost_rules import _hyperparameter, booster_params, cross_validation, regression_objective
from smdebug.rules.params import as_bool, as_float, as_int, as_list, as_optional_int, in_range
from smdebug.rules.rule import Rule


def _not_ids(labels: np.ndarray) -> str:
    """What targets with fractions are: class probabilities when each row (the last axis) is a distribution,
    as soft targets are (mixup, label smoothing done by hand, a teacher's outputs); else a regression's."""
    if labels.ndim >= 2 and labels.shape[-1] >= 2 and np.all(np.isfinite(labels)) and labels.min() >= 0:
        sums = labels.reshape(-1, labels.shape[-1]).sum(axis=1, dtype=np.float64)
        if np.allclose(sums, 1.0, atol=1e-3):
            return ("class probabilities, not class ids (soft targets: mixup, label smoothing by hand, a "
                    "teacher's outputs): no class to count")
    return "values that are not class ids (a regression target)"


def _numbered(names) -> List[str]:
    """Names in order of their trailing number (``labels_2`` before ``labels_10``), then by name."""

    def key(name):
        # (no regex, no int(): a run's name may end in 100,000 digits, which `\d+$` scans in quadratic time
        # and int() refuses; such numbers sort by length, then as text)
        digits = name[len(name.rstrip("0123456789")):]
        digits = digits.lstrip("0") or ("0" if digits else "")
        return (len(digits) if digits else -1, digits, name)

    return sorted(names, key=key)


#: the class id given to a prediction whose scores are not finite (NaN, infinite): no class at all (argmax of a
#: row of NaN is 0, which read as class 0 turned a diverged model's outputs into "mispredicts class 1"); negative,
#: so that Confusion ignores it, and ClassImbalance leaves it out of the misprediction test (and says so)
NOT_FINITE = int(np.iinfo(np.int64).min)

#: the class id given to a label no class can be (beyond the classes the predictions score: a loss's
#: ignore_index); negative, so that both rules leave it out, told apart from negative ids only in what is said
IGNORED = NOT_FINITE + 1


def _argmax_ids(scores: np.ndarray, axis: int) -> np.ndarray:
    """The class of each row of scores per class (``argmax`` over ``axis``); :data:`NOT_FINITE` for a row with a
    score that is not finite."""
    ids = np.argmax(scores, axis=axis)
    if scores.dtype.kind == "f":
        finite = np.isfinite(scores).all(axis=axis)
        if not finite.all():
            ids = np.where(finite, ids, NOT_FINITE)
    return ids


def _class_ids(scores: np.ndarray) -> np.ndarray:
    """Integer class ids of values that are already ids (possibly as floats)."""
    if scores.dtype.kind == "f":
        return np.floor(scores + 0.5).astype(np.int64)
    return scores.astype(np.int64)


#: the most classes Confusion builds its matrix of (classes x classes counts, and a look at each)
MAX_CONFUSION_CLASSES = 4096

#: the last labels must have been saved in the last 10 % of the run to stand for the trained model
TRAINED_SHARE = 0.9


def _near_the_end(trial, step: int) -> bool:
    """Whether ``step`` is in the last 10 % of the run's steps (a model saved half-way is not the trained one:
    a tapered schedule's last save of a 40-step run is step 20)."""
    steps = trial.steps()
    return bool(steps) and step >= TRAINED_SHARE * steps[-1]


#: a model whose training loss still had more than this share of its whole fall to make after a step is not the
#: trained model at that step (a tapered schedule saves its last labels anywhere after 40 % of a run)
STILL_LEARNING_SHARE = 0.1


def _loss_curve(trial, name: str) -> Tuple[np.ndarray, np.ndarray]:
    """``(steps, values)`` of the scalar loss ``name`` in TRAIN mode (every save when the run has no modes), the
    mean of every worker's value at each step; steps whose value is not finite are kept (NaN)."""
    steps = trial.tensor(name).steps()
    train = [s for s in steps if trial.mode(s) == ModeKeys.TRAIN]
    steps = train or [s for s in steps if trial.mode(s) == ModeKeys.GLOBAL]
    kept, values = [], []
    for s in steps:
        batch = batches_at(trial, name, s)
        if batch:
            kept.append(s)
            values.append(float(np.mean([np.mean(b, dtype=np.float64) for b in batch])))
    return np.array(kept, dtype=np.int64), np.array(values, dtype=np.float64)


def _trained_by(trial, step: int, curves: Optional[dict] = None) -> Tuple[bool, str]:
    """Whether the model at ``step`` stands for the trained one by its training loss, and what the loss says: the
    median of its last tenth of saves up to ``step`` is at most the final tenth's median plus the larger of
    :data:`STILL_LEARNING_SHARE` of the whole fall (first tenth to final tenth) and the final tenth's spread
    (median absolute deviation: a flat curve's batch-to-batch noise). Every loss of the run must say so; a run
    without a training loss, or one not finite, tells nothing (False). A model that keeps learning after its
    last labels were saved is not judged by them: a healthy slow learner mispredicts classes half-way.
    ``curves``: a dict that keeps the loss curves read, for asking about many steps of one run."""
    names = sorted(collection_tensors(trial, ["losses"]))
    said = []
    for name in names:
        if curves is None or name not in curves:
            curve = _loss_curve(trial, name)
            if curves is not None:
                curves[name] = curve
        steps, values = curves[name] if curves is not None else curve
        if len(values) < 10 or not np.any(steps <= step):
            continue
        if not np.all(np.isfinite(values)):
            return False, f"the training loss {name!r} is not finite at every save"
        k = max(len(values) // 10, 1)
        first, final = float(np.median(values[:k])), float(np.median(values[-k:]))
        at = float(np.median(values[steps <= step][-k:]))
        spread = float(np.median(np.abs(values[-k:] - final)))
        allowed = max(STILL_LEARNING_SHARE * max(first - final, 0.0), spread)
        if at - final > allowed:
            return False, f"the training loss {name!r} was still falling after it ({_fall_to_come(first, at, final)})"
        # (one that rose after it, a diverging run, was not still learning either: said as what it did)
        rose = " (it rose after)" if final - at > allowed else ""
        said.append(f"{name!r} {at:.4g} then, {final:.4g} at the end{rose}, from {first:.4g}")
    if not said:
        return False, "the run saved no training loss that tells whether the model had finished learning by then"
    return True, "the training loss was not still falling after it: " + "; ".join(said)


def _fall_to_come(first: float, at: float, final: float) -> str:
    """What a loss still falling after a step had left to fall: its share of the whole fall, or, when the loss
    ended no lower than it began (a resumed run that diverged, then fell again), that it rose over the run: no
    share of a fall that did not happen (it read as a 300-digit percentage)."""
    said = f"{at:.4g} then, {final:.4g} at the end, from {first:.4g}"
    if final >= first:
        return f"{said}: over the run the loss rose, and it fell {at - final:.4g} after that step"
    return f"{said}: {100 * (at - final) / (first - final):.0f}% of its fall to come"


def stopped_early(trial) -> Optional[str]:
    """Why the model at the run's last step is not the trained model when a rule stopped the training
    (``trial.stopped_on_request()``: the run ended normally, but where it was stopped, not where it was meant
    to end), None otherwise (and for a trial of another kind, which records no stop)."""
    stopped = stopped_on_request(trial)
    if not stopped:
        return None
    return f"{stopped}: the model there had not finished training, so no trained model was saved to judge"


def _labels_of_the_trained_model(trial, step: int, curves: Optional[dict] = None) -> Tuple[bool, str]:
    """Whether the last labels, saved at ``step``, stand for the trained model: saved in the last 10 % of the run,
    or anywhere after the training loss had reached its final level (a tapered schedule saves its last labels
    anywhere after 40 % of a run). ``(True, what a finding adds: "" or when they were saved and why they count)``
    or ``(False, why they do not count and how to have them judged)``. (A run a rule stopped has no trained
    model at all: the callers ask :func:`stopped_early` first.)"""
    if _near_the_end(trial, step):
        return True, ""
    trained, why = _trained_by(trial, step, curves)
    last = trial.steps()[-1]
    if trained:
        return True, f" (at step {step} of {last}, the last labels saved: {why})"
    return False, (f"the last labels were saved at step {step} of {last}, before the last 10% of the run, and {why}; "
                   f"save labels and predictions at the last step to have it judged")


def _predicts_values(labels: np.ndarray, predictions: np.ndarray) -> bool:
    """Whether ``predictions`` are a regression's (or a ranking's) estimates of integer ``labels`` rather than a
    classifier's outputs: one value per label (no class axis), not class ids (fractions), for labels with more
    than two distinct values (a classifier's outputs for 0..K-1 are scores per class or ids; a single score
    in [0, 1] is a binary classifier's, and two distinct labels are always treated as classes)."""
    if predictions.ndim != labels.ndim or predictions.dtype.kind != "f" or not predictions.size:
        return False
    finite = predictions[np.isfinite(predictions)]
    if not finite.size or np.all(finite == np.round(finite)):
        return False
    return np.unique(labels).size > 2


def labels_configured_empty(trial, collection: str) -> bool:
    """Whether the run saved a loss but its ``collection`` of labels selects no tensor by its configuration (no
    regex, no names): the hook was given a loss whose targets are no class ids (the PyTorch and MXNet hooks
    fill ``labels`` from a classification loss's targets, and leave it empty for a regression loss). With no
    loss saved either, nothing tells a regression from a classifier whose loss was not registered."""
    collections = trial.collections()
    coll, losses = collections.get(collection), collections.get("losses")
    if coll is None or coll.include_regex or coll.tensor_names or losses is None:
        return False
    return any(losses.matches(n) for n in trial.tensor_names())


def _squeeze_last(value: np.ndarray) -> np.ndarray:
    return value.reshape(value.shape[:-1]) if value.ndim >= 2 and value.shape[-1] == 1 else value


def _pooled(trial, name: str, step: int) -> Optional[np.ndarray]:
    values = [v for v in batches_at(trial, name, step) if v.dtype.kind in "fiub"]
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    try:  # workers' values whose shapes differ beyond axis 0: pool them flattened
        return np.concatenate([v.reshape(-1) for v in values])
    except ValueError:
        return values[0]


def _positions(labels_shape: Tuple[int, ...], scores_shape: Optional[Tuple[int, ...]],
               one_hot: bool) -> Tuple[int, ...]:
    """The positions ``S`` when labels ``(N, *S)`` hold a class per position (of a sequence, an image, a
    volume), as their scores show: scores ``(N, C, *S)`` or ``(N, *S, C)``, or labels one-hot ``(N, *S, C)``
    scored by their own shape; ``()`` for one class per sample or when the shapes tell nothing. ``S`` of
    a single position is no sequence."""
    if scores_shape is None:
        return ()
    if one_hot:
        found = tuple(labels_shape[1:-1]) if tuple(scores_shape) == tuple(labels_shape) else ()
    else:
        found = tuple(labels_shape[1:]) if _class_axes(tuple(labels_shape), tuple(scores_shape)) else ()
    return found if int(np.prod(found)) >= 2 else ()


def _input_positions(shape: Tuple[int, ...], per_row: int) -> Tuple[int, ...]:
    """The positions (two axes or more: an image's rows and columns, a volume's) of a model input of
    ``shape`` ``(N, ...)`` that ``per_row`` labels per input row stand for, one label each: the input's
    axes after its channels (``(N, C, *S)``), before them (``(N, *S, C)``) or all of them (``(N, H, W)``,
    grey images without a channel axis); ``()`` when none holds ``per_row`` positions."""
    for found in (shape[2:], shape[1:-1], shape[1:]):
        if len(found) >= 2 and int(np.prod(found)) == per_row:
            return tuple(found)
    return ()


def _yes_no_rows(labels: np.ndarray, predictions: Optional[np.ndarray]) -> Optional[str]:
    """For labels of rows of 0/1 values (``(n, k)``, ``k > 1``, predicted by scores of the same shape, or
    saved alone): ``"one-hot"`` when every row holds exactly one 1 (one class per sample, written one-hot),
    else what they are (a multi-label classifier's targets, or one yes/no per position: counting their 0s
    and 1s as two classes would call every task with rare labels imbalanced). None for anything else."""
    if labels.ndim < 2 or labels.shape[-1] < 2 or not labels.size:
        return None
    if predictions is not None and predictions.shape != labels.shape:
        return None
    if labels.dtype.kind not in "fiub" or not np.all((labels == 0) | (labels == 1)):
        return None
    per_row = labels.reshape(-1, labels.shape[-1]).sum(axis=-1)
    if np.all(per_row == 1):
        return "one-hot"
    return (f"rows of {labels.shape[-1]} yes/no targets (multi-label, or one per position; "
            f"{int(np.sum(per_row != 1))} of {per_row.size} rows hold other than one 1)")


#: binary losses by their recorded type, lower case without underscores: each scores two classes with one
#: output per target (a logit or a probability of class 1; several columns are a multi-label model's targets)
_BINARY_LOSS_TYPES = {"bceloss", "bcewithlogitsloss", "binarycrossentropy", "binaryfocalcrossentropy",
                      "sigmoidbinarycrossentropyloss", "sigmoidbceloss"}
#: XGBoost objectives of a binary classifier (``reg:logistic`` trains on values in [0, 1], not only 0 and 1)
_BINARY_OBJECTIVES = ("binary:",)


def binary_loss_of(trial, label_name: str) -> Optional[str]:
    """The binary loss the run trains the labels ``label_name`` with, from what the hook recorded: a loss of
    :data:`_BINARY_LOSS_TYPES` whose targets are ``label_name`` (or the run's only loss, when the hook could
    not see its targets), or an XGBoost ``binary:*`` objective; None when the run records none. Such a loss
    scores two classes even with one output column."""
    objective = booster_params(trial).get("objective")
    if isinstance(objective, str) and objective.strip().startswith(_BINARY_OBJECTIVES):
        return f"XGBoost objective {objective.strip()}"
    losses = loss_inputs.recorded_losses(trial) or []
    for loss in losses:
        targets = loss.target_names([label_name]) if loss.targets else ([label_name] if len(losses) == 1 else [])
        if targets and loss.type.replace("_", "").lower() in _BINARY_LOSS_TYPES:
            return f"the loss {loss.type}"
    return None


#: what an XGBoost objective that is no classification's (see :data:`REGRESSION_OBJECTIVE_PREFIXES`) trains on
_NOT_CLASSES = {
    "reg:": ("a regression", "values"),
    "count:": ("a count regression", "counts"),
    "survival:": ("a survival model", "times"),
    "rank:": ("a ranking", "relevance grades ordering the rows of a query"),
}


def _arguments(local_names: dict) -> dict:
    """A rule's constructor arguments, from its ``locals()`` at the start of ``__init__``: what a rule of the
    same kind for one task of the run is made with (:mod:`.label_tasks`)."""
    return {k: v for k, v in local_names.items() if k not in ("self", "base_trial", "__class__")}


class _LabelsAndPredictions(Rule):
    """What both rules share: reading (labels, predictions) class-id pairs at a step."""

    #: (label tensors, prediction tensors) of the one task this rule judges, for a run of several tasks
    #: (:mod:`.label_tasks`); None: the tensors its parameters select
    _only: Optional[Tuple[List[str], List[str]]] = None

    def _task_rule(self) -> "_LabelsAndPredictions":
        """A rule of this kind and parameters for one task of the run (its findings are this rule's: no
        action of its own)."""
        return type(self)(self.base_trial, **{**self._arguments, "action_str": None})

    def _regression_objective(self) -> Optional[str]:
        """The run's XGBoost objective when its targets are no classes (see :func:`regression_objective`);
        read again while the run may still record it (its tensors grow), kept once found."""
        count = len(self.base_trial.tensor_names())
        found = self.__dict__.get("_regression", (-1, None))
        if found[1] is None and found[0] != count:
            found = (count, regression_objective(self.base_trial))
            self.__dict__["_regression"] = found
        return found[1]

    def _not_classes_objective(self) -> bool:
        """Whether the run is an XGBoost regression, count, survival or ranking (said as NotApplicable): its
        labels are values, times or relevance grades, and whatever its predictions round to is no class id,
        whether or not labels were saved."""
        objective = self._regression_objective()
        if objective is None:
            return False
        kind, targets = next(((k, t) for prefix, (k, t) in _NOT_CLASSES.items() if objective.startswith(prefix)),
                             ("no classifier", "something else"))
        self.not_applicable(f"the model is {kind} (XGBoost objective {objective}): its targets are {targets}, "
                            "not classes")
        return True

    def _no_classes(self, name: str, reason: str) -> None:
        """``name`` holds no class ids: remembered, and said at every step from now on (labels are saved at
        some steps only; the verdict is NotApplicable if no step ever offered class ids)."""
        self.__dict__.setdefault("_not_classes", {})[name] = reason
        self.not_applicable(reason)

    def _say_no_classes(self) -> None:
        for reason in self.__dict__.get("_not_classes", {}).values():
            self.not_applicable(reason)

    def _prediction_ids(self, name: str, scores: np.ndarray) -> Optional[np.ndarray]:
        """Class ids of ``scores``, one per label (no class axis), by what the run says they are (see
        :mod:`.prediction_scale`: a ``binary:logitraw`` margin is class 1 above 0, a probability above 0.5);
        None when nothing says (remembered: :meth:`_unscored` tells why)."""
        ids, how = scores_to_ids(scores, recorded_kind(self.base_trial, name))
        if ids is None:
            self.__dict__.setdefault("_unscored_reasons", {})[name] = f"{name} holds {how}"
            self._warn_once(("unscored", name), "%s: %s holds %s", self.rule_name, name, how)
            return None
        self.logger.debug("%s: class ids of %s taken as %s", self.rule_name, name, how)
        ids = ids.reshape(-1)
        if scores.dtype.kind == "f":
            ids = np.where(np.isfinite(scores).reshape(-1), ids, NOT_FINITE)
        return ids

    def _class_axis(self, name: str, axes: List[int], labels_shape: Tuple[int, ...],
                    scores_shape: Tuple[int, ...]) -> Optional[int]:
        """The class axis of ``name``'s scores among the ``axes`` that fit the labels (see
        :func:`_class_axes`); when both fit (``(N, T, T)`` scores of ``(N, T)`` labels), the framework's
        (PyTorch and MXNet put classes second, Keras last); None when none fits, or both do and the run does
        not tell its framework (remembered: :meth:`_unscored` says why)."""
        if len(axes) < 2:
            return axes[0] if axes else None
        framework = framework_of(self.base_trial)
        if framework in ("pytorch", "mxnet"):
            return 1
        if framework == "tensorflow":
            return -1
        how = (f"scores {tuple(scores_shape)} for labels {tuple(labels_shape)}: their classes may be on axis 1 "
               "(PyTorch's order) or last (Keras's), and the run does not tell its framework")
        self.__dict__.setdefault("_unscored_reasons", {})[name] = f"{name} holds {how}"
        self._warn_once(("axis", name), "%s: %s holds %s; not paired", self.rule_name, name, how)
        return None

    def _binary_loss(self, label_name: str) -> Optional[str]:
        """The binary loss (or XGBoost objective) the run trains ``label_name`` with, as the run records it (see
        :func:`binary_loss_of`), None when none; read once per label tensor."""
        found = self.__dict__.setdefault("_binary_losses", {})
        if label_name not in found:
            found[label_name] = binary_loss_of(self.base_trial, label_name)
        return found[label_name]

    def _stopped_early(self) -> Optional[str]:
        """:func:`stopped_early` of the run, read once it has ended (its record no longer changes; a read of
        the run's folder at every step would cost a request each on S3); None while it trains."""
        if not self.base_trial.loaded_all_steps:
            return None
        if "_stopped" not in self.__dict__:
            self.__dict__["_stopped"] = stopped_early(self.base_trial)
        return self.__dict__["_stopped"]

    def _unscored(self) -> Optional[str]:
        """Why predictions were left unpaired: their scores say no class (see :meth:`_prediction_ids`)."""
        reasons = self.__dict__.get("_unscored_reasons", {})
        return "; ".join(reasons.values()) if reasons else None

    def _ignored_beyond(self, labels: np.ndarray, scored: int, lname: str) -> np.ndarray:
        """``labels`` with the ids a model scoring ``scored`` classes cannot predict (``>= scored``) made
        :data:`IGNORED`. A cross-entropy over ``scored`` classes fails on such a target unless it is the loss's
        ``ignore_index`` (255 for the unlabelled borders of segmentation masks, a padding id): positions the loss
        leaves out, which counted as a class read as "the model mispredicts class 255 everywhere"."""
        beyond = beyond_classes(labels, scored)
        if not beyond.any():
            return labels
        ids = np.unique(labels[beyond])
        shown = ", ".join(str(int(i)) for i in ids[:5]) + (", ..." if ids.size > 5 else "")
        self._warn_once(("beyond", lname), "%s: %s holds ids %s, beyond the %d classes the predictions score: "
                        "positions the loss ignores (its ignore_index), left out", self.rule_name, lname, shown,
                        scored)
        return np.where(beyond, IGNORED, labels)

    def _pairs(self, step: int, label_names: List[str], prediction_names: List[str],
               argmax: Optional[bool]) -> Tuple[Optional[np.ndarray], Optional[np.ndarray]]:
        """``(labels, predictions)`` as 1-D integer arrays of equal length for ``step`` (``predictions`` None
        when none were saved or they cannot be paired). ``argmax``: None picks it from the dimensions."""
        labels_out, predictions_out, paired = [], [], True
        label_names, prediction_names = _numbered(label_names), _numbered(prediction_names)
        if prediction_names and len(prediction_names) != len(label_names):
            self._warn_once("count", "%s: %d label tensors and %d prediction tensors cannot be paired",
                            self.rule_name, len(label_names), len(prediction_names))
            prediction_names = []
        for i, lname in enumerate(label_names):
            labels = _pooled(self.base_trial, lname, step)
            if labels is None:
                continue
            if labels.dtype.kind == "f" and not np.all(np.isfinite(labels) & (labels == np.round(labels))):
                # targets of a regression (or soft labels): not class ids, nothing to count (said by the verdict,
                # NotApplicable, not as a warning: a regression is a sound run -- probe 18a W7)
                self._no_classes(lname, f"{lname} holds {_not_ids(labels)}")
                continue
            predictions = _pooled(self.base_trial, prediction_names[i], step) if prediction_names else None
            scored = None  # (how many classes the predictions score along a class axis, when they do)
            # a trailing axis of size 1 is no class axis: (n, 1) sigmoid outputs, (n, 1) sparse labels
            labels = _squeeze_last(labels)
            predictions = _squeeze_last(predictions) if predictions is not None else None
            several = _yes_no_rows(labels, predictions)
            # (the shapes as saved, for ClassImbalance's test of targets per position: no second read)
            self.__dict__.setdefault("_shapes_at", {}).setdefault(step, []).append(
                (lname, labels.shape, several == "one-hot", prediction_names[i] if prediction_names else None,
                 predictions.shape if predictions is not None else None))
            # (a tensor that held multi-label rows once is multi-label at every save: a small batch of it can
            # hold exactly one 1 per row by chance)
            multi_label = self.__dict__.setdefault("_multi_label", set())
            if several == "one-hot" and lname not in multi_label:
                labels = np.argmax(labels, axis=-1)
                predictions = _argmax_ids(predictions, -1) if predictions is not None else None
            elif several == "one-hot":
                self._say_no_classes()
                continue
            elif several:
                multi_label.add(lname)
                self._warn_once(("yes/no", lname), "%s: %s holds %s; not judged", self.rule_name, lname, several)
                self._no_classes(lname, f"{lname} holds {several}: each is its own yes/no target, not one class "
                                        "per sample")
                continue
            if predictions is not None and _predicts_values(labels, predictions):
                # integer targets predicted by continuous values on their own scale: counts, ratings,
                # relevance grades of a regression or ranking, not classes
                self._warn_once(("values", lname), "%s: %s is predicted by continuous values (%s): a regression "
                                "or ranking target; not judged", self.rule_name, lname, prediction_names[i])
                self._no_classes(lname, f"{lname} holds integer targets that {prediction_names[i]} predicts as "
                                        "continuous values: a regression or ranking, whose targets are no classes")
                continue
            if predictions is not None and argmax is None and labels.ndim == predictions.ndim + 1:
                labels = np.argmax(labels, axis=-1)  # one-hot labels
            if predictions is not None:
                axes = _class_axes(labels.shape, predictions.shape)
                axis = self._class_axis(prediction_names[i], axes, labels.shape, predictions.shape)
                if axis is None and argmax and predictions.ndim == labels.ndim + 1:
                    axis = -1  # (argmax=True: the last axis, as asked, whatever the labels' shape)
                if predictions.ndim == labels.ndim + 1 and predictions.ndim:
                    # scores per class: how many classes the model tells apart (ClassImbalance's one-class test)
                    self.__dict__["classes_scored"] = max(self.__dict__.get("classes_scored", 0),
                                                         int(predictions.shape[-1 if axis is None else axis]))
                # (scores per class, one axis more than the labels, are never class ids themselves: taken by
                # argmax even with argmax=False, which would only leave them unpaired; per-label scores, one
                # per label, have no class axis and are turned into ids by what they are)
                if axis is not None:
                    scored = int(predictions.shape[axis])
                    # (argmax straight over the class axis, no transposed copy: dense outputs can be large)
                    predictions = _argmax_ids(predictions, axis).reshape(-1)
                elif len(axes) > 1:
                    predictions = None  # (said by _class_axis)
                else:
                    predictions = self._prediction_ids(prediction_names[i], predictions)
            if labels.ndim == 1 and self._binary_loss(lname):
                # one label per sample of a binary loss: its single score (a logit, a probability) tells two
                # classes apart, though it has no class axis (labels all 1 of a single-logit BCE: probe 9 M3)
                self.__dict__["classes_scored"] = max(self.__dict__.get("classes_scored", 0), 2)
            if labels.size and float(np.max(labels)) > MAX_CLASS_ID:
                self._warn_once(("huge ids", lname), "%s: %s holds values up to %.4g, beyond any class id; not "
                                "judged", self.rule_name, lname, float(np.max(labels)))
                self._no_classes(lname, f"{lname} holds values up to {float(np.max(labels)):.4g}: more than "
                                        f"{MAX_CLASS_ID} classes, no classifier's class ids")
                continue
            labels = _class_ids(labels).reshape(-1)
            if predictions is not None and predictions.size and int(predictions.max()) > MAX_CLASS_ID:
                self._warn_once(("huge predicted ids", lname), "%s: %s holds ids beyond any class; not paired",
                                self.rule_name, prediction_names[i])
                predictions = None
            if scored is not None and scored >= 2:
                labels = self._ignored_beyond(labels, scored, lname)
            if predictions is not None and predictions.size != labels.size:
                self._warn_once(("size", lname), "%s: %s has %d class ids but %s has %d; not paired",
                                self.rule_name, lname, labels.size, prediction_names[i], predictions.size)
                predictions = None
            labels_out.append(labels)
            if predictions is None:
                paired = False
            else:
                predictions_out.append(predictions)
        if not labels_out:
            return None, None
        labels = np.concatenate(labels_out)
        predictions = np.concatenate(predictions_out) if paired and predictions_out else None
        return labels, predictions

    def _targets_per_position(self, step: int) -> Optional[Tuple[str, bool]]:
        """``(why, judged)`` when the labels read at ``step`` hold a class per position rather than per
        sample, whose class frequencies are skewed by nature and are not judged: ``judged`` is whether the
        trained model's mispredictions still are. ``("", False)`` when the step shows one class per sample,
        None when it cannot tell yet (no model input saved with the labels). The evidence, from the shapes
        :meth:`_pairs` met (nothing is read again) and the model's input (the ``inputs`` collection):

        * labels ``(N, *S)``, ``prod(S) >= 2``, scored by predictions with a class axis more, second or
          last (``(N, C, *S)``: PyTorch's; ``(N, *S, C)``: Keras's), or one-hot ``(N, *S, C)`` labels scored
          by their own shape. Over two axes or more (``(N, H, W)``: segmentation, any dense prediction
          over images or volumes) the labels are the areas of what the images show (background dwarfs
          small objects) and the model's mispredictions are judged; over one axis (``(N, T)``) they are a
          sequence model's per-token targets (language model, tagger, decoder), whose frequencies are the
          language's, and nothing is judged (a language model mispredicts most rare tokens by nature);
        * the labels hold ``k >= 2`` class ids per row of the model's input (``N * k`` ids, flattened or
          ``(N, k)``, not one-hot: a loss given ``(N * H * W, C)`` logits): a pixel's each when the input's
          positions (``(N, C, *S)``, ``(N, *S, C)`` or ``(N, H, W)``, two axes or more) number ``k``
          (judged as above); a token's each when the input is integer ids ``(N, T)``, ``T >= 2``.
        """
        seen = self.__dict__.get("_shapes_at", {}).get(step, [])
        inputs_seen = False
        for lname, labels_shape, one_hot, pname, scores_shape in seen:
            where = _positions(labels_shape, scores_shape, one_hot)
            scored = f"{pname} {tuple(scores_shape)} scores each" if scores_shape is not None else ""
            if len(where) >= 2:
                return (f"{lname} {tuple(labels_shape)} holds a class per position of an image or volume "
                        f"{where} ({scored}): per-pixel targets of a dense prediction (segmentation), whose "
                        "class frequencies are the areas of what the images show, skewed by nature", True)
            if where:
                return (f"{lname} {tuple(labels_shape)} holds a class per position of a sequence ({scored}): "
                        "per-token targets of a sequence model (language model, tagger, decoder), whose class "
                        "frequencies are the language's, skewed by nature", False)
            if scores_shape is not None and tuple(scores_shape) == tuple(labels_shape) and len(labels_shape) >= 2:
                continue  # one-hot or multi-hot labels: one row per sample
            count = int(np.prod(labels_shape))
            for iname in sorted(collection_tensors(self.base_trial, ["inputs"])):
                for x in batches_at(self.base_trial, iname, step):
                    inputs_seen = True
                    n = x.shape[0] if x.ndim else 0
                    if x.ndim < 2 or not n or count % n or (len(labels_shape) > 1 and labels_shape[0] != n):
                        continue
                    per_row = count // n
                    if per_row < 2:
                        continue
                    where = _input_positions(x.shape, per_row) if x.ndim >= 3 else ()
                    if where:
                        return (f"{lname} holds {per_row} class ids per row of the model's input {iname} "
                                f"{x.shape}, one per position {where}: per-pixel targets of a dense prediction "
                                "(segmentation), whose class frequencies are the areas of what the images show, "
                                "skewed by nature", True)
                    if x.dtype.kind in "iu" and x.ndim == 2 and x.shape[1] >= 2:
                        return (f"{lname} holds {per_row} class ids per row of the model's input {iname} "
                                f"{x.shape}, integer token ids: per-token targets of a sequence model (language "
                                "model, tagger, decoder), whose class frequencies are the language's, skewed by "
                                "nature", False)
        return ("", False) if inputs_seen or not collection_tensors(self.base_trial, ["inputs"]) else None


#: the losses whose targets a framework's hook saves as labels (the PyTorch and MXNet hooks, by the loss's class)
_LABELLED_LOSSES = {"pytorch": "CrossEntropyLoss, NLLLoss, BCELoss, BCEWithLogitsLoss or MultiMarginLoss",
                    "mxnet": "SoftmaxCrossEntropyLoss (sparse labels) or SigmoidBinaryCrossEntropyLoss"}


def no_labels_reason(trial) -> str:
    """Why a run that saved a loss has no labels, from what its hook recorded of its losses
    (smdebug.core.loss_inputs), not guessed: a regression loss's targets are values; another loss's targets the
    hook does not take for classes; with no loss recorded (a loss computed by hand), nothing says what they are."""
    record = loss_inputs.recorded_losses(trial)
    recorded = record or []
    known = _LABELLED_LOSSES.get(framework_of(trial) or "")
    saves = f"the hook saves the targets of a {known} as labels" if known else \
        "the hook saves the targets of a classification loss as labels"
    types = ", ".join(sorted({loss.type for loss in recorded}))
    if recorded and all(loss.expects == loss_inputs.REGRESSION for loss in recorded):
        return f"the run has no labels: its loss ({types}) is a regression's, whose targets are values ({saves})"
    if recorded:
        return (f"the run has no labels: its loss ({types}) is none whose targets the hook takes for classes ({saves}); "
                "if they are, save them in the 'labels' collection to have them judged")
    if record is None:  # (a writer that records no losses: smdebug 1.0.x)
        return ("the run has no labels: it saved a loss but no record of which loss it is, so nothing says whether "
                f"its targets are classes ({saves}); save them in the 'labels' collection to have them judged")
    return ("the run has no labels: it saved a loss the hook was not given (one computed by hand), so nothing says "
            f"whether its targets are classes ({saves}); register the loss with the hook, or save the labels in the "
            "'labels' collection")


class Confusion(_LabelsAndPredictions):
    """Fires when the confusion matrix of a step's labels and predictions is too far from diagonal.

    At each step where both were saved: ``confusion[label][prediction] += 1`` for every pair (the matrix of
    that step alone), of size ``category_no`` (or, when None, ``max(labels, predictions) + 1`` of the step's
    data; pairs outside ``[0, category_no)`` are ignored with a warning). Ratios are taken per *true* class
    ``i`` (row ``i``, i.e. recall; classes with no sample at the step are skipped)::

        row_i = sum_j confusion[i][j]
        confusion[i][i] / row_i < min_diag          (class i too often mispredicted)
        confusion[i][j] / row_i > max_off_diag      (j != i: class i too often taken for j)

    Either inequality met for some class means the condition is met; classes with fewer than
    ``min_class_samples`` samples are skipped (a fraction of 2 samples is noise).

    **Which step.** The matrix judged is the trained model's: the rule judges once training has ended, at the
    last step where labels were saved, if that is in the last 10 % of the run's steps or the training loss had
    reached its final level by then (as ClassImbalance's misprediction test; an untrained model mispredicts every
    class: the original judged every step and fired at the first one of any run). Otherwise, and on a run still
    training, it evaluates nothing and says why. A run that a rule stopped (``--follow --stop-training``:
    ``trial.stopped_on_request()``) has no trained model: NotApplicable, with the stop.
    Labels that are not class ids (floats with fractions: a regression target) are not judged; nor are a
    sequence model's per-token targets (labels ``(N, T)`` scored per position, or ``T`` class ids per row of
    integer token ids, as ClassImbalance finds them): a sound language model mispredicts most tokens of most
    classes, the language's own uncertainty, so the verdict is NotApplicable and says so (dense prediction over
    images is judged, per labelled pixel). An XGBoost run whose objective is no classification's (``reg:*`` but
    ``reg:logistic``, ``count:*``, ``survival:*``, ``rank:*``, as ClassImbalance reads it) is NotApplicable with
    its objective named: a ranking's 0/1 relevance labels look like classes, but its scores rounded are no
    predicted class.

    (The original's documentation divides by
    column sums and once by the sum of the diagonal, which looks like a typo; recall per class is used here.)

    The labels are the tensor named ``labels`` if the run has it, else the tensors of ``labels_collection``;
    likewise for predictions. Predictions with one more dimension than the labels are ``argmax``-ed over
    their class axis: the last, or the second for PyTorch's dense outputs (``(N, C, H, W)`` scores of
    ``(N, H, W)`` labels: each labelled pixel is a sample). When the last labels cannot be judged, the
    verdict says why (e.g. scores whose class axis the shapes and the run leave open).

    :param category_no: number of classes (default None: inferred from the data at each step).
    :param labels: name of the labels tensor (default ``"labels"``).
    :param predictions: name of the predictions tensor (default ``"predictions"``).
    :param labels_collection: collection of the labels when there is no ``labels`` tensor (default
        ``"labels"``).
    :param predictions_collection: likewise for predictions (default ``"predictions"``).
    :param min_diag: smallest allowed fraction of a class predicted correctly (default 0.5: a class the model
        gets wrong more often than right; the original's 0.9 fired on sound classifiers of hard tasks, whose
        per-class recall is often 0.8).
    :param max_off_diag: largest allowed fraction of a class predicted as one other class (default 0.4; the
        original's 0.1).
    :param min_class_samples: classes with fewer samples at the judged step are skipped (>= 1; default 10).
    """

    def __init__(self, base_trial, category_no=None, labels="labels", predictions="predictions",
                 labels_collection="labels", predictions_collection="predictions", min_diag="0.5",
                 max_off_diag="0.4", min_class_samples="10", other_trials=None, action_str=None):
        self._arguments = _arguments(locals())
        super().__init__(base_trial, other_trials=other_trials, action_str=action_str)
        rule = self.rule_name
        self.category_no = as_optional_int(rule, "category_no", category_no, minimum=1)
        self.labels = _name(rule, "labels", labels)
        self.predictions = _name(rule, "predictions", predictions)
        self.labels_collection = _name(rule, "labels_collection", labels_collection)
        self.predictions_collection = _name(rule, "predictions_collection", predictions_collection)
        self.min_diag = in_range(rule, "min_diag", as_float(rule, "min_diag", min_diag), 0, 1)
        self.max_off_diag = in_range(rule, "max_off_diag", as_float(rule, "max_off_diag", max_off_diag), 0, 1)
        self.min_class_samples = as_int(rule, "min_class_samples", min_class_samples, minimum=1)

    def _label_names(self) -> List[str]:
        return self._only[0] if self._only is not None else self._names(self.labels, self.labels_collection)

    def _prediction_names(self) -> List[str]:
        return (self._only[1] if self._only is not None
                else self._names(self.predictions, self.predictions_collection))

    def _names(self, name: str, collection: str) -> List[str]:
        if self.base_trial.has_tensor(name):
            looking_for(f"tensor {name!r}", [name])
            return [name]
        looking_for(f"tensor {name!r}", [])
        return select_tensors(self.base_trial, [collection], [])

    def confusion_matrix(self, step: int) -> Optional[np.ndarray]:
        """The step's confusion matrix (rows: labels, columns: predictions), None if nothing to pair."""
        label_names, prediction_names = self._label_names(), self._prediction_names()
        if not label_names or not prediction_names:
            return None
        labels, predictions = self._pairs(step, label_names, prediction_names, argmax=None)
        if labels is None or predictions is None:
            return None
        # (a prediction that is not finite is no class: left out, and said when nothing else is left)
        finite = predictions != NOT_FINITE
        self.__dict__["_not_finite"] = (int(np.sum(~finite)), int(labels.size))
        labels, predictions = labels[finite], predictions[finite]
        valid = (labels >= 0) & (predictions >= 0)
        if self.category_no is not None:
            valid &= (labels < self.category_no) & (predictions < self.category_no)
        if not valid.all():
            self._warn_once("range", "%s: ignoring %d label/prediction pairs outside [0, %s) at step %d",
                            self.rule_name, int((~valid).sum()), self.category_no or "inf", step)
        labels, predictions = labels[valid], predictions[valid]
        if labels.size == 0:
            return None
        n = self.category_no or int(max(labels.max(), predictions.max())) + 1
        if n > MAX_CONFUSION_CLASSES:
            self.__dict__["_too_many_classes"] = n
            return None
        matrix = np.zeros((n, n), dtype=np.int64)
        np.add.at(matrix, (labels, predictions), 1)
        return matrix

    def _last_labels_step(self) -> Optional[int]:
        names = self._label_names()
        last = [self.base_trial.tensor(n).steps()[-1] for n in names if self.base_trial.tensor(n).steps()]
        return max(last) if last else None

    def invoke_at_step(self, step):
        if self._not_classes_objective():
            return False
        self._say_no_classes()
        cv = cross_validation(self.base_trial, "predictions")
        if cv is not None and not self._prediction_names():
            self.not_applicable(cv)
            return False
        if not self.base_trial.loaded_all_steps:
            self.not_evaluated("judges the trained model: the last labels and predictions saved, once training "
                               "has ended")
            return False
        if (not self.base_trial.has_tensor(self.labels)
                and labels_configured_empty(self.base_trial, self.labels_collection)):
            self.not_applicable(no_labels_reason(self.base_trial))
            return False
        stopped = self._stopped_early()
        if stopped:
            # (not "not evaluated": no later save or other setting would give the run a trained model)
            self.not_applicable(f"judges the trained model: {stopped}")
            return False
        if self._only is None:
            per_task = label_tasks.tasks(self._label_names(), self._prediction_names(), self.base_trial)
            if len(per_task) > 1:
                return label_tasks.judge_each_task(self, step, per_task, self._task_rule)
        if step != self._last_labels_step():
            # (after the last labels: why they were not judged, if they were not, rather than where they are)
            later = step > (self._last_labels_step() or step)
            if later and self.__dict__.get("_per_token"):
                self.not_applicable(self._per_token)
                return False
            self.not_evaluated(later and self.__dict__.get("_unpaired") or "judges the last step where labels were "
                               "saved")
            return False
        matrix = self.confusion_matrix(step)
        per_position = self._targets_per_position(step) if matrix is not None else None
        if per_position and per_position[0] and not per_position[1]:
            # (as ClassImbalance: a language model's next tokens are as uncertain as the language; a sound one
            # gets most tokens of most classes wrong, so per-class recall says nothing of a fault)
            self._per_token = (per_position[0] + "; a sound language model mispredicts most tokens of most "
                               "classes, so the confusion matrix is not judged")
            self.not_applicable(self._per_token)
            return False
        trained, when = _labels_of_the_trained_model(self.base_trial, step)
        if not trained:
            self._unpaired = f"judges the trained model: {when}"
            self.not_evaluated(self._unpaired)
            return False
        not_finite, rows = self.__dict__.get("_not_finite", (0, 0))
        if matrix is None and not_finite:
            where = f"all {rows} rows" if not_finite == rows else \
                f"{not_finite} of {rows} rows (the others hold no class ids in range)"
            self._unpaired = (f"the last labels (step {step}) were not judged: the predictions saved with them are "
                              f"not finite (NaN or infinite) in {where}: the model's outputs are not numbers")
            self.not_evaluated(self._unpaired)
            return False
        if matrix is None and self.__dict__.get("_too_many_classes"):
            self.not_applicable(f"the last labels (step {step}) hold class ids up to "
                                f"{self._too_many_classes - 1}: a confusion matrix of more than "
                                f"{MAX_CONFUSION_CLASSES} classes is not built (category_no bounds the classes)")
            return False
        if matrix is None:
            self._unpaired = (f"the last labels (step {step}) were not judged: "
                              + (self._unscored() or "needs labels and predictions saved at the same step, with "
                                 "class ids that pair up"))
            self.not_evaluated(self._unpaired)
            return False
        for i, row in enumerate(matrix):
            total = int(row.sum())
            if total < self.min_class_samples:
                continue
            if row[i] / total < self.min_diag:
                return (f"class {i}: {row[i]} of {total} samples predicted correctly ({row[i] / total:.4g} "
                        f"< min_diag {self.min_diag:g}){when}")
            for j, count in enumerate(row):
                if j != i and count / total > self.max_off_diag:
                    return (f"class {i} predicted as {j} in {count} of {total} samples ({count / total:.4g} "
                            f"> max_off_diag {self.max_off_diag:g}){when}")
        return False


class StepWeightedCounts:
    """Class counts of the label saves, each weighted by the training steps it stands for: the steps since the
    save before it (the first save weighs as the second). A tapered schedule (Hook.recommended's: steps 0-9
    each, then ever further apart) holds most of its labels in the run's first ten steps; summed as they are,
    those ten batches outweigh the rest of the run, and a run whose class mix changes over time (a curriculum,
    class-incremental learning, a sampler re-weighted after warm-up) is judged by its start. Weighted, the
    counts estimate the mix over the steps trained; on data whose mix does not change they estimate what the
    plain sums do, with more chance (fewer labels' worth: Kish's effective number, ``(sum w)^2 / sum w^2`` over
    the labels). Saves come in order of step; one that comes late has the sums recomputed."""

    def __init__(self):
        self._steps: List[int] = []
        self._counts: Dict[int, np.ndarray] = {}
        self._summed = 0  # the saves _steps[1:_summed] are in the running sums
        self._sums = (np.zeros(0), 0.0, 0.0)  # (weighted counts, sum of the labels' weights, of their squares)

    def add(self, step: int, counts: np.ndarray) -> None:
        if step in self._counts:
            self._counts[step] = counts
            self._summed = 0
            return
        self._counts[step] = counts
        if self._steps and step < self._steps[-1]:
            self._steps.insert(int(np.searchsorted(self._steps, step)), step)
            self._summed = 0
        else:
            self._steps.append(step)

    def at(self, step: int) -> Optional[Tuple[np.ndarray, float]]:
        """``(weighted counts per class, the effective number of labels)`` over the saves ``<= step``; None when
        there are none."""
        k = int(np.searchsorted(self._steps, step, side="right"))
        if not k:
            return None
        if k < self._summed or not self._summed:
            self._summed, self._sums = 1, (np.zeros(0), 0.0, 0.0)
        weighted, mass, square = self._sums
        for i in range(self._summed, k):
            w = float(self._steps[i] - self._steps[i - 1])
            counts = self._counts[self._steps[i]]
            weighted = _padded_sum(weighted, w * counts)
            mass, square = mass + w * counts.sum(), square + w * w * counts.sum()
        self._summed, self._sums = k, (weighted, mass, square)
        first = self._counts[self._steps[0]]
        w = float(self._steps[1] - self._steps[0]) if k > 1 else 1.0
        weighted, mass, square = _padded_sum(weighted, w * first), mass + w * first.sum(), square + w * w * first.sum()
        return weighted, (mass * mass / square if square > 0 else 0.0)


class ClassIntroductions:
    """When each class was first counted, and after how many labels without it; and the counts of the saves
    since a step. A class absent from the first saves and present later is the data changing (a curriculum
    adding classes, class-incremental learning), not a rare class: summed with the saves before it, it reads as
    one far rarer than the classes counted from the start. Saves come in order of step; one that comes late, or
    again, has the record rebuilt."""

    def __init__(self):
        self._steps: List[int] = []
        self._counts: Dict[int, np.ndarray] = {}
        #: class -> (the step it was first counted at, the labels counted before that step)
        self.first: Dict[int, Tuple[int, int]] = {}
        self._labels = 0
        self._since: Tuple[int, int, np.ndarray] = (-1, -1, np.zeros(0))  # (from, to, counts): the last asked

    def add(self, step: int, counts: np.ndarray) -> None:
        if self._steps and step <= self._steps[-1]:
            if step not in self._counts:
                self._steps.insert(int(np.searchsorted(self._steps, step)), step)
            self._counts[step] = counts
            self.first, self._labels, self._since = {}, 0, (-1, -1, np.zeros(0))
            for s in self._steps:
                self._note(s, self._counts[s])
            return
        self._steps.append(step)
        self._counts[step] = counts
        self._note(step, counts)

    def _note(self, step: int, counts: np.ndarray) -> None:
        for c in np.flatnonzero(counts):
            self.first.setdefault(int(c), (step, self._labels))
        self._labels += int(counts.sum())

    def late(self, c: int, step: int, counts: np.ndarray, total: int) -> Optional[Tuple[int, int]]:
        """``(the step, the labels before it)`` when class ``c`` was introduced over the run: it was absent from the
        labels before the step it first showed at, and at the share it has held since it would have shown among
        them but with a chance below :data:`ONE_CLASS_CHANCE` (so a rare class of data whose mix does not change
        is almost never taken for one introduced late). None otherwise. ``counts``, ``total``: the counts up to
        ``step``."""
        first, before = self.first.get(int(c), (step + 1, 0))
        if first > step or before <= 0 or c >= len(counts):
            return None
        share = counts[c] / max(total - before, 1)
        return (first, before) if (1.0 - share) ** before < ONE_CLASS_CHANCE else None

    def since(self, start: int, step: int) -> np.ndarray:
        """The counts of the saves from ``start`` to ``step``."""
        begun, upto, counts = self._since
        if begun != start or upto > step:
            upto, counts = start - 1, np.zeros(0)
        lo, hi = int(np.searchsorted(self._steps, upto, side="right")), int(np.searchsorted(self._steps, step,
                                                                                            side="right"))
        for s in self._steps[lo:hi]:
            counts = _padded_sum(counts, self._counts[s])
        self._since = (start, step, counts)
        return counts


def _padded_sum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    n = max(len(a), len(b))
    return np.pad(a.astype(np.float64), (0, n - len(a))) + np.pad(b.astype(np.float64), (0, n - len(b)))


class ClassImbalance(_LabelsAndPredictions):
    """Fires when the classes seen so far are too imbalanced, or a class is mostly mispredicted.

    At step ``s`` the counts cover every step ``<= s`` at which a label tensor was saved in TRAIN mode (every
    mode when the run has no TRAIN-mode labels, as XGBoost's): the data the model trains on, as seen live up
    to ``s`` whatever step the evaluation started at. A validation set is drawn to be representative, and
    counting its labels too hid an imbalanced training set. Labels are the tensors matching ``labels_regex``,
    predictions those matching ``predictions_regex`` (``re.search``, paired in order); scores with a class axis
    more than the labels are ``argmax``-ed over it (the last, or the second for PyTorch's ``(N, C, *S)`` scores
    of ``(N, *S)`` labels); with ``argmax`` scores whose shape fits no label are ``argmax``-ed over their last
    axis, otherwise they must already be class ids. Per class
    ``c`` seen at least once among the labels::

        count_c         = #labels equal to c
        mispredicted_c  = #{labels equal to c whose prediction differs} / #{such labels with a prediction}

    **A class mix that changes over the run.** The counts sum every save alike, and Hook.recommended's tapered
    schedule saves steps 0-9 each and then ever further apart: its first ten batches hold most of the labels
    summed. An imbalance of the sums is not reported when the saves show it is the mix changing, not the data
    being imbalanced: (1) the rarer class was introduced over the run (a curriculum adding classes,
    class-incremental learning: absent from the labels before a step where, at the share it has held since, it
    would have shown but with a chance below 0.1%, :class:`ClassIntroductions`) and the saves since then show no
    imbalance of the two classes beyond doubt by the same test; or (2) the counts weighted by the training steps each save stands for
    (the steps since the save before it; up to the step judged while the run trains, the whole run once it has
    ended: :class:`StepWeightedCounts`) put the two classes within ``threshold_imbalance`` of each other even
    allowing for chance (a sampler that balances the classes after a skewed warm-up). Likewise labels all of one
    class up to a step of a finished run (the one-class test below) whose whole run, so weighted, holds another
    class within ``threshold_imbalance`` of it (a first epoch not shuffled; live, what follows is not known yet, and
    such a start is reported). A set imbalanced throughout
    is found as before (on data whose mix does not change, both tests agree with the sums); the verdict's detail
    says when the sums were set aside, and why.

    **Class weights.** When the run trains with class weights (the hooks' record ``_meta.class_weights``, see
    :mod:`smdebug.core.class_weights`: PyTorch ``CrossEntropyLoss(weight=...)``/``NLLLoss(weight=...)``, a single
    ``BCEWithLogitsLoss(pos_weight=...)``, Keras ``fit(class_weight=...)``, XGBoost ``scale_pos_weight``; per-row
    weights as each class's mean row weight: the training DMatrix's, Keras ``fit(sample_weight=...)`` or a dataset
    of ``(x, y, w)``;
    for runs of the original smdebug the ``hyperparameters/scale_pos_weight`` given to the XGBoost hook), each
    count is multiplied by its class's weight, ``count_c * w_c``: the imbalance the optimiser is shown. A run
    that compensates its imbalance is not flagged; weights that leave a ratio above the threshold are, and the
    message names them. Classes weighted 0 are left out.

    With ``most`` and ``least`` the classes of the largest and smallest (weighted) count, the condition is met
    at a step where labels were saved when ``most / least > threshold_imbalance`` once ``sum_c count_c >=
    samples`` and the classes seen hold at least :data:`LABELS_PER_CLASS` (30) labels each on average (the
    data: judged live; below that, chance alone makes the largest of many small counts ten times the
    smallest: 200 balanced classes with 5 labels each give 11 against 1), or otherwise when the imbalance is
    beyond doubt at the counts seen: ``(sqrt(most) - 1)^2 / (sqrt(least) + 1)^2 > threshold_imbalance``
    (each count moved two standard deviations against the finding; a batch size of 8 under
    Hook.recommended's schedule never reaches 500 training labels). Counts that show no imbalance even allowing
    for chance -- the largest ratio of the two classes' frequencies their counts leave plausible (given their sum,
    the rarer class's count is binomial: the exact bound at the chance of two standard deviations,
    :func:`_ratio_upper_bound`) is at most ``threshold_imbalance`` -- are judged too;
    others are not judged yet, and the verdict (NotEvaluated) says how many labels were saved, how (labels
    per saved step x saved steps) and what is missing -- except at the last labels of a finished run whose
    first validation pass settles that no two classes are further apart than ``threshold_imbalance`` (by the
    same bound, weighted alike) while the training labels saved do not differ from its labels beyond chance (a
    chi-square test at 1%): the counts are then cleared on the validation labels, and the detail says so
    (:meth:`_held_out_balance`; a batch of 4 under Hook.recommended's schedule saves some 70 training labels,
    and a healthy run ended NotEvaluated). Validation labels never make a finding: a training set rebalanced on
    purpose differs from them. A message counts the labels of one save when every save
    counted holds the same rows (XGBoost's held-out set, saved at every round: the same rows, not more data),
    and says over how many saves it summed them otherwise.

    Once training has ended, at the last step where labels were saved (any mode), the trained model's
    predictions are judged on the label saves that stand for it, pooled (one batch of a tapered schedule holds
    too few labels of each class): from the last save back, every save in the last 10 % of the run or after
    the training loss had reached its final level by then (:func:`_trained_by`: Hook.recommended's tapered
    schedule saves its last labels anywhere after 40 % of a run), TRAIN batches and evaluation passes alike (an
    untrained model mispredicts every class; the XGBoost hook saves them after the last round; of saves of the
    same rows only the latest counts). The condition is met when ``mispredicted_c > threshold_misprediction``
    for some class with at least :data:`MISPREDICTION_LABELS` (10) such labels. That finding is about the
    trained model's predictions, not the data: it is only reached when the class counts passed the imbalance
    test (or are not judged: labels per pixel, below), and its message says so (a model that does not learn
    mispredicts classes of balanced data), and says when the model predicts (almost) one class. Predictions
    that are not finite (a row of NaN scores, whose ``argmax`` is 0) are no class: left out, and said. When
    the test is not reached -- the run was stopped by a rule's request (``--follow --stop-training``: the model
    at the stop is not the trained one; the class counts are still judged), the last labels are too early to
    stand for the trained model, no class holds
    10 labels even pooled, the predictions are not finite -- or leaves classes with fewer labels unjudged, a
    NoIssuesFound verdict's detail says so, and why.

    **Tasks.** The labels of different tasks -- two classification losses of a multi-task model (a
    ``CrossEntropyLoss`` over digits and a ``BCEWithLogitsLoss`` for "even?"), two outputs of a Keras model --
    are counted and judged apart, each task by itself with these parameters, and a finding names its labels
    (class 0 of a yes/no head is not class 0 of the digits); two losses of one class (a GAN's discriminator and
    generator) are one task. See :mod:`smdebug.rules.generic.label_tasks`.

    **Labels per position.** The class counts are not judged when the labels hold a class per position of
    each sample rather than one per sample (see :meth:`_targets_per_position` for the evidence, read at the
    first step with labels):

    * *dense prediction* (segmentation): labels ``(N, *S)`` over two axes or more (``(N, H, W)``, volumes)
      scored by predictions ``(N, C, *S)`` (PyTorch) or ``(N, *S, C)`` (Keras), or one-hot ``(N, *S, C)``
      labels; or ``k`` class ids per row of the model's input (collection ``inputs``) that has ``k`` positions
      (``(N, C, H, W)``, ``(N, H, W, C)``, ``(N, H, W)``), as when a loss is given ``(N * H * W, C)`` logits.
      Their frequencies are the areas of what the images show (background dwarfs small objects: counted
      as samples, every segmentation set is "imbalanced"). The misprediction test still judges the trained
      model, per labelled position: a model that never learnt the background, or whose logits were
      flattened in the wrong order, mispredicts whole classes;
    * *sequence models* (a language model's next tokens, a tagger's tags, a decoder's outputs): labels ``(N,
      T)``, ``T >= 2``, scored by ``(N, T, C)`` or ``(N, C, T)`` (or one-hot ``(N, T, C)``), or ``k >= 2``
      class ids per row of an input of integer ids ``(N, T)``. Their frequencies are the language's, skewed
      by nature (rebalancing them would be the bug), and a language model mispredicts most rare tokens by
      nature: the verdict is NotApplicable. A text classifier (one label per sequence) is judged.

    Targets that are not class ids are not judged, and the verdict says NotApplicable when the run has no
    others: floats with fractions (a regression), integers predicted by continuous values on their own scale
    (counts, ratings, relevance grades of a regression or ranking: one prediction per label, with fractions,
    for more than two distinct labels), or no labels at all by the hook's configuration (a PyTorch run with a
    regression loss), or an XGBoost run whose objective is a regression's, a count's, a survival time's or a
    ranking's (``reg:*`` but ``reg:logistic``, ``count:*``, ``survival:*``, ``rank:*``; from the hook's record of
    the booster or the ``hyperparameters`` given to it: its targets are values, not classes, whether or not
    labels were saved). Classes that never occur among the labels are unknown to the rule (it is not told how
    many classes there are) and do not count as a minimum of 0 -- but when every label is one class while the
    predictions score ``K >= 2`` classes (a label made by a threshold in the wrong units, a filter that kept one
    class), the data is the extreme of imbalance: the condition is met once ``n`` labels make it beyond doubt
    that another class is rarer than ``threshold_imbalance`` allows -- a class holding ``1 / (1 +
    threshold_imbalance)`` of the data would have shown among ``n`` labels but with a chance below 0.1%:
    ``(1 - 1 / (1 + threshold_imbalance))^n < 0.001`` (73 labels at the default 10; a batch of a skewed but
    acceptable binary set is often one class).

    :param threshold_imbalance: largest allowed ratio of the most to the least frequent class (default 10).
    :param threshold_misprediction: largest allowed fraction of a class mispredicted (default 0.7).
    :param samples: labels to see before judging the plain ratio (default 500; at least 30 per class are
        needed too).
    :param argmax: ``argmax`` over their last axis predictions with one axis more than the labels whose shape
        fits no labels (default False; scores that fit are always ``argmax``-ed over their class axis).
    :param labels_regex: comma-separated regexes of the label tensors (default ``".*labels"``).
    :param predictions_regex: comma-separated regexes of the prediction tensors (default ``".*predictions"``).
    :param labels_collection: the tensors of this collection are labels too (default ``"labels"``: the
        hooks' labels, e.g. a PyTorch classification loss's targets); empty for none.
    :param predictions_collection: likewise for predictions (default ``"predictions"``).
    """

    def __init__(self, base_trial, threshold_imbalance="10", threshold_misprediction="0.7", samples="500",
                 argmax="False", labels_regex=".*labels", predictions_regex=".*predictions",
                 labels_collection="labels", predictions_collection="predictions", other_trials=None,
                 action_str=None):
        self._arguments = _arguments(locals())
        super().__init__(base_trial, other_trials=other_trials, action_str=action_str)
        rule = self.rule_name
        self.threshold_imbalance = in_range(rule, "threshold_imbalance",
                                            as_float(rule, "threshold_imbalance", threshold_imbalance), 1)
        self.threshold_misprediction = in_range(
            rule, "threshold_misprediction", as_float(rule, "threshold_misprediction", threshold_misprediction),
            0, 1)
        self.samples = as_int(rule, "samples", samples, minimum=0)
        self.argmax = as_bool(rule, "argmax", argmax)
        self.labels_regex = as_list(rule, "labels_regex", labels_regex)
        self.predictions_regex = as_list(rule, "predictions_regex", predictions_regex)
        self.labels_collection = as_list(rule, "labels_collection", labels_collection)
        self.predictions_collection = as_list(rule, "predictions_collection", predictions_collection)
        if not (self.labels_regex or self.labels_collection):
            raise SMDebugValueError(f"{rule}: give labels_regex or labels_collection")
        _check_regexes(rule, "labels_regex", self.labels_regex)
        _check_regexes(rule, "predictions_regex", self.predictions_regex)
        #: per step counted (see _counted): (labels per class, mispredicted per class, labels with a prediction)
        self._counts = StepSums(_add_class_counts)
        #: every step's part, counted or not (the misprediction test reads the last one)
        self._parts: dict = {}
        self._train_labels = False  # whether the run has TRAIN-mode labels (once True, stays so)
        #: (why the labels hold a class per position, whether the model's mispredictions are still judged):
        #: ("", False) when the run showed one class per sample, None while undecided
        self._per_position: Optional[Tuple[str, bool]] = None
        #: why the counts could not be judged yet, repeated at steps without labels (the verdict's detail)
        self._waiting: Optional[str] = None
        self._weights_read: Tuple[int, Optional[Tuple[Dict[int, float], str]]] = (-1, None)
        #: per step read: (labels counted, a digest of them): the same rows saved again are told by it
        self._rows: Dict[int, Tuple[int, bytes]] = {}
        #: the class counts weighted by the training steps each save stands for (a change of the class mix over
        #: the run is told from an imbalance by them)
        self._over_steps = StepWeightedCounts()
        #: when each class was first counted (a class introduced over the run is told from a rare one by it)
        self._introductions = ClassIntroductions()
        #: what the weighted counts said against the plain sums at the last step judged (part of the detail)
        self._mix_said: Optional[str] = None

    def _contribution(self, step, label_names, prediction_names):
        """The step's part, per class: ``(labels, mispredicted, labels with a prediction, labels whose prediction
        is not finite, predictions)``; the rows it holds are remembered (:attr:`_rows`)."""
        labels, predictions = self._pairs(step, label_names, prediction_names, argmax=self.argmax)
        if labels is None:
            return None
        keep = labels >= 0
        if not (keep | (labels == IGNORED)).all():
            self._warn_once("negative", "%s: ignoring negative labels", self.rule_name)
        labels = labels[keep]
        # (which rows these are: XGBoost saves the same held-out rows every round, told apart from new rows by
        # their labels, all of them equal and in the same order)
        self._rows[step] = (labels.size, hashlib.blake2b(labels.tobytes(), digest_size=16).digest())
        n = int(labels.max()) + 1 if labels.size else 0
        counts = np.bincount(labels, minlength=n)
        none = np.zeros(n, np.int64)
        if predictions is None:
            return counts, none, none, none, none
        predictions = predictions[keep]
        finite = predictions != NOT_FINITE  # (a row of NaN scores is no prediction: left out, and said)
        wrong = np.bincount(labels[finite & (predictions != labels)], minlength=n)
        compared = np.bincount(labels[finite], minlength=n)
        predicted = np.bincount(predictions[finite & (predictions >= 0) & (predictions < n)], minlength=n)
        return counts, wrong, compared, counts - compared, predicted

    def _counted(self, step: int) -> bool:
        """Whether the labels of ``step`` count towards the class counts: TRAIN-mode labels when the run has
        any (the training data is what the model learns from; a validation set is drawn to be representative,
        and pooling it in hid a training set of 113:5:2 behind balanced validation labels), else every save
        (XGBoost's validation labels are all a run has)."""
        return not self._train_labels or self.base_trial.mode(step) == ModeKeys.TRAIN

    def _class_weights(self, label_names: List[str]) -> Optional[Tuple[Dict[int, float], str]]:
        """``({class: weight}, what set them)`` the run trains the labels ``label_names`` with (the hooks'
        record, :mod:`smdebug.core.class_weights`; for XGBoost runs without it, ``scale_pos_weight`` of the
        hyperparameters given to the hook), None when none. Weights that differ between the label tensors
        (two losses weighted apart) are not applied: the counts are pooled (said once)."""
        count = len(self.base_trial.tensor_names())
        if self._weights_read[0] == count:
            return self._weights_read[1]
        found = None
        entries = recorded_class_weights(self.base_trial)
        per_tensor = []
        for name in label_names:
            weights: Dict[int, float] = {}
            sources = []
            for entry in entries:
                if entry.applies_to(name):  # (bounded time: the pattern comes from the run)
                    for c, w in entry.weights.items():
                        weights[c] = weights.get(c, 1.0) * w
                    sources.append(entry.source)
            per_tensor.append((weights, " and ".join(sources)))
        if per_tensor and all(p == per_tensor[0] for p in per_tensor) and per_tensor[0][0]:
            found = per_tensor[0]
        elif any(p[0] for p in per_tensor):
            self._warn_once("weights", "%s: the label tensors are weighted differently; the class counts are "
                            "judged unweighted", self.rule_name)
        if found is None and not entries:
            objective = booster_params(self.base_trial).get("objective")
            spw = _hyperparameter(self.base_trial, "scale_pos_weight")
            if isinstance(spw, (int, float)) and np.isfinite(spw) and spw > 0 and spw != 1 and not (
                    isinstance(objective, str) and objective.startswith("multi:")):
                found = ({1: float(spw)}, f"scale_pos_weight={spw:g}")
        self._weights_read = (count, found)
        return found

    def _count_save(self, step: int) -> None:
        """Note that the labels of ``step`` were counted: :meth:`_counts_said` tells the saves counted up to a
        step, and whether they all hold the same rows."""
        saves = self.__dict__.setdefault("_saves_counted", [])
        # (_other_rows_at: the first counted save whose rows differ from the first save's, None while all are the
        # same; kept as saves come in order, found again only when an earlier step comes late)
        if not saves or step > saves[-1]:
            saves.append(step)
            if self.__dict__.get("_other_rows_at") is None and self._rows.get(step) != self._rows.get(saves[0]):
                self.__dict__["_other_rows_at"] = step
            return
        if step not in saves:
            saves.insert(int(np.searchsorted(saves, step)), step)
        first_rows = self._rows.get(saves[0])
        self.__dict__["_other_rows_at"] = next((s for s in saves if self._rows.get(s) != first_rows), None)

    def _counts_said(self, step: int, counts: np.ndarray, total: int) -> Tuple[np.ndarray, str]:
        """``(counts to show, how many labels they are)`` for a message at ``step``: the sums over the saves
        counted, or one save's counts when every save counted holds the same rows (re-saved, not new ones)."""
        saves = self.__dict__.get("_saves_counted", [])
        k = int(np.searchsorted(saves, step, side="right"))
        if k <= 1:
            return counts, f"{total} labels"
        other = self.__dict__.get("_other_rows_at")
        if other is None or other > step:
            one = self._parts[saves[k - 1]][0]
            one = np.pad(one, (0, max(len(counts) - len(one), 0)))
            return one, f"{int(one.sum())} labels, the same rows saved at each of {k} steps"
        return counts, f"{total} labels over {k} saves"

    def _too_few(self, step: int, total: int, classes: int, per_class: float) -> str:
        """Why the counts up to ``step`` are not judged yet: how many labels were saved, how (labels per
        saved step x saved steps), and what it needs."""
        saves = sum(1 for s, part in self._counts.parts.items() if s <= step and part is not None)
        how = f"about {total / max(saves, 1):.3g} per saved step x {saves} saved steps"
        if total < self.samples:
            need = (f"{total} of samples={self.samples} labels saved ({how}); judges after samples={self.samples} "
                    "(or sooner when the counts settle the imbalance either way)")
        else:
            need = (f"{total} labels saved ({how}) of {classes} classes, about {per_class:.3g} per class: too few to "
                    f"tell a ratio above threshold_imbalance={self.threshold_imbalance:g} from chance (the plain "
                    f"ratio is judged from {LABELS_PER_CLASS} labels per class, fewer when the counts settle it "
                    "either way)")
        return need + "; save labels at more steps (their collection's save_config) to have it judged"

    def invoke_at_step(self, step):
        if self._not_classes_objective():
            return False
        self._say_no_classes()
        label_names = sorted(set(select_tensors(self.base_trial, [], self.labels_regex))
                             | set(collection_tensors(self.base_trial, self.labels_collection)))
        if not label_names:
            cv = cross_validation(self.base_trial, "predictions (labels only of the hook's validation_data)")
            if cv is not None:
                self.not_applicable(cv)
            elif all(labels_configured_empty(self.base_trial, c) for c in self.labels_collection):
                self.not_applicable(no_labels_reason(self.base_trial))
            return False
        prediction_names = sorted(set(select_tensors(self.base_trial, [], self.predictions_regex))
                                  | set(collection_tensors(self.base_trial, self.predictions_collection)))
        if self._only is not None:
            label_names, prediction_names = self._only
        else:
            per_task = label_tasks.tasks(label_names, prediction_names, self.base_trial)
            if len(per_task) > 1:
                return label_tasks.judge_each_task(self, step, per_task, self._task_rule)

        def saved_steps():
            return sorted({s for n in label_names for s in self.base_trial.tensor(n).steps()})

        if not self._train_labels:  # decided again until training labels appear (they may arrive later)
            self._train_labels = any(self.base_trial.tensor(n).steps(mode=ModeKeys.TRAIN) for n in label_names)
        # (a finished run is read whole at once: the step-weighted test of a count's imbalance judges it against
        # the whole run's training data, :meth:`_mix_changed`; the counts judged at a step stay those up to it)
        upto = step
        if self.base_trial.loaded_all_steps:
            if "_last_saved" not in self.__dict__:  # (listed once: a finished run's saves do not change)
                self.__dict__["_last_saved"] = saved_steps()[-1:]
            upto = max([step] + self._last_saved)
        for s in self._counts.steps_to_read(saved_steps, upto):
            part = self._contribution(s, label_names, prediction_names)
            self._parts[s] = part
            self._counts.add(s, part if part is not None and self._counted(s) else None)
            if part is not None and self._counted(s):
                self._count_save(s)
                self._over_steps.add(s, part[0])
                self._introductions.add(s, part[0])
        if self._per_position is None and self._parts.get(step) is not None:
            self._per_position = self._targets_per_position(step)
        if self._per_position is not None:
            self.__dict__.pop("_shapes_at", None)  # (decided: the shapes are not needed any more)
        else:  # (undecided: only the shapes of steps still to come are)
            shapes = self.__dict__.get("_shapes_at", {})
            self.__dict__["_shapes_at"] = {s: seen for s, seen in shapes.items() if s > step}
        per_position, judged = self._per_position or ("", False)
        if per_position:
            # the counts are not judged; the trained model's mispredictions are, per position, when they mean
            # something (not a language's rare tokens)
            self.not_applicable(per_position + (
                ": the class counts are not judged (the misprediction test judges the last labels saved, "
                "if in the last 10% of a finished run)" if judged else ""))
        if self._parts.get(step) is None:  # no labels at this step: nothing new to judge
            self.not_evaluated(self._waiting or "judges at steps where labels were saved")
            return False
        if per_position:
            return judged and self._mispredicted(step, label_names, saved_steps, None, per_position)
        totals = self._counts.total(step)
        counts = totals[0] if totals is not None else np.zeros(0, np.int64)
        total = int(counts.sum())
        if total == 0:
            self.not_evaluated("judges at steps where training labels were saved")
            return False
        present = np.flatnonzero(counts)
        scored = self.__dict__.get("classes_scored", 0)
        if len(present) == 1 and scored >= 2:
            only = int(present[0])
            # (class weights move the ratio allowed: a missing class weighted w against the present one's v may be
            # w / v times rarer by count; of the classes not seen, the most heavily weighted is the one assumed,
            # those without a recorded weight weigh 1)
            weights, source = self._class_weights(label_names) or ({}, "")
            unseen = [w for c, w in weights.items() if c != only and w > 0]
            if scored - 1 > len(unseen):
                unseen.append(1.0)
            present_weight = weights.get(only, 1.0)
            allowed = (self.threshold_imbalance * max(unseen) / present_weight if present_weight > 0 and unseen
                       else float("inf"))
            chance = (1 - 1 / (1 + allowed)) ** total
            binary = next((b for b in map(self._binary_loss, label_names) if b), None)
            scorer = f"{binary} scores (one output for two classes)" if binary and scored == 2 else "the model scores"
            weighted = f", weighted by {source}" if weights else ""
            if chance < ONE_CLASS_CHANCE:
                self.mark_evaluated(*label_names)
                self._mix_said = self._one_class_for_a_while(step, only, total, weights)
                self.caveat(None)
                if self._mix_said:
                    return False
                return (f"all {total} labels seen so far are class {only}, of the {scored} classes {scorer} "
                        f"(a class at the ratio threshold_imbalance={self.threshold_imbalance:g}{weighted} would "
                        f"have shown: chance {chance:.2g})")
            self.not_evaluated(f"{total} labels seen, all class {only}: judges one class once a class at the "
                               f"ratio threshold_imbalance would have shown (chance < {ONE_CLASS_CHANCE:g})")
            return False
        weights, source = self._class_weights(label_names) or ({}, "")
        weight = np.array([weights.get(int(c), 1.0) for c in range(len(counts))])
        present = present[weight[present] > 0]  # (a class weighted 0 is not trained on)
        if not len(present):
            return False
        weighted = counts * weight
        most, least = present[np.argmax(weighted[present])], present[np.argmin(weighted[present])]
        ratio = weighted[most] / weighted[least]
        # (the counts of one save when every save counted holds the same rows: XGBoost's held-out set, re-saved
        # each round, is not that many samples; the ratio is the same)
        shown, labels_said = self._counts_said(step, counts, total)
        said = f"class {most} has {shown[most]} samples, class {least} {shown[least]}"
        if weights:
            said += (f", weighted by {source} ({weight[most]:.4g} and {weight[least]:.4g}): "
                     f"{shown[most] * weight[most]:.4g} against {shown[least] * weight[least]:.4g}; weighted")
        else:
            said += ":"
        per_class = total / len(present)
        self._mix_said = None
        if total >= self.samples and per_class >= LABELS_PER_CLASS:
            self._waiting = None
            self.mark_evaluated(*label_names)
            if ratio > self.threshold_imbalance:
                self._mix_said = self._mix_changed(step, counts, total, most, least, weight, ratio, shown, labels_said)
                if not self._mix_said:
                    self.caveat(None)
                    return f"{said} ratio {ratio:.4g} > threshold_imbalance {self.threshold_imbalance:g} ({labels_said})"
        else:
            # fewer labels than ``samples``, or than LABELS_PER_CLASS per class (many classes): judged when the
            # counts settle the question either way despite the chance in counts this small (the ratio
            # bounded two standard deviations each way; weights scale the bounds)
            low, _ = _ratio_bounds(int(counts[most]), int(counts[least]))
            high = _ratio_upper_bound(int(counts[most]), int(counts[least]))
            low, high = low * weight[most] / weight[least], high * weight[most] / weight[least]
            fewer = (f"fewer than samples={self.samples}" if total < self.samples else
                     f"about {per_class:.3g} per class of {len(present)}, fewer than {LABELS_PER_CLASS}")
            if low > self.threshold_imbalance:
                self._waiting = None
                self.mark_evaluated(*label_names)
                self._mix_said = self._mix_changed(step, counts, total, most, least, weight, ratio, shown, labels_said)
                if not self._mix_said:
                    self.caveat(None)
                    return (f"{said} ratio {ratio:.4g}, at least {low:.3g} allowing for the chance in counts this "
                            f"small, > threshold_imbalance {self.threshold_imbalance:g} ({labels_said}, {fewer})")
            elif high > self.threshold_imbalance:
                held_out = self._held_out_balance(step, counts, weight)
                if held_out is None:
                    self._waiting = self._too_few(step, total, len(present), per_class)
                    self.not_evaluated(self._waiting)
                    return False
                self._waiting = None
                self.mark_evaluated(*label_names)
                self._mix_said = held_out  # (what the counts said: the detail, and the misprediction test's words)
            else:
                self._waiting = None
                self.mark_evaluated(*label_names)
        self.caveat(None)  # (the detail says what the weighted counts said at the last step judged, or nothing)
        # (reached only when the class counts passed the imbalance test above: said, lest "ClassImbalance" be
        # read as "the data is imbalanced"; not "balanced", which a ratio of 7.9 under a threshold of 10 is not:
        # probe 17a F10)
        if self._mix_said:
            counts_said = self._mix_said
        elif len(present) > 1:
            rarest = least if least != most else next(k for k in present if k != most)  # (a tie)
            if weights:
                # (1164 labels against 36 read "balanced ... ratio 1" when the ratio was of the counts weighted by
                # scale_pos_weight: probe 16b F8)
                counts_said = (f"the class counts weighted by {source} pass the imbalance test: the largest, class "
                               f"{most}, has {shown[most]} labels and the smallest, class {rarest}, {shown[rarest]}, "
                               f"weighted {weight[most]:.4g} and {weight[rarest]:.4g}: weighted ratio {ratio:.3g} <= "
                               f"threshold_imbalance {self.threshold_imbalance:g}")
            else:
                counts_said = (f"the class counts pass the imbalance test: the largest, class {most}, has "
                               f"{shown[most]} labels and the smallest, class {rarest}, {shown[rarest]}: ratio "
                               f"{ratio:.3g} <= threshold_imbalance {self.threshold_imbalance:g}")
        else:
            counts_said = f"all {shown[most]} labels counted are class {most}"
        return self._mispredicted(step, label_names, saved_steps, counts_said, None)

    def _held_out_balance(self, step: int, counts: np.ndarray, weight: np.ndarray) -> Optional[str]:
        """At the last step with labels of a finished run whose training labels saved are too few to settle the
        imbalance test (a batch of 4, a hundred classes, under a tapered schedule), what the labels of its first
        validation pass say, when they settle that no two classes are further apart than threshold_imbalance
        (their extreme pair, weighted as the training labels are, within it even allowing for chance:
        :func:`_ratio_upper_bound`) and the training labels saved do not differ from them beyond chance
        (:func:`_homogeneity_p` >= :data:`HOMOGENEITY_LEVEL`); None otherwise. Only the first pass: later passes
        re-read the same rows, which are no more samples. Never a finding: a validation set drawn to be
        representative stands for the training data only where nothing says otherwise, and a training set
        rebalanced on purpose differs from it -- the counts must show no imbalance either way."""
        trial = self.base_trial
        last = self.__dict__.get("_last_saved") or [step]
        if not (trial.loaded_all_steps and self._train_labels) or step < last[-1]:
            return None
        evals = sorted(s for s, part in self._parts.items() if part is not None and trial.mode(s) == ModeKeys.EVAL)
        if not evals:
            return None
        first = [evals[0]]
        for g in evals[1:]:
            if g != first[-1] + 1:  # (a step between: the pass ended, or a save of it was skipped)
                break
            first.append(g)
        size = max([len(counts), len(weight)] + [len(self._parts[g][0]) for g in first])
        held = sum(np.pad(self._parts[g][0], (0, size - len(self._parts[g][0]))) for g in first)
        train = np.pad(counts, (0, size - len(counts)))
        w = np.pad(weight, (0, size - len(weight)), constant_values=1.0)
        present = np.flatnonzero((held + train > 0) & (w > 0))
        if len(present) < 2:
            return None
        weighted = held * w
        most, least = present[np.argmax(weighted[present])], present[np.argmin(weighted[present])]
        if least == most:  # (every class alike, as a stratified split makes them)
            least = next(k for k in present if k != most)
        high = _ratio_upper_bound(int(held[most]), int(held[least])) * w[most] / w[least]
        if not high <= self.threshold_imbalance:
            return None
        p = _homogeneity_p(train[present], held[present])
        if p < HOMOGENEITY_LEVEL:
            return None
        pass_steps = f"EVAL step{'s' if len(first) > 1 else ''} " + (
            f"{trial.mode_modestep(first[0])[1]}-{trial.mode_modestep(first[-1])[1]}" if len(first) > 1
            else f"{trial.mode_modestep(first[0])[1]}")
        return (f"the {int(train.sum())} training labels saved are too few to settle the counts, so the "
                f"{int(held.sum())} labels of the first validation pass ({pass_steps}) were judged: the largest class, "
                f"{most}, has {int(held[most])} labels and the smallest, class {least}, {int(held[least])}: a ratio of "
                f"at most {high:.3g} allowing for chance <= threshold_imbalance {self.threshold_imbalance:g}, and the "
                f"training labels saved do not differ from them beyond chance (chi-square p = {p:.2g})")

    def caveat(self, reason: Optional[str]) -> None:
        """As :meth:`Rule.caveat`, with what the weighted class counts said at the last step judged (a class mix
        that changed over the run: :meth:`_mix_changed`) kept in front."""
        mix = self.__dict__.get("_mix_said")
        super().caveat("; ".join(r for r in (mix, reason) if r) or None)

    def _mix_changed(self, step: int, counts: np.ndarray, total: int, most: int, least: int, weight: np.ndarray,
                     ratio: float, shown: np.ndarray, labels_said: str) -> Optional[str]:
        """Why the plain sums' imbalance of class ``most`` over ``least`` up to ``step`` (``counts``, ``total``
        labels) is not the data's, or None when it may be. Either classes were introduced over the run
        (:meth:`_introduced_late`) and the saves since the last were introduced show no imbalance beyond doubt;
        or the counts weighted by the training steps each save stands for (up to ``step`` while the run trains,
        over the whole run once it has ended: a skewed warm-up is judged by what followed it)
        (:class:`StepWeightedCounts`) put the two classes within ``threshold_imbalance`` of each other even
        allowing for chance (:func:`_ratio_upper_bound` on their effective counts; ``weight``: the class
        weights, as for the plain ratio). The sums hold most of a tapered schedule's labels in its first ten
        steps: a class mix that changed over the run (a curriculum adding classes, class-incremental learning, a
        sampler re-weighted after warm-up) read as an imbalance of the data. On data whose mix does not change,
        the weighted counts agree with the sums (more loosely): an imbalance is still found."""
        summed = (f"summed over the saves, class {most} has {shown[most]} labels and class {least} {shown[least]} "
                  f"(ratio {ratio:.4g}; {labels_said}), but the class mix changed over the run: ")
        introduced = self._introduced_late(step, counts, total, weight, most, least)
        if introduced:
            return summed + introduced
        return self._weighted_mix(step, most, least, weight, summed)

    def _weighted_mix(self, step: int, most: int, least: int, weight: np.ndarray, summed: str) -> Optional[str]:
        """``summed`` and what the counts weighted by the training steps each save stands for say of the classes
        ``most`` and ``least`` (up to ``step`` while the run trains, over the whole run once it has ended) when they
        put them within ``threshold_imbalance`` of each other allowing for chance; None otherwise. ``weight``: the
        class weights, as for the plain ratio (at least ``max(most, least) + 1`` of them)."""
        saves = self.__dict__.get("_saves_counted", [])
        whole = self.base_trial.loaded_all_steps and saves and saves[-1] > step
        found = self._over_steps.at(saves[-1] if whole else step)
        if found is None:
            return None
        weighted, effective = found
        weighted = np.pad(weighted, (0, max(0, max(most, least) + 1 - len(weighted))))
        mass = float(weighted.sum())
        if mass <= 0 or effective <= 0:
            return None
        share = weighted / mass
        bound = _ratio_upper_bound(int(round(share[most] * effective)), int(round(share[least] * effective)))
        bound *= weight[most] / weight[least]
        if bound > self.threshold_imbalance:
            return None
        as_trained = share[most] * weight[most] / (share[least] * weight[least]) if share[least] > 0 else float("inf")
        over = f"over the whole run (to step {saves[-1]})" if whole else f"up to step {step}"
        return (f"{summed}{over}, weighted by the training steps each save stands for (the steps since the save "
                f"before it), class {most} is {share[most]:.1%} of the labels and class {least} {share[least]:.1%}, "
                f"ratio {as_trained:.3g}, at most {bound:.3g} allowing for the chance in about {effective:.0f} labels' "
                f"worth <= threshold_imbalance {self.threshold_imbalance:g}: not imbalanced over the steps trained "
                "(saves close together, such as a tapered schedule's first ten steps, dominate the plain sums)")

    def _one_class_for_a_while(self, step: int, only: int, total: int, weights: Dict[int, float]) -> Optional[str]:
        """Why labels all of class ``only`` up to ``step`` of a finished run are not its data: over the whole run,
        weighted by the training steps each save stands for, another class is within ``threshold_imbalance`` of
        it (:meth:`_weighted_mix`): a run whose first batches held one class (an epoch not shuffled, a curriculum
        that starts with one class). None otherwise, and while the run trains (what comes later is not known)."""
        saves = self.__dict__.get("_saves_counted", [])
        if not (self.base_trial.loaded_all_steps and saves and saves[-1] > step):
            return None
        weighted, _ = self._over_steps.at(saves[-1]) or (np.zeros(0), 0.0)
        weight = np.array([weights.get(c, 1.0) for c in range(max(len(weighted), only + 1))])
        others = [c for c in np.flatnonzero(weighted) if c != only and weight[c] > 0]
        if not others:
            return None
        other = max(others, key=lambda c: weighted[c] * weight[c])
        return self._weighted_mix(step, only, int(other), weight, f"all {total} labels up to step {step} are class "
                                  f"{only}, but the class mix changed over the run: ")

    def _introduced_late(self, step: int, counts: np.ndarray, total: int, weight: np.ndarray, most: int,
                         least: int) -> Optional[str]:
        """What the counts say when the rarer class of the sums, ``least``, was introduced over the run
        (:meth:`ClassIntroductions.late`) and the saves since then show no imbalance of ``most`` over it beyond
        doubt (the test of the sums, on their counts: the plain ratio from ``samples`` labels and
        :data:`LABELS_PER_CLASS` per class, else the ratio allowing for chance); None when it was not, or the
        saves since show the imbalance too."""
        late = self._introductions.late(least, step, counts, total)
        if late is None:
            return None
        at, before = late
        since = self._introductions.since(at, step).astype(np.int64)
        since = np.pad(since, (0, max(0, max(most, least) + 1 - len(since))))
        n, classes = int(since.sum()), int(np.count_nonzero(since))
        a, b = int(since[most]), int(since[least])
        ratio = a * weight[most] / (b * weight[least]) if b else float("inf")
        intro = (f"class {least} first showed at step {at}, after {before} labels without it (a class introduced over "
                 f"the run: a curriculum, class-incremental learning); since then, of {n} labels, class {most} has {a} "
                 f"and class {least} {b}: ratio {ratio:.3g}")
        if n >= self.samples and n / max(classes, 1) >= LABELS_PER_CLASS:
            if ratio > self.threshold_imbalance:
                return None
            return f"{intro} <= threshold_imbalance {self.threshold_imbalance:g}"
        if _ratio_bounds(a, b)[0] * weight[most] / weight[least] > self.threshold_imbalance:
            return None
        return (f"{intro}, not beyond threshold_imbalance {self.threshold_imbalance:g} allowing for the chance in "
                "counts this small")

    def _mispredicted(self, step: int, label_names: List[str], saved_steps, counts_said: Optional[str],
                      per_position: Optional[str]):
        """The misprediction test at ``step``, the last step with labels of a finished run: a class with at least
        :data:`MISPREDICTION_LABELS` labels mostly mispredicted, by the labels and predictions of the saves that
        stand for the trained model (:meth:`_trained_model_saves`: one batch of a tapered schedule is too small a
        sample, and judged no class). Predictions that are not finite are left out (and said). When the test is
        not reached, the verdict's detail says why. ``counts_said``: what the count test found;
        ``per_position``: why the counts were not judged (labels per pixel)."""
        saved = saved_steps()
        if not self.base_trial.loaded_all_steps or step != saved[-1]:
            return False
        pooled, when, why_not = self._trained_model_saves(saved)
        if not pooled:
            # (said, lest "no issues" claim the test ran)
            self.caveat(f"the misprediction test (the trained model's predictions) was not reached: {why_not}")
            return False
        parts = [self._parts[s] for s in pooled]
        labels, wrong, compared, not_finite, predicted = (
            np.sum([np.pad(p[i], (0, max(len(q[0]) for q in parts) - len(p[i]))) for p in parts], axis=0)
            for i in range(5))
        where = (f"the {len(pooled)} saves of steps {pooled[0]}-{pooled[-1]} that stand for the trained model"
                 if len(pooled) > 1 else f"step {pooled[0]}")
        rows = "labelled positions" if per_position else "samples"
        n, unscored = int(compared.sum()), int(not_finite.sum())
        left_out = (f"; {unscored} of the {int(labels.sum())} {rows} were left out, their predictions not finite "
                    "(NaN or infinite)" if unscored else "")
        if not n:
            self.caveat("the misprediction test (the trained model's predictions) was not reached: " + (
                f"the predictions saved with the labels of {where} are not finite (NaN or infinite) in all "
                f"{unscored} {rows}: the model's outputs are not numbers" if unscored else
                f"no predictions were paired with the labels of {where}"
                + (f" ({self._unscored()})" if self._unscored() else "")))
            return False
        if per_position:
            self.mark_evaluated(*label_names)
        for c in np.flatnonzero(compared >= MISPREDICTION_LABELS):
            if wrong[c] / compared[c] > self.threshold_misprediction:
                said = (f"the trained model{when} mispredicts class {c} in {wrong[c]} of its {compared[c]} {rows} "
                        f"({wrong[c] / compared[c]:.4g} > threshold_misprediction {self.threshold_misprediction:g}; "
                        f"{where}){self._one_class(labels, compared, predicted, rows)}{left_out}")
                if per_position:
                    return f"{said}; the class counts are not judged: {per_position}"
                return f"{said}: a fault of the predictions, not of the class counts ({counts_said})"
        # (classes labelled too rarely to be judged: said, lest "no issues" claim them)
        few = [c for c in np.flatnonzero(labels) if compared[c] < MISPREDICTION_LABELS]
        few_said = ", ".join(f"class {c}: {compared[c]}" for c in few[:10]) + (" ..." if len(few) > 10 else "")
        one_class = self._one_class(labels, compared, predicted, rows)
        if not np.any(compared >= MISPREDICTION_LABELS):
            self.caveat(f"the misprediction test (the trained model's predictions) was not reached: the {n} {rows} "
                        f"with a prediction of {where} hold no class with {MISPREDICTION_LABELS} ({few_said})"
                        f"{one_class}{left_out}; save labels and predictions of more samples (a validation pass) at "
                        "the end")
        elif few:
            self.caveat(f"the misprediction test judged {where}, but not {len(few)} of the {len(np.flatnonzero(labels))}"
                        f" classes labelled: fewer than {MISPREDICTION_LABELS} {rows} with a prediction ({few_said})"
                        f"{one_class}{left_out}")
        elif left_out:
            self.caveat(f"the misprediction test judged {where}{left_out}")
        return False

    def _trained_model_saves(self, saved: List[int]) -> Tuple[List[int], str, str]:
        """``(steps, when, why not)``: the saves with labels that stand for the trained model, the latest first
        and back while each does (in the last 10 % of the run, or after the training loss reached its final
        level: :func:`_labels_of_the_trained_model`; TRAIN batches and evaluation passes alike), in order; what a
        finding adds of the last; and, when there is none, why the last labels do not stand for it. Of saves
        of the same rows (XGBoost's held-out set, each round) only the latest counts."""
        stopped = self._stopped_early()
        if stopped:  # (a run a rule stopped has no trained model: the model at the stop had not finished)
            return [], "", stopped
        curves: dict = {}  # (each loss curve read once)
        pooled, seen, when = [], set(), ""
        for s in reversed(saved):
            if self._parts.get(s) is None:
                continue
            trained, said = _labels_of_the_trained_model(self.base_trial, s, curves)
            if not trained:
                return sorted(pooled), when, said
            if not pooled:
                when = said
            if self._rows.get(s) not in seen:
                seen.add(self._rows.get(s))
                pooled.append(s)
        return sorted(pooled), when, "no labels were read"

    @staticmethod
    def _one_class(labels: np.ndarray, compared: np.ndarray, predicted: np.ndarray, rows: str) -> str:
        """What a model that predicts (almost) one class does, for a finding's message: the share of its
        predictions that class takes, and the classes labelled but never predicted; "" otherwise."""
        top = int(np.argmax(predicted))
        labelled = np.flatnonzero(labels)
        # (most rows of the other classes predicted as it too, by its predictions beyond its own rows: an
        # imbalanced set's majority is predicted for most rows by a sound model)
        n = int(compared.sum())
        others = n - int(compared[top])
        if len(labelled) < 2 or predicted[top] < ONE_CLASS_SHARE * n or predicted[top] - compared[top] < others / 2:
            return ""
        never = [int(c) for c in labelled if predicted[c] == 0]
        never_said = ""
        if never:
            listed = ", ".join(map(str, never[:10])) + (" ..." if len(never) > 10 else "")
            never_said = f"; {len(never)} of the {len(labelled)} classes labelled never predicted ({listed})"
        return f"; it predicts class {top} for {predicted[top]} of the {n} {rows} ({predicted[top] / n:.0%}){never_said}"


#: a class must hold this many labels with a prediction (pooled over the trained model's saves) to be judged
#: mispredicted
MISPREDICTION_LABELS = 10
#: a model whose predictions are this share one class is said to predict (almost) one class (a message's wording)
ONE_CLASS_SHARE = 0.8


#: labels all of one class are judged once a class at the threshold ratio would have shown but with this chance
ONE_CLASS_CHANCE = 0.001
#: labels per class (on average) from which the plain ratio of counts is judged: the square root of a count
#: of c has a standard deviation of about 1/2, so with K balanced classes of c labels each the plain ratio
#: exceeds 10 only if one class lies ~1.04 * sqrt(c) standard deviations above the mean and another as far
#: below; at c = 30 that is 5.7 standard deviations each way (a chance under 1e-8 per class, negligible up to
#: a million classes). Below it the ratio is judged with the chance allowance of :func:`_ratio_bounds`.
LABELS_PER_CLASS = 30


def _ratio_bounds(most: int, least: int) -> Tuple[float, float]:
    """Bounds of the ratio of two class counts, each count moved two standard deviations (a count ``c`` is
    Poisson-like: ``sqrt(c)`` has a standard deviation of about 1/2, so ``(sqrt(c) -+ 1)^2`` bound it): 113
    against 2 is at least 92.7 / 5.8 = 16; 9 against 1 is at least 4 / 4 = 1, at most 16 / 0 = infinite."""
    low = max(np.sqrt(most) - 1.0, 0.0) ** 2 / (np.sqrt(least) + 1.0) ** 2
    floor = max(np.sqrt(least) - 1.0, 0.0) ** 2
    high = (np.sqrt(most) + 1.0) ** 2 / floor if floor > 0 else float("inf")
    return float(low), float(high)


#: the one-sided chance at which counts too few for the plain ratio settle that two classes are no further apart
#: than threshold_imbalance: a normal variable's beyond two standard deviations, the allowance of _ratio_bounds
BALANCED_TAIL = 0.0228
_TAIL_SIGMAS = 2.0  # (BALANCED_TAIL as standard deviations of a normal variable)
#: above this many labels of the two classes _ratio_upper_bound takes the binomial as normal
_EXACT_LABELS = 20000


#: the chi-square homogeneity test's level below which a run's training labels differ from its validation labels
#: (ClassImbalance judges the validation labels only when the training labels saved are consistent with them)
HOMOGENEITY_LEVEL = 0.01


def _homogeneity_p(a: np.ndarray, b: np.ndarray) -> float:
    """The p-value of the chi-square test that class counts ``a`` and ``b`` come from one distribution (a 2 x K
    table; the chi-square tail by Wilson and Hilferty's cube-root normal approximation, well within what a test at
    1% needs); 1 when there is nothing to compare."""
    table = np.vstack([a, b]).astype(np.float64)
    table = table[:, table.sum(axis=0) > 0]
    if table.shape[1] < 2 or table.sum(axis=1).min() == 0:
        return 1.0
    expected = table.sum(axis=1, keepdims=True) * table.sum(axis=0, keepdims=True) / table.sum()
    x, k = float(((table - expected) ** 2 / expected).sum()), table.shape[1] - 1
    z = ((x / k) ** (1 / 3) - (1 - 2 / (9 * k))) / math.sqrt(2 / (9 * k))
    return float(1.0 - NormalDist().cdf(z))


def _ratio_upper_bound(most: int, least: int, tail: float = BALANCED_TAIL) -> float:
    """The largest ratio of two classes' frequencies that the counts ``most`` and ``least`` leave plausible: the
    ``r`` at which ``least`` or more of the ``n = most + least`` labels of the two classes would fall to the rarer
    one with chance ``tail``, were its share ``1 / (1 + r)`` (given ``n``, the rarer class's count is binomial: an
    exact bound, Clopper-Pearson's). Moving both counts two standard deviations at once (:func:`_ratio_bounds`)
    stacks two allowances and asked for about twice the labels: 18 against 6 -- ten classes of a semi-supervised
    run's 135 training labels -- allowed 13 and was not judged; this bound is 9.4. Judging "no pair is further
    apart than the threshold" by its extreme pair needs no allowance for the choice of pair: the claim holds only
    if it holds for every pair, the extreme one the hardest. ``inf`` when ``least`` is 0."""
    if least <= 0:
        return float("inf")
    n = most + least
    if n > _EXACT_LABELS:
        # (the exact sum costs a log-factorial per label and is bisected 60 times: a run's labels weighted by the
        # steps each save stands for count millions over a long run, and this is asked at every step judged;
        # at these counts the binomial is normal to well within what the threshold needs)
        share = least / n
        low = share - _TAIL_SIGMAS * math.sqrt(share * (1 - share) / n)
        return float("inf") if low <= 0 else float((1 - low) / low)
    i = np.arange(least, n + 1)
    log_choose = np.array([math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) for k in i])

    def chance(log_ratio: float) -> float:  # P(rarer class's count >= least | share 1 / (1 + r))
        log_p, log_q = -np.logaddexp(0.0, log_ratio), log_ratio - np.logaddexp(0.0, log_ratio)
        terms = log_choose + i * log_p + (n - i) * log_q
        top = float(terms.max())
        return float(np.exp(top) * np.sum(np.exp(terms - top)))

    lo, hi = math.log(max(most, 1) / least), math.log(1e12)
    if chance(hi) >= tail:
        return float("inf")
    if chance(lo) < tail:
        return float(most / least)
    for _ in range(60):  # (bisection on log r: the chance falls as r grows)
        mid = (lo + hi) / 2
        if chance(mid) >= tail:
            lo = mid
        else:
            hi = mid
    return float(math.exp(lo))


def _add_class_counts(total, part):
    if total is None:
        return part
    n = max(len(total[0]), len(part[0]))
    return tuple(np.pad(t, (0, n - len(t))) + np.pad(p, (0, n - len(p))) for t, p in zip(total, part))


def _name(rule: str, param: str, value) -> str:
    if not isinstance(value, str) or not value.strip():
        raise SMDebugValueError(f"{rule}: {param} must be a non-empty tensor or collection name, got {value!r}")
    return value.strip()
