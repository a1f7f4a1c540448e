"""The hook's record of the booster (``_meta.xgboost_booster`` of the collections file): what the rules read to
tell a random forest, gblinear and a regression apart; and the file stays one the original smdebug reads."""

import json
import os

import numpy as np
import xgboost as xgb
from conftest import binary_data, regression_data

import smdebug.xgboost as smd
from smdebug.core.collection_manager import CollectionManager
from smdebug.xgboost.hook import BOOSTER_META_KEY, CV_META_KEY, booster_record


def _collections_file(out_dir):
    return os.path.join(out_dir, "collections", "000000000", "worker_0_collections.json")


def _record(out_dir):
    with open(_collections_file(out_dir)) as f:
        return json.load(f)["_meta"].get(BOOSTER_META_KEY)


def _train(out_dir, params, X, y, rounds=2, **kwargs):
    hook = smd.Hook(out_dir)
    d = xgb.DMatrix(X, label=y)
    xgb.train({"nthread": 1, **params}, d, num_boost_round=rounds, evals=[(d, "train")], verbose_eval=False,
              callbacks=[hook], **kwargs)
    hook.close()
    return _record(out_dir)


def test_random_forest_parameters_are_recorded(tmp_path):
    X, y = binary_data()
    record = _train(str(tmp_path / "rf"), {"objective": "binary:logistic", "num_parallel_tree": 4, "subsample": 0.63,
                                           "colsample_bynode": 0.6, "max_depth": 7, "eta": 1.0}, X, y, rounds=1)
    assert record["booster"] == "gbtree" and record["objective"] == "binary:logistic"
    assert record["num_parallel_tree"] == 4 and record["max_depth"] == 7
    assert record["subsample"] == 0.63 and record["colsample_bynode"] == 0.6 and record["eta"] == 1.0
    assert "custom_objective" not in record


def test_a_continued_model_records_the_rounds_it_started_from(tmp_path):
    """xgb_model=: the hook's step 0 is then not the model's first round (the rules' LabelLeak judges first
    rounds); a model trained from scratch records none."""
    X, y = binary_data()
    d = xgb.DMatrix(X, label=y)
    first = xgb.train({"nthread": 1, "objective": "binary:logistic"}, d, num_boost_round=5)
    record = _train(str(tmp_path / "more"), {"objective": "binary:logistic"}, X, y, xgb_model=first)
    assert record["initial_rounds"] == 5
    assert "initial_rounds" not in _train(str(tmp_path / "new"), {"objective": "binary:logistic"}, X, y)


def test_gblinear_and_regression_objectives_are_recorded(tmp_path):
    X, y = regression_data()
    record = _train(str(tmp_path / "linear"), {"booster": "gblinear", "objective": "reg:squarederror"}, X, y)
    assert record["booster"] == "gblinear" and record["objective"] == "reg:squarederror"
    # the scikit-learn API: the objective is the estimator's default
    out_dir = str(tmp_path / "sklearn")
    hook = smd.Hook(out_dir)
    xgb.XGBRegressor(n_estimators=3, n_jobs=1, callbacks=[hook]).fit(X, y)
    hook.close()
    assert _record(out_dir)["objective"] == "reg:squarederror"


def test_a_custom_objective_is_not_recorded_as_the_default_one(tmp_path):
    X, y = binary_data()

    def logistic(predt, dtrain):
        p = 1.0 / (1.0 + np.exp(-predt))
        return p - dtrain.get_label(), p * (1.0 - p)

    record = _train(str(tmp_path / "custom"), {}, X, y, obj=logistic)
    # XGBoost's configuration still says reg:squarederror: the record says the objective is a callable instead
    assert record["custom_objective"] is True and "objective" not in record
    # outside xgboost.train nothing tells whether a callable was used: the default objective is left out
    booster = xgb.train({"nthread": 1}, xgb.DMatrix(X, label=y), num_boost_round=1)
    assert "objective" not in booster_record(booster, None)
    assert booster_record(booster, False)["objective"] == "reg:squarederror"


def test_the_collections_file_stays_readable(tmp_path):
    X, y = binary_data()
    out_dir = str(tmp_path / "run")
    _train(out_dir, {"objective": "binary:logistic"}, X, y)
    with open(_collections_file(out_dir)) as f:
        doc = json.load(f)
    # only the two top-level keys the original accepts; the record is plain JSON inside _meta
    assert set(doc) == {"collections", "_meta"} and doc["_meta"]["num_workers"] == 1
    assert json.loads(json.dumps(doc["_meta"][BOOSTER_META_KEY])) == doc["_meta"][BOOSTER_META_KEY]
    cm = CollectionManager.load(_collections_file(out_dir))
    assert cm.meta[BOOSTER_META_KEY]["objective"] == "binary:logistic"
    trial = smd.create_trial(out_dir)
    assert trial.tensor_names() == ["train-logloss"]  # the record adds no tensor


def test_xgboost_cv_records_its_folds_booster_and_that_it_is_a_cross_validation(tmp_path):
    X, y = binary_data()
    out_dir = str(tmp_path / "cv")
    hook = smd.Hook(out_dir)
    xgb.cv({"nthread": 1, "objective": "binary:logistic", "max_depth": 3}, xgb.DMatrix(X, label=y),
           num_boost_round=2, nfold=2, callbacks=[hook])
    hook.close()
    # every fold trains with the same parameters: their booster's record, and the number of folds
    record = _record(out_dir)
    assert record["objective"] == "binary:logistic" and record["max_depth"] == 3
    with open(_collections_file(out_dir)) as f:
        assert json.load(f)["_meta"][CV_META_KEY] == {"nfold": 2}
    # a plain xgboost.train run is no cross-validation
    train_dir = str(tmp_path / "train")
    _train(train_dir, {"objective": "binary:logistic"}, X, y)
    with open(_collections_file(train_dir)) as f:
        assert CV_META_KEY not in json.load(f)["_meta"]
