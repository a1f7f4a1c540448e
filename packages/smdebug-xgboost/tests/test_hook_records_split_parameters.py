"""The hook's record of the booster names what bars a split (min_child_weight, gamma) and where the model starts
(base_score): what TreeDepth names when a booster never split."""

import json
import os

import xgboost as xgb
from conftest import regression_data

import smdebug.xgboost as smd
from smdebug.xgboost.hook import BOOSTER_META_KEY


def test_split_parameters_and_base_score_are_recorded(tmp_path):
    X, y = regression_data()
    hook = smd.Hook(str(tmp_path))
    d = xgb.DMatrix(X, label=y)
    booster = xgb.train({"nthread": 1, "min_child_weight": 5, "gamma": 2, "base_score": 0.25}, d, 2,
                        callbacks=[hook])
    hook.close()
    with open(os.path.join(str(tmp_path), "collections", "000000000", "worker_0_collections.json")) as f:
        record = json.load(f)["_meta"][BOOSTER_META_KEY]
    assert record["min_child_weight"] == 5 and record["gamma"] == 2 and record["base_score"] == 0.25, record
    assert booster.num_boosted_rounds() == 2
