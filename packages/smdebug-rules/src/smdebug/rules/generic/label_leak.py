"""LabelLeak: an XGBoost model whose very first round already tells the held-out classes apart.

A feature that encodes the label (a column computed from the target, a row number of a table sorted by
outcome, a class id copied into the features) lets one tree split the classes cleanly: the first boosting
round then tells the held-out rows' classes (almost) perfectly apart, and every later round is busy with
nothing. One round of depth-limited trees does not do that on a real task: on the rule-accuracy benchmark's
healthy boosters (breast cancer, digits, iris, synthetic tables) the first round reaches at most AUC 0.972 with
two classes and a balanced accuracy of 0.86 with more, its leaks AUC 1.000 (twice) and 0.995.

What is judged is what the XGBoost hook saves of its held-out rows: ``labels`` and ``predictions`` at the
first round (step 0). With two classes, how well the predictions rank them (AUC: a ranking does not depend on
the base score, which keeps a first round's probabilities near the prior); with more, the balanced accuracy of
the predicted classes (the argmax of ``multi:softprob``'s columns, ``multi:softmax``'s ids).

Not judged (NotApplicable): regression, count, survival and ranking objectives; random forests
(``num_parallel_tree`` > 1: their first round is the whole model); ``gblinear`` (a linear model's first round
weighs every feature at once, so a linearly easy task looks the same); a run that continues a trained model
(the hook's record of the rounds it started from). A class is judged only when ``min_class_samples`` of its
rows are held out (a few rows can be separated perfectly by luck); a run with fewer than two such classes is
NotEvaluated.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Dict, List, Optional, Tuple

import numpy as np

from smdebug.rules.evaluation import looking_for
from smdebug.rules.generic.selection import value_at
from smdebug.rules.generic.xgboost_rules import (booster_params, cross_validation, num_parallel_tree,
                                                  regression_objective)
from smdebug.rules.params import as_float, as_int, in_range
from smdebug.rules.rule import Rule

LABELS, PREDICTIONS = "labels", "predictions"
#: the XGBoost hook's record, in ``_meta.xgboost_booster``, of the rounds the model had before this run trained
INITIAL_ROUNDS_KEY = "initial_rounds"
#: classes above this many are not scored one by one (a label column of ids, not classes)
_MAX_CLASSES = 1000


def one_vs_rest_auc(scores: np.ndarray, positive: np.ndarray) -> float:
    """The AUC of ``scores`` for the rows where ``positive`` is True against the others: the chance that a
    positive row scores above a negative one, ties counting half (average ranks, as Mann-Whitney's U)."""
    _, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    average_rank = ends - (counts - 1) / 2.0  # 1-based rank of each distinct score, ties averaged
    ranks = average_rank[inverse.reshape(-1)]
    n_pos = int(positive.sum())
    n_neg = positive.size - n_pos
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def positive_scores(predictions: np.ndarray) -> Optional[np.ndarray]:
    """The model's score of class 1 for each row of a two-class task: XGBoost's one value per row (a
    probability or a margin), or the second of its columns. None for another shape."""
    if predictions.ndim == 1:
        return predictions
    if predictions.ndim == 2:
        return predictions[:, 0] if predictions.shape[1] == 1 else predictions[:, 1]
    return None


def predicted_classes(predictions: np.ndarray, classes: np.ndarray) -> Optional[np.ndarray]:
    """The class each row is predicted: the largest of one column per class (``multi:softprob``) or the class
    ids themselves (``multi:softmax``). None when the predictions are neither."""
    if predictions.ndim == 2 and predictions.shape[1] > int(classes.max()):
        return np.argmax(predictions, axis=1)
    flat = predictions.reshape(-1) if predictions.ndim == 1 or (
        predictions.ndim == 2 and predictions.shape[1] == 1) else None
    if flat is not None and np.all(flat == np.round(flat)):
        return flat.astype(np.int64)
    return None


def _listed(values: List[int], most: int = 8) -> str:
    shown = ", ".join(str(v) for v in values[:most])
    return shown + (f" and {len(values) - most} more" if len(values) > most else "")


def _counts(classes: np.ndarray, counts: np.ndarray, most: int = 8) -> str:
    pairs = [f"{int(c)}: {int(n)}" for c, n in zip(classes[:most], counts[:most])]
    return ", ".join(pairs) + (f" and {classes.size - most} more" if classes.size > most else "")


class LabelLeak(Rule):
    """Fires when an XGBoost classifier's first boosting round already separates the held-out classes
    (almost) perfectly, the sign of a feature that encodes the label.

    :param auc_threshold: two classes: the first round's AUC from which the rule fires (default 0.995: a
        handful of misordered pairs in a thousand).
    :param accuracy_threshold: more classes: the first round's balanced accuracy (the mean of the judged
        classes' recalls) from which the rule fires (default 0.99).
    :param min_class_samples: held-out rows each class needs for the run to be judged (default 20).
    """

    def __init__(self, base_trial, auc_threshold="0.995", accuracy_threshold="0.99", min_class_samples="20",
                 other_trials=None, action_str=None):
        super().__init__(base_trial, other_trials=other_trials, action_str=action_str)
        rule = self.rule_name
        self.auc_threshold = in_range(rule, "auc_threshold", as_float(rule, "auc_threshold", auc_threshold), 0.5, 1)
        self.accuracy_threshold = in_range(rule, "accuracy_threshold",
                                           as_float(rule, "accuracy_threshold", accuracy_threshold), 0, 1)
        self.min_class_samples = as_int(rule, "min_class_samples", min_class_samples, minimum=1)
        #: the first round was judged (or could not be): later steps repeat what was said of it, as the
        #: evaluation keeps only the last step's word on whether the rule applies
        self._judged = False
        self._said: Optional[Tuple[str, str]] = None

    def _say(self, kind: str, reason: str) -> None:
        self._said = (kind, reason)
        (self.not_applicable if kind == "not applicable" else self.not_evaluated)(reason)

    def _not_applicable(self) -> Optional[str]:
        """Why the run's model is not one whose first round says anything of a leak (None when it is)."""
        trial = self.base_trial
        objective = regression_objective(trial)
        if objective is not None:
            return f"the objective {objective} predicts values, ranks or times, not classes"
        params = booster_params(trial)
        if params.get("booster") == "gblinear":
            return ("a linear booster (gblinear): its first round weighs every feature at once, so a task that is "
                    "linearly easy looks like a leak")
        forest = num_parallel_tree(params)
        if forest > 1:
            return f"a random forest (num_parallel_tree={forest}): its first round is the whole model"
        rounds = params.get(INITIAL_ROUNDS_KEY)
        if isinstance(rounds, (int, float)) and not isinstance(rounds, bool) and rounds > 0:
            return (f"the run continues a model trained for {int(rounds)} rounds before: its first round here is "
                    "not the model's first")
        return None

    def invoke_at_step(self, step):
        if self._judged:
            if self._said is not None:
                self._say(*self._said)
            return False
        trial = self.base_trial
        found = [name for name in (LABELS, PREDICTIONS) if trial.has_tensor(name)]
        looking_for("tensors 'labels' and 'predictions' (what the XGBoost hook saves of its held-out rows)", found)
        if len(found) < 2:
            cv = cross_validation(trial, "predictions")
            if cv is not None:
                self.not_applicable(cv)
            return False
        reason = self._not_applicable()
        if reason is not None:
            self.not_applicable(reason)
            return False
        first = min(trial.tensor(PREDICTIONS).steps() or [step])
        if step < first:
            return False
        if step > first or first > 0:
            self._judged = True
            self._say("not evaluated", f"judges the first round's predictions (step 0); the run saved them first "
                                       f"at step {first}")
            return False
        labels, predictions = value_at(trial, LABELS, step), value_at(trial, PREDICTIONS, step)
        self._judged = True
        if labels is None or predictions is None:
            self._say("not evaluated", "judges the first round's labels and predictions; the run saved "
                                       f"{PREDICTIONS if labels is None else LABELS} alone at step 0")
            return False
        return self._judge(np.asarray(labels), np.asarray(predictions))

    def _judge(self, labels: np.ndarray, predictions: np.ndarray):
        labels = labels.reshape(-1) if labels.ndim == 2 and 1 in labels.shape else labels
        if labels.ndim != 1 or labels.dtype.kind not in "fiub":
            self._say("not applicable", f"the labels (shape {labels.shape}) are no column of class ids")
            return False
        labels = labels.astype(np.float64)
        if not np.all(np.isfinite(labels) & (labels >= 0) & (labels == np.round(labels))):
            self._say("not applicable", "the labels are no class ids (fractions, negative or not finite values)")
            return False
        if predictions.dtype.kind not in "fiub" or predictions.shape[:1] != labels.shape:
            self._say("not evaluated", f"the predictions (shape {predictions.shape}) do not pair with the "
                                       f"{labels.size} labels")
            return False
        predictions = predictions.astype(np.float64)
        if not np.all(np.isfinite(predictions)):
            self._say("not evaluated", "the first round's predictions are not all finite (ExplodingTensor's finding)")
            return False
        int_labels = labels.astype(np.int64)
        classes, counts = np.unique(int_labels, return_counts=True)
        if classes.size < 2 or classes.size > _MAX_CLASSES:
            self._say("not evaluated", f"the held-out labels hold {classes.size} classes")
            return False
        # A class is judged when min_class_samples of its rows are held out: a few rows can be ranked or
        # classified perfectly by luck. A leak separates every class, so the well-sampled ones are enough.
        judged = [int(c) for c, n in zip(classes, counts) if n >= self.min_class_samples]
        if len(judged) < 2:
            self._say("not evaluated", f"fewer than two classes have min_class_samples={self.min_class_samples} "
                                       f"held-out rows (class counts {_counts(classes, counts)}): a few rows can "
                                       "be separated perfectly by luck")
            return False
        if classes.size == 2 and set(classes.tolist()) == {0, 1}:
            return self._judge_two_classes(int_labels, predictions)
        return self._judge_classes(int_labels, predictions, classes, judged)

    def _judge_two_classes(self, labels: np.ndarray, predictions: np.ndarray):
        """Two classes: how well the first round ranks them (AUC), whatever its base score."""
        scores = positive_scores(predictions)
        if scores is None:
            self._say("not evaluated", f"the predictions (shape {predictions.shape}) are no score per row")
            return False
        auc = one_vs_rest_auc(scores, labels == 1)
        if auc < self.auc_threshold:
            return False
        return self._finding(labels.size, 2, f"AUC {auc:.4f} (auc_threshold {self.auc_threshold:g})")

    def _judge_classes(self, labels: np.ndarray, predictions: np.ndarray, classes: np.ndarray, judged: List[int]):
        """More classes: how many of each class's rows the first round already predicts right (the mean
        recall of the judged classes). Not one-vs-rest AUCs: a softmax mixes every class's trees into each
        probability, so a middle class's ranking is off by the few rows past the training data's extremes."""
        predicted = predicted_classes(predictions, classes)
        if predicted is None:
            self._say("not evaluated", f"the predictions (shape {predictions.shape}) are neither one column per "
                                       "class nor class ids")
            return False
        recalls = [float(np.mean(predicted[labels == c] == c)) for c in judged]
        balanced = float(np.mean(recalls))
        if balanced < self.accuracy_threshold:
            return False
        left_out = [int(c) for c in classes if int(c) not in judged]
        said = f"balanced accuracy {balanced:.4f} (accuracy_threshold {self.accuracy_threshold:g}"
        said += f"; classes with too few rows not judged: {_listed(left_out)})" if left_out else ")"
        return self._finding(labels.size, classes.size, said)

    def _finding(self, rows: int, classes: int, measure: str) -> str:
        return (f"after its first round the model already separates the {rows} held-out rows' {classes} classes: "
                f"{measure}{self._split_features()}. One round of trees rarely does this on a real task: check "
                "for a feature computed from the label (a leak: the target, or an id sorted by it, among the "
                "features)")

    def _split_features(self) -> str:
        """The feature(s) the first round's trees gain most from, when the trees collection was saved."""
        trial = self.base_trial
        if not (trial.has_tensor("trees/Feature") and trial.has_tensor("trees/Gain")):
            return ""
        features, gains = value_at(trial, "trees/Feature", 0), value_at(trial, "trees/Gain", 0)
        if features is None or gains is None or features.size != gains.size:
            return ""
        by_feature: Dict[str, float] = defaultdict(float)
        for feature, gain in zip(features.reshape(-1).tolist(), gains.reshape(-1).tolist()):
            feature = feature.decode("utf-8", "replace") if isinstance(feature, bytes) else str(feature)
            if feature != "Leaf" and np.isfinite(gain) and gain > 0:
                by_feature[feature] += float(gain)
        total = sum(by_feature.values())
        if not total > 0:
            return ""
        ranked: List[Tuple[str, float]] = sorted(by_feature.items(), key=lambda item: -item[1])
        top = [item for item in ranked[:2] if item[1] >= 0.01 * total]  # (a 0% runner-up says nothing)
        from smdebug.core.names import terminal_safe

        listed = ", ".join(f"{terminal_safe(name[:64])} {gain / total:.0%}" for name, gain in top)
        return f"; its trees' split gain: {listed}"
