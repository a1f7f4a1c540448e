"""Real XGBoost training runs written with the smdebug XGBoost hook, for the rules' real-run tests."""

from __future__ import annotations

import numpy as np


def train_xgboost(path, params, x, y, rounds=6, collections=("trees", "feature_importance", "labels", "predictions")):
    """Train a booster for ``rounds`` rounds with a hook saving ``collections`` at every round to ``path``."""
    import xgboost as xgb

    import smdebug.xgboost as smd

    dtrain = xgb.DMatrix(x, label=y)
    hook = smd.Hook(out_dir=str(path), save_config=smd.SaveConfig(save_interval=1),
                    include_collections=list(collections), validation_data=dtrain)
    xgb.train({"nthread": 1, **params}, dtrain, num_boost_round=rounds, callbacks=[hook])
    hook.close()  # as in smdebug 1.0.x the run stays open after train() returns (save_scalar may follow)
    return path


def xgboost_data(n=400, features=8, seed=0, informative=None):
    """A binary problem: the label is a noisy linear function of the first ``informative`` features."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, features))
    w = np.zeros(features)
    w[: informative or features] = rng.normal(size=informative or features)
    y = (x @ w + 0.5 * rng.normal(size=n) > 0).astype(int)
    return x, y
