"""Rules on XGBoost runs: trees grown too deep (or never split at all), importance concentrated on a few features.

They read what the XGBoost hook saves: ``trees/<column>`` (one 1-D array per column of the booster's tree
table for the tree(s) of the step's iteration: ``trees/Tree``, ``trees/Node``, ``trees/ID``, ``trees/Yes``,
``trees/No``...) and ``feature_importance/<type>/<feature>`` (one number per feature), and what the run tells
of the model (:func:`booster_params`: the booster, the objective, ``num_parallel_tree``).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from typing import Dict, List, Optional

import numpy as np

from smdebug.core import loss_inputs
from smdebug.exceptions import SMDebugValueError
from smdebug.rules.evaluation import looking_for
from smdebug.rules.generic.activation_rules import _check_regexes
from smdebug.rules.generic.selection import select_tensors, value_at
from smdebug.rules.params import as_float, as_int, as_list, in_range
from smdebug.rules.rule import Rule

_CHILD = re.compile(r"^\s*(?:\d+-)?(\d+)\s*$")

#: the XGBoost hook's record of the booster in the collections file's ``_meta``
#: (``smdebug.xgboost.hook.BOOSTER_META_KEY``; runs of the original smdebug have none)
BOOSTER_META_KEY = "xgboost_booster"
#: the XGBoost hook's mark of an ``xgboost.cv`` run in ``_meta`` (``smdebug.xgboost.hook.CV_META_KEY``:
#: ``{"nfold": 4}``)
CV_META_KEY = "xgboost_cv"
#: the XGBoost hook's record in ``_meta`` of the evaluation set its ``labels`` were saved for
#: (``smdebug.xgboost.hook.EVAL_DATA_META_KEY``)
LABELS_FROM_META_KEY = "xgboost_labels_from"
#: the parameters :func:`booster_params` reads from ``hyperparameters/<name>`` tensors when the run has no record
_HYPERPARAMETERS = ("booster", "objective", "num_parallel_tree")


def _run_meta(trial) -> dict:
    """The run's ``_meta`` record (the collections file's), {} for a trial that has none."""
    return getattr(getattr(trial, "collection_manager", None), "meta", None) or {}


def labels_from(trial) -> Optional[str]:
    """The evaluation set whose labels the XGBoost hook saved (``"validation_1"``), None when not recorded."""
    source = _run_meta(trial).get(LABELS_FROM_META_KEY)
    return source if isinstance(source, str) else None


def _hyperparameter(trial, name: str):
    """The value of ``hyperparameters/<name>`` (a 1-element tensor: a string or a number) at its first save,
    None when absent or not one value."""
    tensor_name = f"hyperparameters/{name}"
    if not trial.has_tensor(tensor_name):
        return None
    steps = trial.tensor(tensor_name).steps()
    value = value_at(trial, tensor_name, steps[0]) if steps else None
    if value is None or np.size(value) != 1:
        return None
    item = np.asarray(value).reshape(-1)[0]
    if isinstance(item, bytes):
        item = item.decode("utf-8", "replace")
    if isinstance(item, (str, np.str_)):
        return str(item).strip()
    try:
        number = float(item)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def booster_params(trial) -> Dict[str, object]:
    """What an XGBoost run tells of its model: the hook's record of the booster (``_meta.xgboost_booster``:
    ``{"booster": "gbtree", "objective": "binary:logistic", "num_parallel_tree": 1, ...}``, read from the
    booster's own configuration; ``"custom_objective": true`` when a callable objective was trained), else
    the ``booster``, ``objective`` and ``num_parallel_tree`` of the ``hyperparameters`` dict given to the hook
    (``hyperparameters/<name>`` tensors: how runs of the original smdebug can tell). {} when neither."""
    record = _run_meta(trial).get(BOOSTER_META_KEY)
    if isinstance(record, dict):
        return dict(record)
    found: Dict[str, object] = {}
    for name in _HYPERPARAMETERS:
        value = _hyperparameter(trial, name)
        if value is not None:
            found[name] = value
    return found


def continued_rounds(trial) -> int:
    """The rounds the model had before the run trained (``xgb_model=``: the XGBoost hook's record,
    ``initial_rounds`` of ``_meta.xgboost_booster``); 0 for a model trained from scratch, or when not recorded.
    Such a run's first round is not its model's first: what the earlier rounds learned is not in the run."""
    rounds = booster_params(trial).get("initial_rounds")
    return int(rounds) if isinstance(rounds, (int, float)) and not isinstance(rounds, bool) and rounds > 0 else 0


def no_booster(trial, what: str) -> Optional[str]:
    """Why a rule that judges a boosted model's ``what`` has nothing to judge in a run another framework wrote (a
    network has no trees and no feature importances): the rule named on a PyTorch run ended NotEvaluated, exit 3,
    as if data were missing. None for an XGBoost run, or a run that does not tell its framework."""
    from smdebug.core.run_info import framework_of

    framework = framework_of(trial)
    if framework not in _NETWORKS:
        return None  # (XGBoost's, or a framework of a third-party hook: it may save trees)
    return f"the run was written by {_NETWORKS[framework]}, and this rule judges the {what} of an XGBoost model"


#: the frameworks whose hooks train networks, by their recorded name
_NETWORKS = {"pytorch": "PyTorch", "tensorflow": "TensorFlow", "mxnet": "MXNet"}


def cross_validation(trial, missing: str) -> Optional[str]:
    """Why a rule has nothing to judge in an ``xgboost.cv`` run, which trains one booster per fold: the hook
    saves the metrics (their mean over the folds) and no single model's ``missing`` (trees, predictions...).
    None when the run is no cross-validation (the hook's mark, ``_meta.xgboost_cv``, is absent)."""
    mark = _run_meta(trial).get(CV_META_KEY)
    if not isinstance(mark, dict):
        return None
    folds = mark.get("nfold")
    folds = f" ({folds} folds)" if isinstance(folds, int) and not isinstance(folds, bool) else ""
    return (f"an xgboost.cv run{folds}: it trains one model per fold, and the XGBoost hook saves their mean "
            f"metrics, no single model's {missing}")


def num_parallel_tree(params: Dict[str, object]) -> int:
    """``num_parallel_tree`` of :func:`booster_params` (1 when absent or not a number)."""
    try:
        number = float(params.get("num_parallel_tree", 1))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 1
    return int(number) if math.isfinite(number) and number >= 1 else 1


#: objectives whose targets are values, ranks or times, not classes (``reg:logistic`` excepted: it is the
#: logistic loss of ``binary:logistic``, trained on 0/1 class labels as often as on fractions)
REGRESSION_OBJECTIVE_PREFIXES = ("reg:", "count:", "survival:", "rank:")


def regression_objective(trial) -> Optional[str]:
    """The objective of an XGBoost run when it says the targets are no classes (``reg:squarederror``,
    ``count:poisson``, ``survival:cox``, ``rank:pairwise``...; not ``reg:logistic``), else None (a
    classification objective, a callable one, or nothing recorded)."""
    params = booster_params(trial)
    objective = params.get("objective")
    if params.get("custom_objective") or not isinstance(objective, str):
        return None
    objective = objective.strip()
    if objective.startswith(REGRESSION_OBJECTIVE_PREFIXES) and objective != "reg:logistic":
        return objective
    return None


#: objectives whose predictions are values on the labels' scale, trained with a squared, absolute or Huber
#: error (``reg:linear`` is the old name of ``reg:squarederror``)
ERROR_OBJECTIVES = ("reg:squarederror", "reg:linear", "reg:squaredlogerror", "reg:absoluteerror",
                    "reg:pseudohubererror")


def objective_as_loss(trial) -> Optional[loss_inputs.LossInputs]:
    """An XGBoost run's objective as a loss of :mod:`smdebug.core.loss_inputs`: it compares ``predictions``
    with ``labels`` (what the hook saves of its validation data); it expects values on the labels' scale
    (:data:`ERROR_OBJECTIVES`), else nothing a rule can check (the booster applies a classification's link
    itself, and counts, times and ranks have objectives of their own). None when the run tells no objective."""
    params = booster_params(trial)
    objective = params.get("objective")
    if params.get("custom_objective"):
        objective = "custom objective"
    if not isinstance(objective, str) or not objective.strip():
        return None
    objective = objective.strip()
    expects = loss_inputs.REGRESSION if objective in ERROR_OBJECTIVES else loss_inputs.OTHER
    label = f"XGBoost objective {objective}"
    return loss_inputs.LossInputs(name=label, type=label, expects=expects, predictions="^predictions$",
                                  targets="^labels$")


def _child(value) -> Optional[int]:
    """A node id from a ``Yes``/``No`` cell: ``"3-7"`` (tree-node), ``"7"`` or 7; None for a leaf's empty
    cell (NaN, ``""``, ``"nan"``)."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        m = _CHILD.match(value)
        return int(m.group(1)) if m else None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return int(number) if math.isfinite(number) and number >= 0 else None


def _depth_from_links(nodes: List[int], yes: List[Optional[int]], no: List[Optional[int]]) -> Optional[int]:
    """Edges from the root to the deepest node, following the ``Yes``/``No`` links; None if they do not form
    a tree (no root)."""
    children: Dict[int, List[int]] = {}
    for node, y, n in zip(nodes, yes, no):
        children[node] = [c for c in (y, n) if c is not None]
    linked = {c for cs in children.values() for c in cs}
    roots = [n for n in children if n not in linked]
    if not roots:
        return None
    depth, level, seen = 0, sorted(roots)[:1], set()
    while level:
        seen.update(level)
        # (a set: nodes linking to the same child twice doubled the level at each depth -- a 40-node tree of
        # a damaged run took 3.4 GB, probe 17b F6)
        following = sorted({c for n in level for c in children.get(n, ()) if c not in seen})
        if not following:
            break
        depth, level = depth + 1, following
    return depth


def _depth_from_ids(nodes: List[int]) -> int:
    """Depth implied by the largest node id when ids follow the complete-binary-tree layout (root 0,
    children of ``k`` at ``2k+1`` and ``2k+2``): ``floor(log2(max id + 1))``."""
    largest = max(nodes)
    return int(math.floor(math.log2(largest + 1))) if largest >= 0 else 0


class TreeDepth(Rule):
    """Fires when a tree of the step is deeper than ``depth``.

    The depth of a tree is the number of edges from its root to its deepest node (a tree that is a single
    leaf has depth 0; XGBoost's ``max_depth`` counts the same way). From the saved columns at the step,
    grouped by ``trees/Tree`` (one tree if absent):

    * when ``trees/Depth`` (each node's depth, added by the XGBoost hook) was saved, the largest depth of
      the tree's nodes;
    * else when ``trees/Yes`` and ``trees/No`` were saved, the depth is found by following those links from
      the root (exact for any numbering of the nodes);
    * otherwise it is the original's estimate from the node ids alone,
      ``floor(log2(max(trees/Node) + 1))``, exact when the ids follow the complete-binary-tree layout (root 0,
      children of ``k`` at ``2k+1``, ``2k+2``) and an under-estimate otherwise.

    The condition is met when the deepest tree of the step has ``depth(tree) > depth``.

    What the run tells of the model (:func:`booster_params`: the XGBoost hook's record of the booster, else
    the ``hyperparameters`` given to the hook) can make the rule NotApplicable:

    * ``booster`` ``gblinear``: a linear model builds no trees;
    * ``num_parallel_tree > 1``: a random forest (or boosted forests). A forest grows deep, decorrelated
      trees on purpose (subsampled rows and columns) and reduces their variance by averaging them, not by
      keeping each tree shallow, so the depth limit of a boosted tree says nothing about it.

    It also fires, once, on a finished run whose trees never split: every tree of every saved round a single
    leaf (depth 0), over a run of at least ``leaf_rounds`` rounds. Such a model predicts one value for every
    row whatever its features (a constant), however its metric moved: the leaves only move that constant. A
    healthy booster splits in its first rounds (its later rounds may be leaves once it has converged, which is
    no finding); one that never does has a child-weight bar no child reaches (``min_child_weight`` against
    objectives with tiny hessians, ``reg:squaredlogerror`` or ``reg:pseudohubererror`` far from the labels,
    tiny sample weights), a ``gamma`` above every split's gain, or a start (``base_score``) far from the
    labels. Not judged so for a run that continues a trained model (its earlier trees split).

    :param depth: largest allowed tree depth (default 8; the original's 4 fired on XGBoost's own default
        ``max_depth`` of 6. Trees deep enough to memorise the data reach 10 and more).
    :param leaf_rounds: the rounds a finished run must have trained for its never-split trees to be reported
        (default 10; 0 turns that test off).
    """

    def __init__(self, base_trial, depth="8", leaf_rounds="10", other_trials=None, action_str=None):
        super().__init__(base_trial, other_trials=other_trials, action_str=action_str)
        self.depth = as_int(self.rule_name, "depth", depth, minimum=0)
        self.leaf_rounds = as_int(self.rule_name, "leaf_rounds", leaf_rounds, minimum=0)
        self._warned = False
        #: the saved rounds whose trees are all single leaves, until one splits (None from then on)
        self._leaf_steps: Optional[List[int]] = []

    def _column(self, column: str, step: int, length: int):
        name = f"trees/{column}"
        if not self.base_trial.has_tensor(name):
            return None
        value = value_at(self.base_trial, name, step)
        if value is None or value.size != length:
            return None
        return value.reshape(-1).tolist()

    def tree_depths(self, step: int) -> Optional[Dict[int, int]]:
        """{tree index: depth} of the trees saved at ``step`` (None if none were)."""
        has_nodes = self.base_trial.has_tensor("trees/Node")
        looking_for("tensor 'trees/Node' (the trees collection)", ["trees/Node"] if has_nodes else [])
        if not has_nodes:
            if not self._warned:
                self._warned = True
                # (the verdict says it: NotEvaluated, looking for trees/Node)
                self.logger.debug("%s: the run has no trees/Node tensor (save the trees collection)",
                                  self.rule_name)
            return None
        node_value = value_at(self.base_trial, "trees/Node", step)
        if node_value is None or node_value.size == 0:
            return None
        ids = np.asarray(node_value, dtype=np.float64).reshape(-1)
        if not (np.all(np.isfinite(ids)) and ids.min() >= 0 and ids.max() < 2 ** 31):
            # (a damaged or forged run: int(NaN) failed deep inside as "cannot convert float NaN to integer")
            self._warn_bad_trees(step, "trees/Node holds values that are no node ids (not finite, negative or "
                                       "beyond 2**31)")
            return None
        nodes = [int(n) for n in ids]
        trees = self._column("Tree", step, len(nodes)) or [0] * len(nodes)
        node_depths = self._column("Depth", step, len(nodes))
        yes, no = self._column("Yes", step, len(nodes)), self._column("No", step, len(nodes))
        rows = defaultdict(list)
        for i, tree in enumerate(trees):
            rows[int(float(tree))].append(i)
        depths = {}
        for tree, idx in sorted(rows.items()):
            tree_nodes = [nodes[i] for i in idx]
            depth = None
            if node_depths is not None:
                # (a node's depth is below the tree's node count: a stored depth of 2**62 for a 3-node tree, or
                # NaN, is damage, and the depth is found from the links or the ids instead)
                known = [int(node_depths[i]) for i in idx
                         if math.isfinite(float(node_depths[i])) and 0 <= node_depths[i] < len(idx)]
                depth = max(known) if known else None
            if depth is None and yes is not None and no is not None:
                depth = _depth_from_links(tree_nodes, [_child(yes[i]) for i in idx], [_child(no[i]) for i in idx])
            depths[tree] = depth if depth is not None else _depth_from_ids(tree_nodes)
        return depths

    def _warn_bad_trees(self, step: int, what: str) -> None:
        """Say once that the trees saved at ``step`` cannot be read (their step is not judged)."""
        if not self.__dict__.get("_said_bad_trees"):
            self._said_bad_trees = True
            self.logger.warning("%s: the trees saved at step %d are not judged: %s", self.rule_name, step, what)
            self.caveat(f"the trees saved at step {step} were not judged: {what}")

    def _not_applicable(self) -> Optional[str]:
        """Why the run's model is not one this rule judges (None when it is, or nothing tells)."""
        if not self.base_trial.has_tensor("trees/Node"):
            why = cross_validation(self.base_trial, "trees") or no_booster(self.base_trial, "trees")
            if why is not None:
                return why
        params = booster_params(self.base_trial)
        if params.get("booster") == "gblinear":
            return "the booster builds no trees: gblinear"
        forest = num_parallel_tree(params)
        if forest > 1:
            return (f"a random forest (num_parallel_tree={forest}): its trees are grown deep on purpose and "
                    "averaged, so their depth is no sign of overfitting")
        return None

    def invoke_at_step(self, step):
        reason = self._not_applicable()
        if reason is not None:
            self.not_applicable(reason)
            return False
        depths = self.tree_depths(step)
        if not depths:
            return False
        tree, deepest = max(depths.items(), key=lambda item: (item[1], -item[0]))
        if deepest > self.depth:
            return f"tree {tree} has depth {deepest} > depth {self.depth}"
        return self._never_split(step, deepest)

    def _never_split(self, step: int, deepest: int):
        """The finding on a finished run none of whose saved trees split, at its last saved round; False
        otherwise."""
        if self._leaf_steps is None:
            return False
        if deepest > 0:
            self._leaf_steps = None
            return False
        self._leaf_steps.append(step)
        trial = self.base_trial
        if (not self.leaf_rounds or not trial.loaded_all_steps or step != trial.tensor("trees/Node").steps()[-1]):
            return False
        rounds = max([step, *trial.steps()]) + 1  # (the trees' schedule may end before the run's last round)
        if rounds < self.leaf_rounds:
            return False
        if continued_rounds(trial):
            return False  # a continued model: its earlier trees may split, the new ones only add constants
        params = booster_params(trial)
        saved = self._leaf_steps
        where = f"rounds {saved[0]}-{saved[-1]}" if len(saved) > 1 else f"round {saved[0]}"
        objective = params.get("objective")
        objective = f" ({objective})" if isinstance(objective, str) and objective else ""
        predicts = ("the model predicts one value for every row whatever its features" if self._constant_predictions()
                    else "the model uses none of its features (its predictions differ between rows only by what "
                         "was given them, a base_margin)")
        return (f"the booster{objective} never split: every tree of the {len(saved)} saved rounds ({where}; "
                f"{rounds} rounds trained) is a single leaf, so {predicts}{self._cover(saved)}. Check "
                f"{_never_split_causes(params, self._labels_median())}")

    def _constant_predictions(self) -> bool:
        """Whether the last saved ``predictions`` (the held-out rows') are one value, or were not saved."""
        trial = self.base_trial
        steps = trial.tensor("predictions").steps() if trial.has_tensor("predictions") else []
        value = value_at(trial, "predictions", steps[-1]) if steps else None
        if value is None or value.size == 0 or value.dtype.kind not in "fiub":
            return True
        rows = np.asarray(value, dtype=np.float64).reshape(value.shape[0], -1)
        return bool(np.all(rows == rows[:1]))

    def _labels_median(self) -> Optional[float]:
        """The median of the last saved ``labels`` (the XGBoost hook's held-out rows), None when absent."""
        trial = self.base_trial
        if not trial.has_tensor("labels"):
            return None
        steps = trial.tensor("labels").steps()
        value = value_at(trial, "labels", steps[-1]) if steps else None
        if value is None or value.size == 0 or value.dtype.kind not in "fiub":
            return None
        median = float(np.median(np.asarray(value, dtype=np.float64)))
        return median if math.isfinite(median) else None

    def _cover(self, steps: List[int]) -> str:
        """``" (the root's cover, ... 4601 at round 0, 4.7 at round 320)"``: the training rows' summed hessian,
        what min_child_weight bars each child by; "" when the run did not save ``trees/Cover``."""
        if not self.base_trial.has_tensor("trees/Cover"):
            return ""
        said = []
        for step in dict.fromkeys((steps[0], steps[-1])):
            value = value_at(self.base_trial, "trees/Cover", step)
            if value is None or value.size == 0 or value.dtype.kind not in "fiu":
                continue
            said.append(f"{float(np.asarray(value, dtype=np.float64).reshape(-1)[0]):.4g} at round {step}")
        return (f" (the first tree's cover, the training rows' summed hessian: {', '.join(said)})" if said
                else "")


def _never_split_causes(params: Dict[str, object], labels_median: Optional[float]) -> str:
    """What keeps a booster from splitting, with the run's values where the XGBoost hook recorded them."""
    def value(key: str) -> str:
        number = params.get(key)
        return f" ({number:.4g})" if isinstance(number, (int, float)) and not isinstance(number, bool) else ""

    labels = f" (the held-out labels' median is {labels_median:.4g})" if labels_median is not None else ""
    return (f"min_child_weight{value('min_child_weight')} against that hessian: no child reaches it when the "
            f"hessians are tiny (reg:squaredlogerror or reg:pseudohubererror predicting far from the labels, tiny "
            f"sample weights); gamma{value('gamma')} against the splits' gain; base_score{value('base_score')} "
            f"against the labels{labels}")


class FeatureImportanceOverweight(Rule):
    """Fires when a few features carry almost all of the model's importance.

    The features are the tensors matching ``tensor_regex`` (``re.search``; e.g.
    ``feature_importance/weight/f0``...), each holding one number. At a step where at least one of them was
    saved (a feature known from other steps but absent at this one counts as 0: XGBoost leaves unused
    features out)::

        top = (sum of the nfeatures largest importances) / (sum of all importances)

    The condition is met when ``top > threshold``. With ``nfeatures`` or fewer known features ``top`` is 1,
    so the rule fires whenever ``threshold < 1``: a model using that few features is what it looks for.
    Negative values count as 0.

    :param threshold: largest allowed share of the top features (default 0.8).
    :param nfeatures: how many of the largest shares to add up (default 3).
    :param tensor_regex: comma-separated regexes of the importance tensors (default
        ``".*feature_importance/weight"``).
    """

    def __init__(self, base_trial, threshold="0.8", nfeatures="3", tensor_regex=".*feature_importance/weight",
                 other_trials=None, action_str=None):
        super().__init__(base_trial, other_trials=other_trials, action_str=action_str)
        rule = self.rule_name
        self.threshold = in_range(rule, "threshold", as_float(rule, "threshold", threshold), 0, 1)
        self.nfeatures = as_int(rule, "nfeatures", nfeatures, minimum=1)
        self.tensor_regex = as_list(rule, "tensor_regex", tensor_regex)
        if not self.tensor_regex:
            raise SMDebugValueError(f"{rule}: tensor_regex is required")
        _check_regexes(rule, "tensor_regex", self.tensor_regex)

    def importances(self, step: int) -> Optional[Dict[str, float]]:
        """{tensor name: importance} at ``step`` (None if none was saved there or all are 0)."""
        values, saved = {}, False
        for name in select_tensors(self.base_trial, [], self.tensor_regex):
            value = value_at(self.base_trial, name, step)
            if value is None or value.size != 1 or value.dtype.kind not in "fiub":
                values[name] = 0.0
                continue
            saved = True
            values[name] = max(float(np.asarray(value, dtype=np.float64).reshape(-1)[0]), 0.0)
        if not saved or not sum(values.values()) > 0:
            return None
        return values

    def invoke_at_step(self, step):
        values = self.importances(step)
        why = None
        if values is None and not select_tensors(self.base_trial, [], self.tensor_regex):
            why = (cross_validation(self.base_trial, "feature importances")
                   or no_booster(self.base_trial, "feature importances"))
        if why is not None:
            self.not_applicable(why)
            return False
        if values is None:
            self.not_evaluated("judges at steps where a non-zero feature importance was saved")
            return False
        total = sum(values.values())
        ranked = sorted(values.items(), key=lambda item: (-item[1], item[0]))[: self.nfeatures]
        top = sum(v for _, v in ranked) / total
        if top > self.threshold:
            listed = ", ".join(f"{name.rsplit('/', 1)[-1]} {v / total:.3g}" for name, v in ranked)
            return (f"the {len(ranked)} most important of {len(values)} features carry {top:.4g} of the importance "
                    f"({listed}) > threshold {self.threshold:g}")
        return False
