"""XGBoost held-out runs (scenarios ``hh_xgb_``/``bh_xgb_``): objectives and metrics unlike xgboost_runs.py's --
early stopping, hundreds of rounds, ranking (NDCG, where higher is better), several metrics per set (AUC next
to the log loss), absolute-error regression -- recorded with ``Hook.recommended(out_dir, ...)``
(hooks.heldout_xgboost_hook).
"""

from __future__ import annotations

import numpy as np

from . import heldout_data
from .hooks import heldout_xgboost_hook

#: XGBoost's metrics where larger is better (the label checks read 1 - value as the loss)
HIGHER_IS_BETTER = ("auc", "aucpr", "ndcg", "map", "pre")


def train(spec: dict, out_dir: str) -> dict:
    import xgboost as xgb

    seed = spec.get("seed", 0)
    bug = spec.get("bug", {})
    x_train, y_train, x_valid, y_valid = heldout_data.load({**spec["data"], "seed": seed})
    if bug.get("leak"):
        rng = np.random.default_rng(seed + 11)
        x_train = np.column_stack([x_train, y_train + bug["leak"] * rng.normal(size=len(y_train))]).astype(np.float32)
        x_valid = np.column_stack([x_valid, y_valid + bug["leak"] * rng.normal(size=len(y_valid))]).astype(np.float32)
    dtrain = xgb.DMatrix(x_train, label=y_train)
    dvalid = xgb.DMatrix(x_valid, label=y_valid)
    if spec["data"]["loader"] == "ranking":
        per_query = spec["data"].get("per_query", 10)
        dtrain.set_group([per_query] * (len(y_train) // per_query))
        dvalid.set_group([per_query] * (len(y_valid) // per_query))
    params = {"seed": seed, "nthread": 1, **spec["params"]}
    hook = heldout_xgboost_hook(out_dir, params, dtrain, dvalid, spec.get("hook", "recommended"))
    rounds = spec.get("rounds", 100)
    booster = xgb.train(params, dtrain, num_boost_round=rounds, evals=[(dtrain, "train"), (dvalid, "validation")],
                        callbacks=[hook], verbose_eval=False, early_stopping_rounds=spec.get("early_stopping"))
    hook.close()
    metrics = params.get("eval_metric", "rmse")
    metric = metrics if isinstance(metrics, str) else metrics[-1]  # XGBoost stops early on the last metric
    return {"framework": "xgboost", "train_steps": booster.num_boosted_rounds(),
            "train_metric": f"^train-{re_escape(metric)}$", "valid_metric": f"^validation-{re_escape(metric)}$",
            "metric_higher_is_better": metric.split("@")[0] in HIGHER_IS_BETTER,
            "task": _task(params["objective"]),
            "labels": "^labels$", "predictions": "^predictions$", "activation_inputs": {}, "activation_outputs": {},
            "weights": []}


def _task(objective: str) -> str:
    """``ranking`` (rank:*), ``regression`` (reg:*, count:*, survival:*) or ``classification``."""
    kind = objective.split(":")[0]
    return {"rank": "ranking", "reg": "regression", "count": "regression", "survival": "regression"}.get(
        kind, "classification")


def re_escape(text: str) -> str:
    import re

    return re.escape(text)
