"""A plain XGBoost training script that knows nothing of smdebug (for the zero-code-change test)."""

import numpy as np
import xgboost as xgb

rng = np.random.default_rng(0)
x = rng.normal(size=(200, 5))
y = (x[:, 0] + 0.1 * rng.normal(size=200) > 0).astype(int)
dtrain = xgb.DMatrix(x, label=y)
booster = xgb.train({"objective": "binary:logistic", "max_depth": 2, "nthread": 1}, dtrain, num_boost_round=6,
                    evals=[(dtrain, "train")], verbose_eval=False)
print("trees", booster.num_boosted_rounds())
