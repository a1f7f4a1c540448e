"""LabelLeak: an XGBoost model whose very first round separates the held-out classes (or ranks the held-out
targets) on one feature -- or, in a network's run, an input column that is the label
(:mod:`~smdebug.rules.generic.input_leak`).

A feature that encodes the label (a column computed from the target, a row number of a table sorted by
outcome, a class id copied into the features) lets the first tree split the classes with one split on it: the
children are pure, nothing else is worth splitting, and the first round already tells the held-out rows'
classes apart. Two things are asked of the first round (step 0), both needed:

* one feature splits each first-round tree cleanly: the tree's best split (two classes; with more, its two
  best, as a middle class needs a cut on each side) is on that feature and carries ``split_share`` (97 %) of
  the tree's split gain (the ``trees`` collection: ``trees/Tree``, ``trees/Feature``, ``trees/Gain``). With a
  leak the children of that split are pure and nothing else is worth splitting: 0.985 to 1.000 on every leak
  tried (the rule-accuracy benchmark's three, a leaked column in make_classification, Hastie's data and breast
  cancer). On real tasks a tree keeps finding gain elsewhere: at most 0.85 on the benchmark's healthy boosters
  and on scikit-learn's data sets (breast cancer, wine, iris, digits, moons, circles, blobs,
  make_classification, a noise-free linear rule of two features); a label that is one feature plus noise
  (sign(x0 + 0.1 N)) reaches 0.96, one with half that noise 0.98, which is a leak's pattern;
* the held-out rows are already well separated: with two classes the AUC of the predictions against the
  labels reaches ``auc_threshold`` (a ranking: it does not depend on the base score, which keeps a first
  round's probabilities near the prior), with more the balanced accuracy of the predicted classes (the
  argmax of ``multi:softprob``'s columns, ``multi:softmax``'s ids) reaches ``accuracy_threshold``.

Separation alone is no leak: one round of deep trees on an easy synthetic task (make_classification with
class_sep=2, a noise-free linear rule, circles) reaches AUC 0.993, from several features. One clean split
doing it is what a leak looks like; where the task is truly that easy, the finding is still worth the check
it asks for. Not found: a leaked column in a data set whose other features already nearly separate the
classes (iris, wine): the first round splits on those too.

A first round whose trees are single leaves (``binary:hinge`` with a majority of positives: every row's margin
is already past the hinge, so no split has gain) says nothing: the first round whose trees split is judged
instead (its model is a first round's on a constant; when the schedule left rounds before it unsaved, the
first saved round that splits, as the finding says). Where its predictions are one value for every row
(``binary:hinge`` predicts classes: all 1 until the margins cross 0), the separation is read at the first
later round whose predictions differ between rows.

A regression (``reg:*`` but ``reg:logistic``, ``count:*``) is judged the same way with a cut of its own: a leaked
target is cut again and again by the first tree to follow it, so the feature of the tree's best split carries
``split_share`` of the tree's gain over all its splits on it (0.995 to 1.000 on leaks with noise up to a fifth
of the target's spread; 0.23 to 0.89 on healthy first rounds: Friedman's tasks, diabetes, house prices, counts,
gamma and Poisson targets, the rule-accuracy benchmark's regressions), and the first round's predictions rank
the held-out rows as their labels: Spearman's rank correlation reaches ``rank_correlation_threshold`` (0.97 to
0.999 on those leaks with trees of depth 3 or more, 0.93 to 0.96 with depth 2; 0.38 to 0.86 healthy, 0.98 where
two features carry the whole target, whose gain they then share). A ranking, not an R^2: eta shrinks the first
round's values and a log link bends them. A target that is one feature's smooth function with little noise
(sin(2 x0) + 0.1 N) has a leak's split (1.000) and ranks just below the threshold (0.94). Not found:
``reg:absoluteerror`` (its first tree fits the gradients' signs: a few cuts, a rough ranking).

Not judged (NotApplicable): ranking and survival objectives; regressions of several targets; random forests
(``num_parallel_tree`` > 1: their first round is the whole model); ``gblinear`` (no trees); stumps
(``max_depth=1``: every tree has one split, whatever the data); a run that continues a trained model (the
hook's record of the rounds it started from); a booster none of whose saved trees split (a constant model:
nothing to leak). A class is judged only when ``min_class_samples`` of its rows are held out (a few rows can
be separated perfectly by luck); the held-out rows are the same at every round, so a run with fewer than two
such classes cannot be judged at all (NotApplicable: too little data). NotEvaluated: the run saved no first
round's trees.

The other leak a boosting run shows is of rows, not of a column: a "validation" set that holds the training rows
(``evals=[(dtrain, "train"), (dtrain, "validation")]``, or a model trained on the validation set). Its metric is
then the training metric, to the last bit, at every round; a real held-out set's never is (different rows give
different sums). So at the end of a finished run, two evaluation sets whose same metric (``train-logloss``,
``validation-logloss``) is equal at every one of at least ``MIN_SAME_ROUNDS`` rounds saved for both are a
finding: whatever the validation metric says, the model was judged on rows it was trained on.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from typing import Dict, List, Optional, Tuple

import numpy as np

from smdebug.core.names import clipped, listed, terminal_safe
from smdebug.core.run_info import framework_of
from smdebug.exceptions import StepUnavailable
from smdebug.rules.evaluation import looking_for
from smdebug.rules.generic.input_leak import MAX_ROWS, SavedRows
from smdebug.rules.generic.ranks import average_ranks, rank_correlation
from smdebug.rules.generic.selection import members, select_tensors, value_at
from smdebug.rules.generic.xgboost_rules import (booster_params, continued_rounds, cross_validation,
                                                  num_parallel_tree, regression_objective)
from smdebug.rules.params import as_float, as_int, in_range
from smdebug.rules.rule import Rule

LABELS, PREDICTIONS, INPUTS, LOSS_INPUTS = "labels", "predictions", "inputs", "loss_inputs"
#: what the rule reads of the first round's trees (the XGBoost hook's ``trees`` collection)
TREE_COLUMNS = ("trees/Tree", "trees/Feature", "trees/Gain")
#: classes above this many are not scored one by one (a label column of ids, not classes)
_MAX_CLASSES = 1000
#: a network's input tensors, and its target tensors, looked at (the first, by name): a model has a few of each
MAX_TENSORS = 8


def one_vs_rest_auc(scores: np.ndarray, positive: np.ndarray) -> float:
    """The AUC of ``scores`` for the rows where ``positive`` is True against the others: the chance that a
    positive row scores above a negative one, ties counting half (average ranks, as Mann-Whitney's U)."""
    ranks = average_ranks(scores)
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


#: rounds two evaluation sets' metrics must be equal at before they are said to hold the same rows (a few rounds
#: of a metric with few distinct values, such as an error rate on a small set, can agree by chance)
MIN_SAME_ROUNDS = 10
METRICS = "metrics"


def _saved_value(trial, name: str, step: int):
    """The tensor's value at ``step``, None where it was not saved there."""
    try:
        return value_at(trial, name, step)
    except StepUnavailable:
        return None


class LabelLeak(Rule):
    """Fires when an XGBoost model's first boosting round separates the held-out classes (a regression: ranks
    the held-out targets) on one feature, the sign of a feature that encodes the label; in a network's run
    (PyTorch, TensorFlow, MXNet), when a column of its saved 2-D inputs is the label (see
    :mod:`~smdebug.rules.generic.input_leak`; the parameters below are the booster's test's).

    :param split_share: the share of each first-round tree's split gain that its one best split on a feature
        (two classes; with more, its two best, both on that feature) must carry (default 0.97).
    :param auc_threshold: two classes: the first round's AUC on the held-out rows from which the rule fires
        (default 0.97).
    :param accuracy_threshold: more classes: the first round's balanced accuracy (the mean of the judged
        classes' recalls) from which the rule fires (default 0.95).
    :param min_class_samples: held-out rows a class needs to be judged (default 20; a regression needs twice
        as many rows).
    :param rank_correlation_threshold: a regression: the first round's rank correlation (Spearman's) between
        the held-out predictions and labels from which the rule fires (default 0.95). Its ``split_share`` is
        the share of each first-round tree's gain carried by all its splits on the feature of its best split.
    """

    def __init__(self, base_trial, split_share="0.97", auc_threshold="0.97", accuracy_threshold="0.95",
                 min_class_samples="20", rank_correlation_threshold="0.95", other_trials=None, action_str=None):
        super().__init__(base_trial, other_trials=other_trials, action_str=action_str)
        rule = self.rule_name
        self.split_share = in_range(rule, "split_share", as_float(rule, "split_share", split_share), 0, 1)
        self.auc_threshold = in_range(rule, "auc_threshold", as_float(rule, "auc_threshold", auc_threshold), 0.5, 1)
        self.accuracy_threshold = in_range(rule, "accuracy_threshold",
                                           as_float(rule, "accuracy_threshold", accuracy_threshold), 0, 1)
        self.min_class_samples = as_int(rule, "min_class_samples", min_class_samples, minimum=1)
        self.rank_correlation_threshold = in_range(rule, "rank_correlation_threshold", as_float(
            rule, "rank_correlation_threshold", rank_correlation_threshold), 0, 1)
        #: the run's objective when it predicts values (reg:*, count:*), judged by rank correlation
        self._regression: Optional[str] = None
        #: the first round was judged (or could not be): later steps repeat what was said of it, as the
        #: evaluation keeps only the last step's word on whether the rule applies
        self._judged = False
        self._said: Optional[Tuple[str, str]] = None
        #: the first round whose trees split and its splits (see _first_splitting_round), once found
        self._first_split: Optional[Tuple[int, List[Tuple[object, str, float]]]] = None
        #: why a later round's predictions are awaited (those of the first that split were one value)
        self._waiting: Optional[str] = None
        #: the last of the saved rounds read so far, all of whose trees are single leaves (-1: none yet), and
        #: how many saved rounds those are
        self._leaf_rounds, self._leaf_saves = -1, 0
        #: the rounds not saved between the last of those and the first that split ("11-19"), if any
        self._unsaved: Optional[str] = None
        self._same_checked = False  # whether the evaluation sets were compared (at the run's last step)
        #: a network's run (see _network_run), and its inputs' rows per (input, labels) pair
        self._network: Optional[bool] = None
        self._rows: Dict[Tuple[str, str], SavedRows] = {}
        self._inputs_judged = False

    def _say(self, kind: str, reason: str) -> None:
        self._said = (kind, reason)
        (self.not_applicable if kind == "not applicable" else self.not_evaluated)(reason)

    def _not_applicable(self) -> Optional[str]:
        """Why the run's model is not one whose first round says anything of a leak (None when it is)."""
        trial = self.base_trial
        objective = regression_objective(trial)
        if objective is not None and objective.startswith("rank:"):
            return (f"the objective {objective} ranks rows within each query: its labels are relevance grades, "
                    "not values a first round orders across all rows")
        if objective is not None and objective.startswith("survival:"):
            return f"the objective {objective} predicts survival times from censored labels"
        self._regression = objective
        params = booster_params(trial)
        if params.get("booster") == "gblinear":
            return "a linear booster (gblinear): no trees tell which features its first round learned from"
        if params.get("max_depth") == 1:
            return "stumps (max_depth=1): every tree has one split, whatever the data"
        forest = num_parallel_tree(params)
        if forest > 1:
            return f"a random forest (num_parallel_tree={forest}): its first round is the whole model"
        rounds = continued_rounds(trial)
        if rounds:
            return (f"the run continues a model trained for {rounds} rounds before: its first round here is "
                    "not the model's first")
        return None

    def _network_run(self) -> bool:
        """Whether the run is a network's (PyTorch, TensorFlow, MXNet: its inputs are judged, see
        :mod:`~smdebug.rules.generic.input_leak`) rather than a booster's."""
        if self._network is None:
            framework = framework_of(self.base_trial)
            self._network = framework in ("pytorch", "tensorflow", "mxnet") or (
                framework is None and "inputs" in self.base_trial.collections())
        return self._network

    def _judge_inputs(self, step: int):
        """A network's run: a column of its 2-D inputs that is the label, judged on the rows saved so far."""
        trial = self.base_trial
        inputs = sorted(members(trial, INPUTS))
        labels = set(members(trial, LABELS))
        # (a loss module's target, its second argument: the hooks keep only classification targets as labels)
        labels.update(n for n in members(trial, LOSS_INPUTS) if n.endswith("_input_1"))
        labels = sorted(labels)
        looking_for("collections 'inputs' and 'labels' or 'loss_inputs' (the model's inputs and its loss's targets, "
                    "saved at the same steps)", inputs + labels)
        if not inputs or not labels:
            self.not_evaluated("needs the model's inputs and its loss's targets saved at the same steps (the "
                               "inputs and labels or loss_inputs collections: Hook.recommended saves them)")
            return False
        last = trial.loaded_all_steps and step >= trial.last_complete_step
        # (each tensor read once per step, and a bounded number of them: a run of a thousand inputs and a thousand
        # targets would otherwise be read a million times at every step)
        inputs, labels = inputs[:MAX_TENSORS], labels[:MAX_TENSORS]
        values: Dict[str, object] = {}

        def saved(name: str):
            if name not in values:
                values[name] = _saved_value(trial, name, step) if trial.has_tensor(name) else None
            return values[name]

        for i, l in itertools.product(inputs, labels):
            rows = self._rows.get((i, l))
            if rows is None:
                rows = self._rows[(i, l)] = SavedRows(i, l)
            if rows.rows < MAX_ROWS:
                x = saved(i)
                rows.add(x, saved(l) if x is not None else None)
            if rows.due(last):
                judged, leak = rows.judge()
                if judged:
                    # (on the rows of earlier steps too: the run's last step, judged for what came before it,
                    # may save no inputs -- a tapered schedule's -- and judged nothing it read; probe 18a F5)
                    self.mark_evaluated(i, l)
                self._inputs_judged = self._inputs_judged or judged
                if leak is not None:
                    return (f"column {leak.column} of {terminal_safe(clipped(i, 100))} {leak.said}: a feature computed "
                            f"from the label ({terminal_safe(clipped(l, 100))}) lets the model read the answer from its "
                            "input, and it will not be there when the model is used (is the target, or a copy of the "
                            "class, among the features? check how the feature table was built)")
        if self._inputs_judged:
            return False
        tables = [r for r in self._rows.values() if r.not_a_table is None and r.rows]
        if not tables:
            said = "; ".join(sorted({r.not_a_table for r in self._rows.values() if r.not_a_table})) or \
                "no step saved both the inputs and the labels yet"
            if any(r.not_a_table for r in self._rows.values()):
                self.not_applicable(f"a leaked column is looked for in a table of features (2-D floating-point "
                                    f"inputs, one target per row): {said}")
            else:
                self.not_evaluated(said)
            return False
        needs = max(tables, key=lambda r: r.rows).needs()
        if last:
            self.not_applicable(f"too little data: {needs}, and the run has ended")
        else:
            self.not_evaluated(needs)
        return False

    def invoke_at_step(self, step):
        if self._network_run():
            return self._judge_inputs(step)
        same = self._same_rows(step)
        if same:
            return same
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
        if self._regression is not None and self._several_targets():
            return False
        if self._first_split is None:
            self._first_split = self._first_splitting_round(step)
            if self._first_split is None:
                return False
        labels, predictions = value_at(trial, LABELS, step), value_at(trial, PREDICTIONS, step)
        if labels is None or predictions is None:
            if step == self._first_split[0]:
                self._judged = True
                self._say("not evaluated", f"judges the predictions of round {step}, the first whose trees split; "
                                           f"the run saved {'no labels' if labels is None else 'no predictions'} "
                                           "at that step")
            elif self._waiting is not None:
                self.not_applicable(self._waiting)  # (the verdict keeps the last step's word)
            return False
        return self._judge(np.asarray(labels), np.asarray(predictions), step)

    def _same_rows(self, step: int) -> Optional[str]:
        """At the last step of a finished run: two evaluation sets whose same metric was equal at every round saved
        for both (at least MIN_SAME_ROUNDS), as a finding; None otherwise."""
        trial = self.base_trial
        if self._same_checked or not trial.loaded_all_steps or step != trial.last_step():
            return None
        self._same_checked = True
        by_metric: Dict[str, List[str]] = defaultdict(list)
        for name in select_tensors(trial, [METRICS], []):
            data, sep, metric = name.partition("-")
            if sep and data and metric:
                by_metric[metric].append(name)
        for metric, names in sorted(by_metric.items()):
            curves = {n: self._curve(n) for n in sorted(names)[:8]}  # (a handful of sets; a hostile run: bounded)
            for a, b in itertools.combinations(curves, 2):
                rounds = sorted(set(curves[a]) & set(curves[b]))
                if len(rounds) >= MIN_SAME_ROUNDS and all(curves[a][r] == curves[b][r] for r in rounds):
                    self.mark_evaluated()
                    return (f"{terminal_safe(clipped(a, 100))} and {terminal_safe(clipped(b, 100))} are equal at every "
                            f"one of the {len(rounds)} rounds saved for both (rounds {rounds[0]}-{rounds[-1]}): the "
                            f"two evaluation sets hold the same rows. Is the validation set the training set (or "
                            f"was the model trained on the validation set)? A model judged on rows it was trained "
                            f"on looks better than it is")
        return None

    def _curve(self, name: str) -> Dict[int, float]:
        """The metric's value at each round it was saved (global steps), finite scalars only."""
        out: Dict[int, float] = {}
        tensor = self.base_trial.tensor(name)
        for s in tensor.steps():
            value = value_at(self.base_trial, name, s)
            if value is not None and np.size(value) == 1 and np.isfinite(value).all():
                out[s] = float(np.asarray(value).ravel()[0])
        return out

    def _several_targets(self) -> bool:
        """A regression of several targets (labels of more than one column): said not applicable, True."""
        steps = self.base_trial.tensor(LABELS).steps()
        labels = value_at(self.base_trial, LABELS, steps[0]) if steps else None
        if labels is None or labels.ndim < 2 or labels.size == labels.shape[0]:
            return False
        self._judged = True
        self._say("not applicable", f"the labels have {labels.shape[1] if labels.ndim == 2 else labels.shape[1:]} "
                                    "columns: several targets, whose trees and predictions are no one ranking")
        return True

    def _first_splitting_round(self, step: int) -> Optional[Tuple[int, List[Tuple[object, str, float]]]]:
        """The first round whose trees split, and its splits ``(tree, feature, gain)``: step 0's trees, or those
        of the first later saved round that splits when every saved round before it is a single leaf (its model
        is then a first round's, on a constant). None (said why) while no saved round up to ``step`` split, or
        when the trees were not saved."""
        trial = self.base_trial
        found = [name for name in TREE_COLUMNS if trial.has_tensor(name)]
        looking_for("tensors 'trees/Tree', 'trees/Feature' and 'trees/Gain' (the trees collection)", found)
        saved = sorted(s for s in trial.tensor("trees/Feature").steps() if s <= step) if "trees/Feature" in found \
            else []
        if "trees/Feature" in found and "trees/Gain" not in found:
            self._judged = True
            self._say("not applicable", "the run's trees have no gain (XGBoost dumps multi-target trees, "
                                        "multi_strategy='multi_output_tree', without statistics): nothing tells "
                                        "which feature carries a round's splits")
            return None
        if "trees/Feature" not in found or "trees/Gain" not in found or (saved and saved[0] > 0):
            self._judged = True
            self._say("not evaluated", "needs the first round's trees (trees/Feature and trees/Gain at step 0: the "
                                       "trees collection) to tell which features its separation comes from")
            return None
        if not saved:
            self.not_evaluated(f"the run saved no trees up to step {step} yet")
            return None
        for round_ in saved:
            if round_ <= self._leaf_rounds:
                continue
            splits = self._splits(round_)
            if splits is None:
                return None
            if splits:
                if round_ > self._leaf_rounds + 1:  # the tapered schedule's gaps: 11-19, 21-39...
                    self._unsaved = f"{self._leaf_rounds + 1}-{round_ - 1}"
                return round_, splits
            self._leaf_rounds = round_
            self._leaf_saves += 1
        if self._leaf_rounds >= 0:
            self.not_applicable(f"none of the trees of the {self._leaf_saves} saved rounds up to round "
                                f"{self._leaf_rounds} has a split of positive gain: the model is one constant value "
                                "for every row, with no feature to leak")
        return None

    def _splits(self, round_: int) -> Optional[List[Tuple[object, str, float]]]:
        """``[(tree, feature, gain)]``: the splits of positive gain of the round's trees ([] when they are single
        leaves); None (said why) when the saved columns do not pair."""
        trial = self.base_trial
        trees, features, gains = (value_at(trial, name, round_) if trial.has_tensor(name) else None
                                  for name in TREE_COLUMNS)
        if (features is None or gains is None or features.size != gains.size or gains.dtype.kind not in "fiu"
                or (trees is not None and trees.size != gains.size)):
            self._judged = True
            self._say("not evaluated", f"needs the trees of round {round_} (trees/Feature and trees/Gain of the "
                                       "same length) to tell which features its separation comes from")
            return None
        tree_ids = trees.reshape(-1).tolist() if trees is not None else [0] * gains.size
        splits = []
        for tree, name, gain in zip(tree_ids, features.reshape(-1).tolist(), gains.reshape(-1).tolist()):
            name = name.decode("utf-8", "replace") if isinstance(name, bytes) else str(name)
            if name != "Leaf" and math.isfinite(gain) and gain > 0:
                splits.append((tree, name, float(gain)))
        return splits

    def _judge(self, labels: np.ndarray, predictions: np.ndarray, step: int):
        labels = labels.reshape(-1) if labels.ndim == 2 and 1 in labels.shape else labels
        self._judged = True  # unless a later round's predictions are needed (below)
        if self._regression is not None:
            return self._judge_values(labels, predictions, step)
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
            self._say("not evaluated", f"the predictions of round {step} are not all finite (ExplodingTensor's "
                                       "finding)")
            return False
        int_labels = labels.astype(np.int64)
        classes, counts = np.unique(int_labels, return_counts=True)
        if classes.size < 2 or classes.size > _MAX_CLASSES:
            self._say("not applicable", f"the held-out labels hold {classes.size} classes")
            return False
        # A class is judged when min_class_samples of its rows are held out: a few rows can be ranked or
        # classified perfectly by luck. A leak separates every class, so the well-sampled ones are enough.
        # The held-out rows are the same at every round: with too few, no round of this run can be judged.
        judged = [int(c) for c, n in zip(classes, counts) if n >= self.min_class_samples]
        if len(judged) < 2:
            class_counts = listed((f"{c}: {n}" for c, n in zip(classes, counts)), limit=8)
            self._say("not applicable", f"too few held-out rows to tell a leak from luck: fewer than two classes "
                                        f"have min_class_samples={self.min_class_samples} rows (class counts "
                                        f"{class_counts}), and a few rows can be separated perfectly by chance "
                                        "(a lower min_class_samples judges them anyway)")
            return False
        # a middle class's tree needs a split on each side of it; two classes, one split
        cuts = 1 if classes.size == 2 else 2
        first, splits = self._first_split
        feature, share = self._clean_split(splits, cuts)
        if share < self.split_share:
            return False
        if np.all(predictions == predictions.reshape(-1)[0]):
            # binary:hinge predicts classes, one for every row until the margins cross 0: the separation shows
            # at the first later round whose predictions differ
            self._judged = False
            self._waiting = (f"the predictions of the held-out rows are one value for every row from round {first} "
                             f"(the first whose trees split) to round {step}: nothing tells how well the model "
                             "separates the classes")
            self.not_applicable(self._waiting)
            return False
        feature = terminal_safe(clipped(feature, 64))
        tree = "the tree" if cuts == 1 else "each tree"
        on_feature = (f"{feature}: its split carries {share:.1%} of {tree}'s gain" if cuts == 1 else
                      f"{feature}: its two best splits carry at least {share:.1%} of {tree}'s gain")
        rounds = self._rounds(first, step)
        if classes.size == 2 and set(classes.tolist()) == {0, 1}:
            return self._judge_two_classes(int_labels, predictions, on_feature, rounds)
        return self._judge_classes(int_labels, predictions, classes, judged, on_feature, rounds)

    def _rounds(self, first: int, step: int) -> str:
        """Which rounds the finding judged: the first (0), else the first that split, and the round whose
        predictions were read when later."""
        said = "its first round" if first == 0 else f"its first round that split (round {first}; the rounds " \
                                                    "before it are single leaves)"
        if self._unsaved:
            said = (f"its first saved round that split (round {first}; the saved rounds before it are single "
                    f"leaves, rounds {self._unsaved} were not saved)")
        if step > first:
            said += f", with its predictions of round {step} (the first that differ between rows)"
        return said

    def _judge_values(self, labels: np.ndarray, predictions: np.ndarray, step: int):
        """A regression (values, counts): the first round's trees split on one feature alone, and its
        predictions already rank the held-out rows as their labels do. A leak's tree cuts the leaked column
        again and again to follow the target (every split on it), and its 2**depth leaf values order the rows
        almost exactly; a healthy first tree spreads its gain over the features that matter (0.23 to 0.82 of
        it on the best on the data sets tried) and ranks the rows roughly (rank correlation 0.5 to 0.85). A
        ranking, not an R^2: the first round's values are shrunk by eta and pass through the objective's link."""
        predictions = predictions.reshape(-1) if predictions.ndim == 2 and predictions.shape[1] == 1 else predictions
        if labels.ndim != 1 or predictions.ndim != 1:
            self._say("not applicable", f"the labels (shape {labels.shape}) or predictions (shape "
                                        f"{predictions.shape}) are not one value per row: several targets")
            return False
        if labels.dtype.kind not in "fiub" or predictions.dtype.kind not in "fiub" or labels.size != predictions.size:
            self._say("not evaluated", f"the predictions (shape {predictions.shape}) do not pair with the "
                                       f"{labels.size} labels")
            return False
        labels, predictions = labels.astype(np.float64), predictions.astype(np.float64)
        if not (np.all(np.isfinite(labels)) and np.all(np.isfinite(predictions))):
            self._say("not evaluated", f"the labels or predictions of round {step} are not all finite")
            return False
        # as many rows as two classes need: a few rows can be ranked perfectly by luck
        if labels.size < 2 * self.min_class_samples:
            self._say("not applicable", f"too few held-out rows to tell a leak from luck: {labels.size} < 2 * "
                                        f"min_class_samples={self.min_class_samples}")
            return False
        first, splits = self._first_split
        feature, share = self._clean_split(splits, None)  # (every split on the feature: a regression)
        if share < self.split_share:
            return False
        correlation = rank_correlation(predictions, labels)
        if correlation is None:
            self._judged = False
            self._waiting = (f"the predictions or labels of the held-out rows are one value for every row from round "
                             f"{first} to round {step}: nothing tells how well the model ranks them")
            self.not_applicable(self._waiting)
            return False
        if correlation < self.rank_correlation_threshold:
            return False
        feature = terminal_safe(clipped(feature, 64))
        return (f"after {self._rounds(first, step)} the model's predictions already rank the {labels.size} held-out "
                f"rows as their labels (rank correlation {correlation:.4f}, rank_correlation_threshold "
                f"{self.rank_correlation_threshold:g}; objective {self._regression}) from one feature, {feature}: "
                f"its splits carry {share:.1%} of the tree's gain (split_share {self.split_share:g}). A real task is "
                "rarely followed by one feature's cuts alone: check whether it is computed from the target (a leak: "
                "the target itself, a total that includes it, a measurement taken after the outcome)")

    @staticmethod
    def _clean_split(splits: List[Tuple[object, str, float]], cuts: Optional[int]) -> Tuple[str, float]:
        """How cleanly one feature splits the round's trees: ``(feature, share)``, the share of a tree's split
        gain carried by the ``cuts`` largest splits (None: all of them) on the feature of its best split, the
        lowest over the trees that split (a leak makes every class's tree clean)."""
        by_tree: Dict[object, List[Tuple[float, str]]] = defaultdict(list)
        for tree, name, gain in splits:
            by_tree[tree].append((gain, name))
        worst: Optional[Tuple[str, float]] = None
        for tree_splits in by_tree.values():
            feature = max(tree_splits)[1]
            best = sorted((gain for gain, name in tree_splits if name == feature), reverse=True)[:cuts]
            share = sum(best) / sum(gain for gain, _ in tree_splits)
            if worst is None or share < worst[1]:
                worst = (feature, share)
        return worst

    def _judge_two_classes(self, labels: np.ndarray, predictions: np.ndarray, on_feature: str, rounds: str):
        """Two classes: how well the first round ranks them (AUC), whatever its base score."""
        scores = positive_scores(predictions)
        if scores is None:
            self._say("not evaluated", f"the predictions (shape {predictions.shape}) are no score per row")
            return False
        auc = one_vs_rest_auc(scores, labels == 1)
        if auc < self.auc_threshold:
            return False
        return self._finding(labels.size, 2, f"AUC {auc:.4f}, auc_threshold {self.auc_threshold:g}", on_feature,
                             rounds)

    def _judge_classes(self, labels: np.ndarray, predictions: np.ndarray, classes: np.ndarray, judged: List[int],
                       on_feature: str, rounds: str):
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
        said = f"balanced accuracy {balanced:.4f}, accuracy_threshold {self.accuracy_threshold:g}"
        said += f"; classes with too few rows not judged: {listed(map(str, left_out), limit=8)}" if left_out else ""
        return self._finding(labels.size, classes.size, said, on_feature, rounds)

    def _finding(self, rows: int, classes: int, measure: str, on_feature: str, rounds: str) -> str:
        return (f"after {rounds} the model already separates the {rows} held-out rows' {classes} classes "
                f"({measure}) on one feature, {on_feature} (split_share {self.split_share:g}). A real task is "
                "rarely split by one feature: check whether it is computed from the label (a leak: the target, or "
                "an id sorted by it, among the features)")
