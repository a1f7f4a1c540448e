"""The XGBoost hook: a training callback (``xgboost.train(..., callbacks=[hook])``).

One step is one boosting iteration, numbered as XGBoost numbers it for the callbacks (``epoch``, from 0
in every ``xgboost.train`` call, also when it continues an ``xgb_model``), in mode GLOBAL unless
``set_mode`` says otherwise. At every iteration where something is due the hook saves, as the collections ask:

* ``hyperparameters/<name>``: the ``hyperparameters`` dict given to the hook (at step 0 only, unless
  the collection has its own save config);
* ``<evals name>-<metric>`` (``train-rmse``, ``validation_0-logloss``): the latest value of each
  evaluation metric (``metrics``; those that are losses also in ``losses``);
* ``predictions`` / ``labels``: the model's predictions on ``validation_data`` and its labels;
* ``feature_importance/<type>/<feature>``: ``get_score(importance_type)`` divided by its sum over the
  features, for weight, gain, cover, total_gain and total_cover (tree boosters);
* ``average_shap/<feature>``, ``full_shap/<feature>``, ``shap_bias``: from
  ``predict(train_data, pred_contribs=True)``: the mean of the feature's SHAP column over the rows; the
  whole SHAP matrix, ``(rows, features + 1)`` with the bias last, as smdebug 1.0.x saved it under every
  feature's name (written once per step: every name indexes the same record); and the mean of the bias
  (expected value) column;
* ``trees/<column>``: the trees built in this iteration as 1-D arrays, one per column of
  ``Booster.trees_to_dataframe()``, plus ``trees/Depth`` (each node's depth, the root's is 0).

Whatever the collections, the hook also records what kind of model is trained, from the booster's own
configuration, in the collections file (``_meta.xgboost_booster``, see :func:`booster_record`: the booster,
the objective, ``num_parallel_tree``...): the rules read it (a forest's deep trees, a regression's targets,
gblinear's absent trees). The original smdebug reads ``_meta`` as a whole and ignores the key.

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
from typing import Any, Dict, List, Mapping, Optional, Set

import numpy as np
import xgboost as xgb
from xgboost.callback import TrainingCallback

from smdebug.core import singleton
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
#: the training parameters kept in the record (as numbers), where the booster's configuration has them
_RECORDED_PARAMETERS = ("num_parallel_tree", "max_depth", "eta", "subsample", "colsample_bytree",
                        "colsample_bylevel", "colsample_bynode", "num_class")


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


def _custom_objective() -> Optional[bool]:
    """Whether the ``xgboost.train`` call running this callback was given a custom objective (``obj=``; the
    scikit-learn API passes a callable ``objective`` the same way): XGBoost's configuration then still names
    its default objective, ``reg:squarederror``, whatever the callable computes. None when no
    ``xgboost.train`` call is found on the stack (nothing tells)."""
    import sys

    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "train" and frame.f_globals.get("__name__") == "xgboost.training":
            return frame.f_locals.get("obj") is not None
        frame = frame.f_back
    return None


def booster_record(model, custom_objective: Optional[bool] = False) -> Optional[Dict[str, Any]]:
    """What kind of model ``model`` trains, from ``Booster.save_config()``: ``{"booster": "gbtree" | "dart" |
    "gblinear", "objective": "binary:logistic", "num_parallel_tree": 50, "max_depth": 12, "eta": 1.0,
    "subsample": 0.63, ...}`` (plain JSON values; parameters the configuration lacks are left out). None for
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
    return record or None


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


def tree_table(layer, layer_index: int = 0) -> Dict[str, np.ndarray]:
    """The trees of ``layer`` (a one-iteration slice ``booster[i:i+1]``) as 1-D arrays, numbered as in
    the whole model: every iteration adds the same number of trees (classes x parallel trees)."""
    df = layer.trees_to_dataframe()
    offset = layer_index * int(df["Tree"].nunique()) if len(df) else 0
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
        # Hyperparameters do not change during training: saved once, at step 0 (every xgboost.train call
        # starts there), unless the user (or the JSON configuration) gives the collection a schedule.
        self.collection_manager.get(CollectionKeys.HYPERPARAMETERS).save_config = SaveConfig(save_steps=[0], end_step=1)
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
        """Keep the booster's record in the collections file's ``_meta`` (written with the collections)."""
        record = booster_record(model, _custom_objective())
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
                    self.flush()
                except Exception as e:  # noqa: BLE001 - never break training
                    self._fail("after_training()", e)
        return model

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
        logger.error("smdebug: cannot save %s (%s: %s); the hook goes on without it", kind.replace("_", " "),
                     type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "", exc_info=exc)

    def _any_due(self, names) -> bool:
        return any(self.is_due(n) for n in names)

    def _feature_names(self, model, count: Optional[int] = None) -> List[str]:
        names = model.feature_names
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

    def _save_predictions(self, model, epoch, evals_log) -> None:
        if not self.is_due("predictions") or not self._needs_booster("predictions"):
            return
        if self._validation_data is None:
            self._warn_once("predictions", "smdebug: the predictions collection needs the hook's validation_data")
            return
        rounds = model.num_boosted_rounds()
        self.record("predictions", model.predict(self._validation_data, iteration_range=(0, rounds)))

    def _save_labels(self, model, epoch, evals_log) -> None:
        if not self.is_due("labels"):
            return
        if self._validation_data is None:
            self._warn_once("labels", "smdebug: the labels collection needs the hook's validation_data")
            return
        self.record("labels", self._validation_data.get_label())

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
        # model[epoch]: a run continued from xgb_model counts epochs from 0 on top of the old rounds.
        last = model.num_boosted_rounds() - 1
        table = tree_table(model[last : last + 1], last)
        for column, values in table.items():
            if self.is_due("trees/" + column):
                self.record("trees/" + column, values)

    def _save_shap(self, model, epoch, evals_log) -> None:
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
