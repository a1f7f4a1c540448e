"""The XGBoost hook: a training callback (``xgboost.train(..., callbacks=[hook])``).

One step is one boosting iteration, numbered as XGBoost numbers it for the callbacks (``epoch``, from 0
in every ``xgboost.train`` call, also when it continues an ``xgb_model``), in mode GLOBAL unless
``set_mode`` says otherwise. At every iteration where something is due the hook saves, as the collections ask:

* ``hyperparameters/<name>``: the ``hyperparameters`` dict given to the hook (at step 0 only, unless
  the collection has its own save config);
* ``<evals name>-<metric>`` (``train-rmse``, ``validation_0-logloss``): the latest value of each
  evaluation metric (``metrics``; those that are losses also in ``losses``);
* ``predictions`` / ``labels``: the model's predictions on ``validation_data`` and its labels; without
  ``validation_data``, on the last data set of ``xgboost.train``'s ``evals`` that is not the training data
  (the scikit-learn estimator's ``eval_set``: ``validation_1`` of ``[(X_train, y_train), (X_val, y_val)]``;
  its name is recorded in ``_meta.xgboost_labels_from``).
  Both are also saved after the last round when their schedule skipped it (the rules judge the trained
  model on them);
* ``feature_importance/<type>/<feature>``: ``get_score(importance_type)`` divided by its sum over the
  features, for weight, gain, cover, total_gain and total_cover (tree boosters);
* ``average_shap/<feature>``, ``full_shap/<feature>``, ``shap_bias``: from
  ``predict(train_data, pred_contribs=True)``: the mean of the feature's SHAP column over the rows; the
  whole SHAP matrix, ``(rows, features + 1)`` with the bias last, as smdebug 1.0.x saved it under every
  feature's name (written once per step: every name indexes the same record); and the mean of the bias
  (expected value) column;
* ``trees/<column>``: the trees built in this iteration as 1-D arrays, one per column of
  ``Booster.trees_to_dataframe()``, plus ``trees/Depth`` (each node's depth, the root's is 0). Trees
  XGBoost cannot dump with statistics (``multi_strategy="multi_output_tree"``) come without Gain and Cover.

Whatever the collections, the hook also records what kind of model is trained, from the booster's own
configuration, in the collections file (``_meta.xgboost_booster``, see :func:`booster_record`: the booster,
the objective, ``num_parallel_tree``...): the rules read it (a forest's deep trees, a regression's targets,
gblinear's absent trees). The original smdebug reads ``_meta`` as a whole and ignores the key. For a
classifier it also records the class weights the booster trains with (``_meta.class_weights``, see
:mod:`smdebug.core.class_weights`: ``scale_pos_weight`` for class 1, times each class's mean row weight in the
training DMatrix).

The run stays open when ``xgboost.train`` returns, so values saved after training
(``hook.save_scalar``) still land in it; it is marked as ended when the hook is closed (``hook.close()``,
or when the process exits). A second ``xgboost.train`` with the same hook records nothing: use a new hook
and ``out_dir`` per training run.

Never breaks training: an XGBoost call that fails for one kind of data (say, SHAP values of a model
type that has none) is logged once and that kind is skipped from then on; any other failure is logged
and the hook disables itself. Training goes on in both cases.
"""

from __future__ import annotations

import json
import math
from typing import Any, Dict, List, Mapping, Optional, Set, Tuple

import numpy as np
import xgboost as xgb
from xgboost.callback import TrainingCallback

from smdebug.core import class_weights, singleton
from smdebug.core.collection import CollectionKeys
from smdebug.core.hook import BaseHook, logger
from smdebug.core.modes import ModeKeys
from smdebug.core.reduction_config import ReductionConfig
from smdebug.core.save_config import SaveConfig
from smdebug.exceptions import InvalidConfigurationError
from smdebug.xgboost.collection import SHAP_BIAS, Collection, default_collections
from smdebug.xgboost.data import as_dmatrix

IMPORTANCE_TYPES = ("weight", "gain", "cover", "total_gain", "total_cover")
#: the columns of Booster.trees_to_dataframe() (XGBoost >= 1.5) and the one the hook adds
TREE_COLUMNS = ("Tree", "Node", "ID", "Feature", "Split", "Yes", "No", "Missing", "Gain", "Cover", "Category")
DEPTH_COLUMN = "Depth"
_TREE_ID_COLUMNS = ("ID", "Yes", "No", "Missing")  # "<tree>-<node>" strings

# What the hook saves, in the order it saves it; each kind fails (and is skipped) on its own.
_KINDS = ("hyperparameters", "metrics", "predictions", "labels", "feature_importance", "trees", "shap")


def _booster_kind(model) -> str:
    """"tree" (gbtree, dart), "linear" (gblinear), or "cv" (xgboost.cv's bundle of fold boosters)."""
    if not isinstance(model, xgb.Booster):
        return "cv"
    try:
        name = json.loads(model.save_config())["learner"]["gradient_booster"]["name"]
    except Exception:  # noqa: BLE001 - an unknown layout: assume trees, the common case
        return "tree"
    return "linear" if name == "gblinear" else "tree"


