"""XGBoost runs: ``xgboost.train`` with a training and a validation set watched, the hook as a callback.

The run dict gives the data, the booster parameters, the number of rounds and the bug: ``leak`` adds a
column computed from the label (a target leak: the model leans on it alone), ``params`` carries the
mistaken hyperparameters (trees far too deep, a learning rate far too small) as they would be written.
"""

from __future__ import annotations

import numpy as np

from . import data as datasets
from .hooks import xgboost_hook


def train(spec: dict, out_dir: str) -> dict:
    import xgboost as xgb

    seed = spec.get("seed", 0)
    bug = spec.get("bug", {})
    x_train, y_train, x_valid, y_valid = datasets.load({**spec["data"], "seed": seed})
    if bug.get("leak"):
        # a column derived from the label slipped into the features (e.g. an outcome recorded afterwards)
        rng = np.random.default_rng(seed + 11)
        noise = bug["leak"]
        x_train = np.column_stack([x_train, y_train + noise * rng.normal(size=len(y_train))]).astype(np.float32)
        x_valid = np.column_stack([x_valid, y_valid + noise * rng.normal(size=len(y_valid))]).astype(np.float32)
    dtrain = xgb.DMatrix(x_train, label=y_train)
    dvalid = xgb.DMatrix(x_valid, label=y_valid)
    params = {"seed": seed, "nthread": 1, **spec["params"]}
    hook = xgboost_hook(out_dir, params, dtrain, dvalid)
    rounds = spec.get("rounds", 60)
    xgb.train(params, dtrain, num_boost_round=rounds, evals=[(dtrain, "train"), (dvalid, "validation")],
              callbacks=[hook], verbose_eval=False)
    # (the run stays open after train() for values saved later, and ends when the script exits; the
    # benchmark judges it in this process right away, so it ends it here, as the held-out trainers do)
    hook.close()
    metric = params.get("eval_metric", "rmse")
    return {"framework": "xgboost", "train_steps": rounds, "train_metric": f"^train-{metric}$",
            "valid_metric": f"^validation-{metric}$", "labels": "^labels$", "predictions": "^predictions$",
            "activation_inputs": {}, "activation_outputs": {}, "weights": []}
