"""XGBoost runs of the second held-out batch (``h2_xgb_``/``b2_xgb_``): tree methods hist and approx, the
dart booster, pairwise ranking with MAP, survival with the accelerated-failure-time objective, several
targets at once, a custom objective with its own metric, multi:softmax with early stopping -- recorded with
``Hook.recommended(out_dir, ...)`` (hooks.heldout2_xgboost_hook).

``spec["bug"]``: ``evals_reversed`` lists the validation set first and the training set last, so early
stopping watches the *training* metric (XGBoost stops on the last set of ``evals``) and never stops.
"""

from __future__ import annotations

import re

import numpy as np

from . import heldout2_data
from .hooks import heldout2_xgboost_hook
from .heldout_xgboost import HIGHER_IS_BETTER, _task


def _squared_log_objective(pred, dtrain):
    """Squared log error, as in XGBoost's custom-objective tutorial: gradient and hessian of
    1/2 (log1p(pred) - log1p(y))^2."""
    y = dtrain.get_label()
    pred = np.maximum(pred, -1 + 1e-6)
    grad = (np.log1p(pred) - np.log1p(y)) / (pred + 1)
    hess = np.maximum((-np.log1p(pred) + np.log1p(y) + 1) / (pred + 1) ** 2, 1e-6)
    return grad, hess


def _rmsle(pred, dmatrix):
    y = dmatrix.get_label()
    pred = np.maximum(pred, -1 + 1e-6)
    return "rmsle", float(np.sqrt(np.mean((np.log1p(pred) - np.log1p(y)) ** 2)))


def _dmatrix(xgb, x, y, spec):
    if spec["data"]["loader"] == "survival":
        d = xgb.DMatrix(x)
        d.set_float_info("label_lower_bound", y[:, 0])
        d.set_float_info("label_upper_bound", y[:, 1])
        return d
    d = xgb.DMatrix(x, label=y)
    if spec["data"]["loader"] in ("ranking", "clicks"):
        per_query = spec["data"].get("per_query", 10)
        d.set_group([per_query] * (len(y) // per_query))
    return d


def train(spec: dict, out_dir: str) -> dict:
    import xgboost as xgb

    seed = spec.get("seed", 0)
    bug = spec.get("bug", {})
    x_train, y_train, x_valid, y_valid = heldout2_data.load({**spec["data"], "seed": seed})
    if bug.get("row_id_leak"):
        # rows exported sorted by outcome, then numbered: the row number ends up among the features
        parts = []
        for x, y in ((x_train, y_train), (x_valid, y_valid)):
            order = np.argsort(y, kind="stable")
            parts += [np.column_stack([x[order], np.arange(len(y), dtype=np.float32) / len(y)]), y[order]]
        x_train, y_train, x_valid, y_valid = parts
    if spec.get("positive_targets"):  # prices/counts for the squared-log objective
        y_train, y_valid = np.exp(0.5 * y_train), np.exp(0.5 * y_valid)
    dtrain, dvalid = _dmatrix(xgb, x_train, y_train, spec), _dmatrix(xgb, x_valid, y_valid, spec)
    params = {"seed": seed, "nthread": 1, **spec["params"]}
    custom = spec.get("custom_objective")
    hook = heldout2_xgboost_hook(out_dir, params, dtrain, dvalid, spec.get("hook", "recommended"))
    evals = [(dtrain, "train"), (dvalid, "validation")]
    if bug.get("evals_reversed"):
        evals = evals[::-1]
    booster = xgb.train(params, dtrain, num_boost_round=spec.get("rounds", 100), evals=evals, callbacks=[hook],
                        verbose_eval=False, early_stopping_rounds=spec.get("early_stopping"),
                        obj=_squared_log_objective if custom else None, custom_metric=_rmsle if custom else None)
    hook.close()
    metrics = params.get("eval_metric", "rmse")
    metric = "rmsle" if custom else (metrics if isinstance(metrics, str) else metrics[-1])
    objective = params.get("objective", "reg:squarederror")
    task = "regression" if custom else _task(objective)
    return {"framework": "xgboost", "train_steps": booster.num_boosted_rounds(),
            "train_metric": f"^train-{re.escape(metric)}$", "valid_metric": f"^validation-{re.escape(metric)}$",
            "metric_higher_is_better": metric.split("@")[0] in HIGHER_IS_BETTER, "task": task,
            "labels": "^labels$", "predictions": "^predictions$", "activation_inputs": {}, "activation_outputs": {},
            "weights": [], "max_depth": params.get("max_depth", 6)}