#: the key of the booster's record in the collections file's ``_meta``
BOOSTER_META_KEY = "xgboost_booster"
#: the key, in the booster's record, of the rounds the model had before this run trained (a continued model)
INITIAL_ROUNDS_KEY = "initial_rounds"
#: the key naming the evaluation data set predictions and labels were saved for (no validation_data given to the
#: hook, or validation_data that is one of the evals)
EVAL_DATA_META_KEY = "xgboost_labels_from"
#: the key saying the run is an ``xgboost.cv`` (``{"nfold": 4}``): the hook saved the metrics' mean over the
#: folds and nothing of a single model (no trees, predictions, importances or SHAP values), which the rules
#: that need those read as NotApplicable rather than as data the user forgot to save
CV_META_KEY = "xgboost_cv"
#: the training parameters kept in the record (as numbers), where the booster's configuration has them
_RECORDED_PARAMETERS = ("num_parallel_tree", "max_depth", "eta", "subsample", "colsample_bytree",
                        "colsample_bylevel", "colsample_bynode", "num_class", "min_child_weight", "gamma")


def _find_key(config, key: str):
    """The first value of ``key`` in a nested configuration (its place differs between XGBoost versions)."""
    stack = [config]
    while stack:
        node = stack.pop(0)
        if isinstance(node, dict):
            if key in node and not isinstance(node[key], (dict, list)):
                return node[key]
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return None


def _train_call(function: str = "train") -> Optional[Dict[str, Any]]:
    """The arguments of the ``xgboost.train`` call (or, with ``function="cv"``, the ``xgboost.cv`` call)
    running this callback (``dtrain``, ``evals``, ``obj``...: the frame's locals), or None when no such call
    is on the stack (a callback called some other way)."""
    import sys

    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == function and frame.f_globals.get("__name__") == "xgboost.training":
            return dict(frame.f_locals)
        frame = frame.f_back
    return None


def _custom_objective(call: Optional[Dict[str, Any]] = None) -> Optional[bool]:
    """Whether the ``xgboost.train`` call running this callback was given a custom objective (``obj=``; the
    scikit-learn API passes a callable ``objective`` the same way): XGBoost's configuration then still names
    its default objective, ``reg:squarederror``, whatever the callable computes. None when no
    ``xgboost.train`` call is found on the stack (nothing tells)."""
    call = call if call is not None else _train_call()
    if call is None:
        return None
    return call.get("obj") is not None


#: objectives trained on class ids, whose class weights (scale_pos_weight, the training rows' weights) are
#: recorded for ClassImbalance
_CLASS_OBJECTIVES = ("binary:", "multi:")


def _scale_pos_weight(model) -> Optional[float]:
    """The booster's ``scale_pos_weight`` (None when its configuration has none or it is not a number)."""
    try:
        value = float(_find_key(json.loads(model.save_config())["learner"], "scale_pos_weight"))
    except Exception:  # noqa: BLE001 - an unknown layout or no such parameter
        return None
    return value if math.isfinite(value) and value > 0 else None


def class_weights_of(model, objective: Optional[str], dtrain=None) -> Optional[Dict[int, float]]:
    """The effective weight of each class the booster trains with, for a classification objective
    (``binary:*``, ``multi:*``, ``reg:logistic``): each class's mean row weight in ``dtrain`` (the training
    DMatrix's ``weight``, when it has one per row and its labels are class ids), times ``scale_pos_weight``
    for class 1. None when there is nothing but weights of 1 (or the objective is not a classifier's)."""
    if not isinstance(objective, str) or not (objective.startswith(_CLASS_OBJECTIVES) or objective == "reg:logistic"):
        return None
    weights: Dict[int, float] = {}
    if dtrain is not None and isinstance(dtrain, xgb.DMatrix):
        row_weights = np.asarray(dtrain.get_weight(), dtype=np.float64)
        labels = np.asarray(dtrain.get_label(), dtype=np.float64)
        if row_weights.size and row_weights.size == labels.size and labels.ndim == 1 and np.all(
                np.isfinite(labels) & (labels >= 0) & (labels == np.round(labels))) and labels.max() < 100_000:
            ids = labels.astype(np.int64)
            sums, counts = np.bincount(ids, weights=row_weights), np.bincount(ids)
            weights = {int(c): float(sums[c] / counts[c]) for c in np.flatnonzero(counts)}
    spw = _scale_pos_weight(model) if not objective.startswith("multi:") else None
    if spw is not None and spw != 1.0:
        weights[1] = weights.get(1, 1.0) * spw
    if not weights or all(w == 1.0 for w in weights.values()):
        return None
    return weights


def booster_record(model, custom_objective: Optional[bool] = False) -> Optional[Dict[str, Any]]:
    """What kind of model ``model`` trains, from ``Booster.save_config()``: ``{"booster": "gbtree" | "dart" |
    "gblinear", "objective": "binary:logistic", "num_parallel_tree": 50, "max_depth": 12, "eta": 1.0,
    "subsample": 0.63, "min_child_weight": 1.0, "gamma": 0.0, "base_score": 0.5, ...}`` (plain JSON values;
    parameters the configuration lacks are left out). None for
    xgboost.cv's bundle of boosters, or a configuration that cannot be read. With ``custom_objective`` True
    (a callable objective) the record says ``"custom_objective": true``; with None (unknown) the configured
    objective is left out when it is XGBoost's default, which a callable objective leaves in place."""
    if not isinstance(model, xgb.Booster):
        return None
    try:
        config = json.loads(model.save_config())
        learner = config["learner"]
        booster = learner["gradient_booster"]
    except Exception:  # noqa: BLE001 - an unknown layout: no record
        return None
    record: Dict[str, Any] = {}
    name = booster.get("name") if isinstance(booster, dict) else None
    if isinstance(name, str):
        record["booster"] = name
    objective = _find_key(learner.get("learner_train_param", {}), "objective") or _find_key(
        learner.get("objective", {}), "name")
    if custom_objective:
        record["custom_objective"] = True
    if isinstance(objective, str) and objective and (custom_objective is False or objective != "reg:squarederror"):
        record["objective"] = objective
    for key in _RECORDED_PARAMETERS:
        value = _find_key(learner if key == "num_class" else booster, key)
        try:
            number = float(value)
        except (TypeError, ValueError):
            continue
        if math.isfinite(number):  # (float32 parameters: 0.3 is configured as 0.300000012)
            record[key] = int(number) if key in ("num_parallel_tree", "max_depth", "num_class") else float(
                f"{number:.7g}")
    base_score = _base_score(learner)
    if base_score is not None:
        record["base_score"] = base_score
    return record or None


def _base_score(learner) -> Optional[float]:
    """The model's base score (the prediction every row starts from, which XGBoost >= 2 estimates from the
    labels), when it is one number: ``"5E-1"``, or ``"[2.85E-1]"`` (XGBoost 3 writes a list, one per target).
    A rule reporting a booster that never split names it: a start far from the labels leaves some objectives'
    hessians (squaredlogerror, pseudohubererror) too small for any child to reach min_child_weight."""
    value = _find_key(learner.get("learner_model_param", {}) if isinstance(learner, dict) else {}, "base_score")
    if not isinstance(value, str):
        return None
    parts = [p for p in value.strip().strip("[]").split(",") if p.strip()]
    try:
        number = float(parts[0]) if len(parts) == 1 else None
    except ValueError:
        return None
    return float(f"{number:.7g}") if number is not None and math.isfinite(number) else None


def _boosted_rounds(model) -> int:
    """The rounds ``model`` holds (0 when it cannot tell)."""
    try:
        return int(model.num_boosted_rounds())
    except Exception:  # noqa: BLE001 - an old or unusual booster: unknown
        return 0


def _evaluation_data(evals, dtrain) -> Optional[Tuple[xgb.DMatrix, str]]:
    """``(DMatrix, name)`` of the ``xgboost.train`` call's ``evals`` that stands in for ``validation_data``:
    the last that is not the training data (the scikit-learn API names every ``eval_set`` entry
    ``validation_<i>``, the training set included). None when there is none (predicting the training data
    at every save could cost as much as the training)."""
    entries = []
    for entry in evals or ():
        if isinstance(entry, (tuple, list)) and len(entry) == 2 and isinstance(entry[0], xgb.DMatrix):
            entries.append((entry[0], str(entry[1])))

    def is_training(data) -> bool:
        if data is dtrain:
            return True
        if not isinstance(dtrain, xgb.DMatrix):
            return False
        try:
            return (data.num_row() == dtrain.num_row() and data.num_col() == dtrain.num_col()
                    and np.array_equal(data.get_label(), dtrain.get_label()))
        except Exception:  # noqa: BLE001 - cannot tell: held out
            return False

    held_out = [e for e in entries if not is_training(e[0])]
    return held_out[-1] if held_out else None


def _collective_world_size() -> int:
    """Workers in this process's XGBoost collective (1 when it is not distributed)."""
    try:
        import xgboost.collective as collective

        return collective.get_world_size() if collective.is_distributed() else 1
    except Exception:  # noqa: BLE001
        return 1


def _hyperparameter_array(value) -> Optional[np.ndarray]:
    """A hyperparameter's value as a tensor: numbers and strings as 1-element arrays, lists as 1-D
    arrays, anything else as its JSON text. None is not saved."""
    if value is None:
        return None
    if isinstance(value, (bool, int, float, str, np.generic)):
        return np.array([value])
    if isinstance(value, (list, tuple)):
        if not value:
            return None
        if all(isinstance(v, str) for v in value):
            return np.array(value, dtype=str)
        if all(isinstance(v, (bool, int, float, np.number, np.bool_)) for v in value):
            return np.asarray(value)
        return np.array([v if isinstance(v, str) else json.dumps(v, default=str) for v in value], dtype=str)
    return np.array([json.dumps(value, default=str, sort_keys=True)])


def _string_column(values) -> np.ndarray:
    out = []
    for v in values:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            out.append("")
        elif isinstance(v, (list, tuple, np.ndarray)):  # categories of a categorical split
            out.append(",".join(str(int(c)) if float(c).is_integer() else str(c) for c in v))
        else:
            out.append(str(v))
    return np.array(out, dtype=str)


def _node_depths(tree: np.ndarray, ids: np.ndarray, yes: np.ndarray, no: np.ndarray) -> np.ndarray:
    """Depth of each row's node (root 0), following the Yes/No links from each tree's root."""
    children = {i: (y, n) for i, y, n in zip(ids.tolist(), yes.tolist(), no.tolist())}
    depth: Dict[str, int] = {}
    for t in dict.fromkeys(tree.tolist()):
        stack = [(f"{t}-0", 0)]
        while stack:
            node, d = stack.pop()
            if node in depth or node not in children:
                continue
            depth[node] = d
            stack.extend((child, d + 1) for child in children[node] if child)
    return np.array([depth.get(i, -1) for i in ids.tolist()], dtype=np.int64)


def _renumber(ids: np.ndarray, offset: int) -> np.ndarray:
    """``"<tree>-<node>"`` with the tree number shifted by ``offset`` (empty strings stay empty)."""
    if offset == 0:
        return ids
    out = []
    for v in ids.tolist():
        tree, sep, node = v.partition("-")
        out.append(f"{int(tree) + offset}-{node}" if sep else v)
    return np.array(out, dtype=str)


def _dump_table(layer) -> Dict[str, list]:
    """The columns of ``trees_to_dataframe`` but Gain and Cover, from ``get_dump(with_stats=False)`` in JSON:
    for models whose trees XGBoost cannot dump with statistics (multi-target trees,
    ``multi_strategy="multi_output_tree"``). Node ids as in the dataframe: ``"<tree>-<node>"``."""
    columns: Dict[str, list] = {c: [] for c in ("Tree", "Node", "ID", "Feature", "Split", "Yes", "No", "Missing")}
    for tree, text in enumerate(layer.get_dump(with_stats=False, dump_format="json")):
        stack = [json.loads(text)]
        rows = []
        while stack:
            node = stack.pop()
            rows.append(node)
            stack.extend(node.get("children") or ())
        for node in sorted(rows, key=lambda n: int(n["nodeid"])):
            leaf = "children" not in node
            columns["Tree"].append(tree)
            columns["Node"].append(int(node["nodeid"]))
            columns["ID"].append(f"{tree}-{int(node['nodeid'])}")
            columns["Feature"].append("Leaf" if leaf else str(node.get("split", "")))
            columns["Split"].append(float("nan") if leaf else float(node.get("split_condition", float("nan"))))
            for column, key in (("Yes", "yes"), ("No", "no"), ("Missing", "missing")):
                columns[column].append("" if leaf or key not in node else f"{tree}-{int(node[key])}")
    return columns


def _trees_frame(layer):
    """``layer.trees_to_dataframe()``, or when XGBoost cannot dump the trees with statistics (multi-target
    trees) a plain dict of the columns it can give (:func:`_dump_table`)."""
    try:
        return layer.trees_to_dataframe()
    except xgb.core.XGBoostError as e:
        if "statistic" not in str(e):
            raise
        import pandas as pd

        return pd.DataFrame(_dump_table(layer))


def tree_table(layer, layer_index: int = 0) -> Dict[str, np.ndarray]:
    """The trees of ``layer`` (a one-iteration slice ``booster[i:i+1]``) as 1-D arrays, numbered as in
    the whole model: every iteration adds the same number of trees (classes x parallel trees). Trees that
    XGBoost cannot dump with statistics (multi-target trees) come without the Gain and Cover columns."""
    df = _trees_frame(layer)
    offset = layer_index * int(df["Tree"].nunique()) if len(df) else 0
    return _frame_columns(df, offset)


def layer_table(model, layer_index: int) -> Dict[str, np.ndarray]:
    """The trees of round ``layer_index`` of ``model``, as :func:`tree_table` gives them, read from the whole
    model's table: for a booster XGBoost will not slice (while ``process_type="update"`` refreshes it). Every
    round holds the same number of trees, so the round of tree ``t`` is ``t // trees per round``."""
    df = _trees_frame(model)
    rounds = model.num_boosted_rounds()
    if len(df) and rounds > 0:
        per_round = max(int(df["Tree"].nunique()) // rounds, 1)
        df = df[df["Tree"].to_numpy() // per_round == layer_index]
    return _frame_columns(df, 0)


def _frame_columns(df, offset: int) -> Dict[str, np.ndarray]:
    """The columns of a tree table as 1-D arrays, tree numbers shifted by ``offset``, with the Depth column."""
    table: Dict[str, np.ndarray] = {}
    for column in df.columns:
        series = df[column]
        if column in _TREE_ID_COLUMNS:
            table[column] = _renumber(_string_column(series.tolist()), offset)
        elif series.dtype.kind in "iufb":
            table[column] = series.to_numpy(copy=True)
        else:
            table[column] = _string_column(series.tolist())
    if "Tree" in table:
        table["Tree"] = table["Tree"].astype(np.int64) + offset
    if "Node" in table:
        table["Node"] = table["Node"].astype(np.int64)
    if all(c in table for c in ("Tree", "ID", "Yes", "No")):
        table[DEPTH_COLUMN] = _node_depths(table["Tree"], table["ID"], table["Yes"], table["No"])
    return table


def _check_hyperparameters(value) -> Optional[Dict[str, Any]]:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InvalidConfigurationError(f"hyperparameters must be a dict, got {type(value).__name__}")
    return {str(k): v for k, v in value.items()}


class Hook(TrainingCallback, BaseHook):
    """smdebug's XGBoost hook: pass it in ``callbacks=[hook]`` to ``xgboost.train`` or to a
    scikit-learn estimator (``XGBClassifier(callbacks=[hook])``)."""

    framework_name = "xgboost"
    default_include_collections = (CollectionKeys.METRICS,)
    default_save_interval = 10
    collection_class = Collection
    # A rule's stop signal ends training the XGBoost way: after_iteration returns True.
    on_stop = "flag"

    def __init__(
        self,
        out_dir: Optional[str] = None,
        export_tensorboard: bool = False,
        tensorboard_dir: Optional[str] = None,
        dry_run: bool = False,
        reduction_config=None,
        save_config=None,
        include_regex=None,
        include_collections=None,
        hyperparameters: Optional[Mapping[str, Any]] = None,
        train_data=None,
        validation_data=None,
        save_all: bool = False,
        include_workers: str = "one",
    ):
        # Validate the XGBoost-specific arguments before the core claims any resources.
        hyperparameters = _check_hyperparameters(hyperparameters)
        train = as_dmatrix(train_data, "train_data")
        validation = as_dmatrix(validation_data, "validation_data")
        TrainingCallback.__init__(self)
        BaseHook.__init__(self, **{k: v for k, v in locals().items() if k in BaseHook.ARGUMENTS})
        self._hyperparameters = hyperparameters
        self._train_data = train
        self._validation_data = validation
        self._booster = None  # "tree" | "linear" | "cv", known at the first callback
        self._skipped: Dict[str, str] = {}  # kind of data -> why it is no longer saved
        self._warned: Set[str] = set()
        self._distributed = False  # xgboost.collective running with several workers (set per training run)
        self._trained = False  # xgboost.train returned: later iterations (another train call) are not recorded
        #: the data of xgboost.train's evals used for predictions and labels without validation_data (its name)
        self._eval_data: Optional[Tuple[xgb.DMatrix, str]] = None
        #: the step at which predictions / labels were last saved (saved again after the last iteration)
        self._saved_at: Dict[str, int] = {}
        # Hyperparameters do not change during training: saved once, at step 0 (every xgboost.train call
        # starts there), unless the user (or the JSON configuration) gives the collection a schedule.
        self.collection_manager.get(CollectionKeys.HYPERPARAMETERS).save_config = SaveConfig(save_steps=[0], end_step=1)
        #: XGBoost refused to slice the booster (an update run): trees are read from the whole model's table
        self._trees_unsliceable = False
        # Trees are structure, not values to summarise: raw, whatever the hook's reduction_config says.
        self.collection_manager.get(CollectionKeys.TREES).reduction_config = ReductionConfig(save_raw_tensor=True)

    def default_collections(self) -> List[Collection]:
        return default_collections()

    # ------------------------------------------------------------------------------------------
    # data the hook needs (settable after create_from_json_file)
    # ------------------------------------------------------------------------------------------
    @property
    def hyperparameters(self) -> Optional[Dict[str, Any]]:
        return self._hyperparameters

    @hyperparameters.setter
    def hyperparameters(self, value) -> None:
        self._hyperparameters = _check_hyperparameters(value)

    @property
    def train_data(self) -> Optional[xgb.DMatrix]:
        """Rows for the SHAP collections: a DMatrix, or set a ``(path, content_type)`` tuple."""
        return self._train_data

    @train_data.setter
    def train_data(self, value) -> None:
        self._train_data = as_dmatrix(value, "train_data")

    @property
    def validation_data(self) -> Optional[xgb.DMatrix]:
        """Rows for ``predictions`` and ``labels``: a DMatrix, or set a ``(path, content_type)`` tuple."""
        return self._validation_data

    @validation_data.setter
    def validation_data(self, value) -> None:
        self._validation_data = as_dmatrix(value, "validation_data")

    # ------------------------------------------------------------------------------------------
    # copies: scikit-learn clones estimators (deepcopy) and pickles them with their callbacks
    # ------------------------------------------------------------------------------------------
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        # A hook owns a run directory and a writer thread: copies share it (GridSearchCV's clones
        # record into the same run; the first fit to finish closes it).
        return self

    def __reduce__(self):
        # A pickled estimator keeps an inactive placeholder, so trained models stay picklable.
        return (_inactive_hook, (self.out_dir,))

    # ------------------------------------------------------------------------------------------
    # the XGBoost callback
    # ------------------------------------------------------------------------------------------
    def before_training(self, model):
        if getattr(self, "_inactive", False):
            logger.warning("smdebug: this hook was restored from a pickle and records nothing; create a new "
                           "smdebug.xgboost.Hook for a new training run")
            return model
        # Decided for every hook, disabled or not: all workers' hooks must make the same collective calls.
        self._distributed = _collective_world_size() > 1
        if self._disabled:
            return model
        try:
            if self._closed or self._trained:
                self._warn_once("closed", "smdebug: this hook already recorded a training run in %s; it records "
                                "nothing of this one: use a new Hook (and out_dir) for each training run",
                                self.out_dir)
                return model
            self._booster = _booster_kind(model)
            self._record_booster(model)
        except Exception as e:  # noqa: BLE001 - never break training
            self._fail("before_training()", e)
        return model

    def _record_booster(self, model) -> None:
        """Keep the booster's record in the collections file's ``_meta`` (written with the collections), and
        the class weights it trains with (``_meta.class_weights``: scale_pos_weight, the training rows'
        weights); remember the data of the ``xgboost.train`` call's ``evals`` for the predictions and labels
        when no ``validation_data`` was given."""
        if self._booster == "cv":
            self._record_cross_validation(model)
            return
        call = _train_call()
        record = booster_record(model, _custom_objective(call) if call is not None else None)
        if record is not None:
            rounds = _boosted_rounds(model)
            if rounds:  # training continues a model (xgb_model=): its first round here is not its first
                record[INITIAL_ROUNDS_KEY] = rounds
            self.collection_manager.meta[BOOSTER_META_KEY] = record
        if call is None:
            return
        try:
            objective = record.get("objective") if record else None
            weights = class_weights_of(model, objective, call.get("dtrain"))
            if weights is not None:
                spw = _scale_pos_weight(model)
                dtrain = call.get("dtrain")
                rows = isinstance(dtrain, xgb.DMatrix) and dtrain.get_weight().size > 0
                source = " and ".join(
                    ([f"scale_pos_weight={spw:g}"] if spw not in (None, 1.0) and not objective.startswith("multi:")
                     else []) + (["the training DMatrix's weights"] if rows else []))
                class_weights.record_class_weights(self, weights, source or "XGBoost weights")
        except Exception as e:  # noqa: BLE001 - no record, training goes on
            logger.debug("smdebug: class weights of the booster not recorded (%s)", e)
        self._eval_data = _evaluation_data(call.get("evals"), call.get("dtrain"))
        # validation_data that is also one of the evals: which metrics are of the rows whose labels are saved
        name = next((str(e[1]) for e in call.get("evals") or () if isinstance(e, (tuple, list)) and len(e) == 2
                     and self._validation_data is not None and e[0] is self._validation_data
                     and e[0] is not call.get("dtrain")), None)
        if name is not None:
            self.collection_manager.meta[EVAL_DATA_META_KEY] = name

    def _record_cross_validation(self, model) -> None:
        """An ``xgboost.cv`` run: say so in ``_meta`` (with the number of folds), and keep the record of its
        folds' booster (they all train with the same parameters): the objective tells the rules what the
        metrics measure although no single model is saved."""
        folds = getattr(model, "cvfolds", None)
        self.collection_manager.meta[CV_META_KEY] = {"nfold": len(folds)} if isinstance(folds, list) else {}
        booster = getattr(folds[0], "bst", None) if isinstance(folds, list) and folds else None
        if isinstance(booster, xgb.Booster):
            call = _train_call("cv")
            record = booster_record(booster, _custom_objective(call) if call is not None else None)
            if record is not None:
                self.collection_manager.meta[BOOSTER_META_KEY] = record

    def after_iteration(self, model, epoch: int, evals_log) -> bool:
        if not self._disabled and not self._closed and not self._trained:
            try:
                self._after_iteration(model, int(epoch), evals_log)
            except Exception as e:  # noqa: BLE001 - never break training
                self._fail("after_iteration()", e)
        # True makes XGBoost end training, as its own early stopping does.
        stop = bool(getattr(self, "stop_requested", False))
        if self._distributed:
            stop = self._agree_on_stop(stop)
        return stop

    def _agree_on_stop(self, stop: bool) -> bool:
        """Stop every worker at the same iteration: workers poll the stop signal at their own moments, and
        a worker that leaves the ring early makes the others' next allreduce fail. One tiny allreduce per
        iteration, made by every worker's hook whatever its state (disabled ones too), settles it."""
        try:
            import xgboost.collective as collective

            agreed = collective.allreduce(np.array([1 if stop else 0], dtype=np.int32), collective.Op.MAX)
            return bool(agreed[0])
        except Exception as e:  # noqa: BLE001 - a failing communicator is XGBoost's to report
            self._warn_once("agree-stop", "smdebug: could not agree on stopping with the other workers (%s)", e)
            return stop

    def after_training(self, model):
        if not getattr(self, "_inactive", False) and not self._closed and not self._trained:
            # Everything saved so far is written now; the run stays open for values saved after training
            # (hook.save_scalar) and is marked ended at close().
            self._trained = True
            if not self._disabled:
                try:
                    self._save_trained_model(model)
                except Exception as e:  # noqa: BLE001 - an XGBoost call failed: the run keeps what it has
                    self._warn_once("trained-model", "smdebug: cannot save the trained model's predictions and "
                                    "labels (%s: %s)", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
            self._eval_data = None  # (no reference to the user's data once training is over)
            if not self._disabled:
                try:
                    self.flush()
                except Exception as e:  # noqa: BLE001 - never break training
                    self._fail("after_training()", e)
        return model

    def _save_trained_model(self, model) -> None:
        """Save ``predictions`` and ``labels`` at the last iteration's step when its schedule did not: rules
        judge the trained model on them (ClassImbalance's and Confusion's misprediction tests), and a tapered
        schedule's last save of a 100-round run is round 80. Only the collections the hook includes, and
        only for an iteration that was recorded (a single booster; the hook's worker writes)."""
        wanted = [k for k in ("predictions", "labels")
                  if any(c.name == k for c in self._included) and self._saved_at.get(k) != self.step
                  and k not in self._skipped]
        if (not wanted or self._booster in (None, "cv") or self.step < 0 or self._writer is None
                or not self._is_writer or self.dry_run):
            return
        with self._step_lock:
            if self._in_step:
                self._finish_step()
            if self._open_step is not None and self._open_step != self.step:
                self._close_open_step()
            # the last iteration's step again, with only these collections due (its other data is written)
            self._in_step = True
            self._wrote_this_step = self._open_step == self.step
            self._stretch = None
            self._due = self._intern_due(set(wanted))
        try:
            for kind in wanted:
                try:
                    getattr(self, "_save_" + kind)(model, self.step, {})
                except Exception as e:  # noqa: BLE001 - an XGBoost call failed for this kind of data
                    self._skip(kind, e)
        finally:
            with self._step_lock:
                if self._in_step:
                    self._finish_step()

    def _on_stop_requested(self, signal: dict) -> None:
        # Flag only (``stop_requested``); after_iteration returns True and XGBoost ends training.
        logger.warning("smdebug: ending XGBoost training after iteration %d (%s)", self.step, self.stop_reason)

    # ------------------------------------------------------------------------------------------
    # one iteration
    # ------------------------------------------------------------------------------------------
    def _after_iteration(self, model, epoch: int, evals_log) -> None:
        if self._booster is None:
            self._booster = _booster_kind(model)
            self._record_booster(model)
        # The step is XGBoost's iteration number: begin_step() adds one.
        self.step = epoch - 1
        self.mode_steps[self.mode] = epoch - 1
        self.begin_step()
        if self._disabled:
            return
        if self.is_writing:
            for kind in _KINDS:
                if kind in self._skipped:
                    continue
                try:
                    getattr(self, "_save_" + kind)(model, epoch, evals_log or {})
                except Exception as e:  # noqa: BLE001 - an XGBoost call failed for this kind of data
                    self._skip(kind, e)
                if self._disabled:
                    return
        self.end_step()

    def _skip(self, kind: str, exc: BaseException) -> None:
        self._skipped[kind] = f"{type(exc).__name__}: {exc}"
        what = kind.replace("_", " ")
        first_line = str(exc).splitlines()[0] if str(exc) else ""
        if isinstance(exc, xgb.core.XGBoostError):
            # XGBoost refusing a call for this model or training mode: its message says why; the user's
            # training is sound and a traceback into the hook would only suggest otherwise
            logger.warning("smdebug: cannot save %s: XGBoost refused (%s); the run goes on without them", what,
                           first_line)
            return
        # anything else is a fault of the hook: an error, with the traceback to report it
        logger.error("smdebug: cannot save %s (%s: %s); the hook goes on without it", what, type(exc).__name__,
                     first_line, exc_info=exc)

    def _any_due(self, names) -> bool:
        return any(self.is_due(n) for n in names)

    def _feature_names(self, model, count: Optional[int] = None) -> List[str]:
        names = getattr(model, "feature_names", None)
        if count is None:
            count = len(names) if names else model.num_features()
        if names and len(names) == count:
            return list(names)
        return [f"f{i}" for i in range(count)]

    def _needs_booster(self, kind: str) -> bool:
        if self._booster != "cv":
            return True
        self._warn_once("cv-" + kind, "smdebug: xgboost.cv has no single model: %s are not saved", kind)
        return False

    # --- the kinds of data ----------------------------------------------------------------------
    def _save_hyperparameters(self, model, epoch, evals_log) -> None:
        for name, value in (self._hyperparameters or {}).items():
            tname = "hyperparameters/" + name
            if self.is_due(tname):
                arr = _hyperparameter_array(value)
                if arr is not None:
                    self.record(tname, arr)

    def _save_metrics(self, model, epoch, evals_log) -> None:
        for data_name, metrics in evals_log.items():
            for metric, history in metrics.items():
                if not len(history):
                    continue
                name = f"{data_name}-{metric}"
                if not self.is_due(name):
                    continue
                value = history[-1]
                if isinstance(value, tuple):  # xgboost.cv: (mean, std) over the folds
                    value = value[0]
                self.record(name, np.array([float(value)]))

    def _labelled_data(self, kind: str) -> Optional[xgb.DMatrix]:
        """The rows predictions and labels are saved for: ``validation_data``, else the last data set of
        ``xgboost.train``'s ``evals`` (the estimator's ``eval_set``) that is not the training data. None
        (warned once) when there is none."""
        if self._validation_data is not None:
            return self._validation_data
        if self._booster == "cv":
            self._warn_once(kind, "smdebug: xgboost.cv has no single model: the %s collection is saved only for "
                            "the hook's validation_data", kind)
            return None
        if self._eval_data is not None:
            data, name = self._eval_data
            if "eval-data" not in self._warned:
                self._warned.add("eval-data")
                logger.info("smdebug: predictions and labels are saved for the evaluation data %r (no "
                            "validation_data given to the hook)", name)
                self.collection_manager.meta[EVAL_DATA_META_KEY] = name
            return data
        self._warn_once(kind, "smdebug: the %s collection needs the hook's validation_data, or a held-out "
                        "evaluation set (xgboost.train(evals=...), or eval_set of the scikit-learn estimator's fit)",
                        kind)
        return None

    def _save_predictions(self, model, epoch, evals_log) -> None:
        if not self.is_due("predictions") or not self._needs_booster("predictions"):
            return
        data = self._labelled_data("predictions")
        if data is None:
            return
        rounds = model.num_boosted_rounds()
        if self.record("predictions", model.predict(data, iteration_range=(0, rounds))):
            self._saved_at["predictions"] = self.step

    def _save_labels(self, model, epoch, evals_log) -> None:
        if not self.is_due("labels"):
            return
        data = self._labelled_data("labels")
        if data is None:
            return
        if self.record("labels", data.get_label()):
            self._saved_at["labels"] = self.step

    def _save_feature_importance(self, model, epoch, evals_log) -> None:
        if self._booster == "cv":
            if self._any_due(f"feature_importance/{t}/f0" for t in IMPORTANCE_TYPES):
                self._needs_booster("feature importances")
            return
        features = self._feature_names(model)
        for itype in IMPORTANCE_TYPES:
            prefix = f"feature_importance/{itype}/"
            if not self._any_due(prefix + f for f in features):
                continue
            if self._booster == "linear":
                self._warn_once("importance-linear", "smdebug: feature importance is saved for tree boosters only "
                                "(gblinear has no gain or cover, and its weights can be negative)")
                return
            scores = model.get_score(importance_type=itype)
            total = float(sum(scores.values()))
            if not total > 0:
                continue  # no split yet (or all-zero gains): nothing to normalise
            for feature, score in scores.items():
                if self.is_due(prefix + feature):
                    self.record(prefix + feature, np.array([score / total]))

    def _save_trees(self, model, epoch, evals_log) -> None:
        names = ["trees/" + c for c in TREE_COLUMNS + (DEPTH_COLUMN,)]
        if not self._any_due(names) or not self._needs_booster("trees"):
            return
        if self._booster == "linear":
            self._warn_once("trees-linear", "smdebug: gblinear builds no trees: the trees collection stays empty")
            return
        # The trees this iteration added (all classes, parallel trees): the model's last layer. Not
        # model[epoch]: a run continued from xgb_model counts epochs from 0 on top of the old rounds. In an
        # update run (process_type="update": refresh, prune) the model holds the rounds updated so far, the
        # last being this iteration's, but XGBoost refuses to slice a booster until the update is over: the
        # layer is then read from the whole model's table.
        last = model.num_boosted_rounds() - 1
        layer = None
        if not self._trees_unsliceable:
            try:
                layer = model[last : last + 1]
            except xgb.core.XGBoostError as e:
                self._trees_unsliceable = True
                logger.info("smdebug: XGBoost refuses to slice this booster during training (as while "
                            "process_type=\"update\" refreshes a model): the trees of each saved iteration are read "
                            "from the whole model")
                logger.debug("smdebug: XGBoost's refusal: %s", str(e).splitlines()[0] if str(e) else "")
        table = tree_table(layer, last) if layer is not None else layer_table(model, last)
        for column, values in table.items():
            if self.is_due("trees/" + column):
                self.record("trees/" + column, values)

    def _save_shap(self, model, epoch, evals_log) -> None:
        if self._booster == "cv":  # (the fold bundle has no features to name the due tensors by)
            if self.is_due(SHAP_BIAS) or self._any_due(f"{c}/f0" for c in ("average_shap", "full_shap")):
                self._needs_booster("SHAP values")
            return
        features = self._feature_names(model)
        want_full = self._any_due("full_shap/" + f for f in features)
        want_avg = self.is_due(SHAP_BIAS) or self._any_due("average_shap/" + f for f in features)
        if not (want_full or want_avg) or not self._needs_booster("SHAP values"):
            return
        if self._train_data is None:
            self._warn_once("shap", "smdebug: the average_shap and full_shap collections need the hook's train_data")
            return
        contribs = model.predict(self._train_data, pred_contribs=True, iteration_range=(0, model.num_boosted_rounds()))
        # (rows, features + 1), or (rows, outputs, features + 1) for multi-class / multi-output models;
        # the last column is the bias: the model's expected output, the same in every row.
        features = self._feature_names(model, contribs.shape[-1] - 1)
        if want_full:
            matrix = np.ascontiguousarray(contribs)
            first = None  # the name the matrix was recorded under: the other names index that record
            for feature in features:
                name = "full_shap/" + feature
                if not self.is_due(name) or (first is not None and self._record_same(name, first)):
                    continue
                if self.record(name, matrix) and first is None:
                    first = name
        for i, feature in enumerate(features):
            if want_avg and self.is_due("average_shap/" + feature):
                self.record("average_shap/" + feature, np.atleast_1d(contribs[..., i].mean(axis=0)))
        if want_avg and self.is_due(SHAP_BIAS):
            self.record(SHAP_BIAS, np.atleast_1d(contribs[..., -1].mean(axis=0)))


def _inactive_hook(out_dir: str) -> Hook:
    """What unpickling a Hook gives: an inert callback that records nothing and owns no files."""
    hook = Hook.__new__(Hook)
    hook.__dict__.update(
        _inactive=True, _disabled=True, _closed=True, _failure=None, out_dir=out_dir, stop_requested=False,
        stop_reason=None, step=Hook.init_step, mode=ModeKeys.GLOBAL, include_collections=[],
        _hyperparameters=None, _train_data=None, _validation_data=None, _distributed=False, _warned=set(),
        _trained=True,
    )
    return hook


def get_hook(json_config_path: Optional[str] = None, create_if_not_exists: bool = False) -> Optional[Hook]:
    """The process's XGBoost hook; with ``create_if_not_exists`` built from the JSON configuration
    (``SMDEBUG_CONFIG_FILE_PATH``). None when ``USE_SMDEBUG`` is false or no configuration exists."""
    return singleton.get_hook(Hook, json_config_path, create_if_not_exists)


set_hook = singleton.set_hook
del_hook = singleton.del_hook
