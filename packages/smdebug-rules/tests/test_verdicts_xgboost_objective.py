"""ImproperOutput on XGBoost runs: the objective is the run's loss, compared with the validation labels. A
classification trained as a regression on the class index is caught as it is for the deep-learning hooks;
regressions on values or skewed counts, and objectives whose link XGBoost applies itself, are not judged
faulty."""

from __future__ import annotations

import numpy as np
import pytest

from smdebug.rules import run_rules
from smdebug.rules.results import ISSUES, NO_ISSUES, NOT_APPLICABLE, NOT_EVALUATED

from _xgboost_runs import train_xgboost
from test_data_rules import run as write

xgb = pytest.importorskip("xgboost")


def verdict(path, rule="ImproperOutput"):
    r = run_rules(str(path), [(rule, {})]).rules[0]
    assert r.error is None, r.error
    return r


def classes(n=600, k=10, seed=0):
    """``k`` balanced classes, each a Gaussian blob around its own centre."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % k
    centres = rng.normal(scale=3.0, size=(k, 6))
    return centres[y] + rng.normal(size=(n, 6)), y


def test_classes_trained_as_a_regression_on_the_class_index(tmp_path):
    x, y = classes()
    path = train_xgboost(tmp_path, {"objective": "reg:squarederror", "max_depth": 3}, x, y, rounds=5,
                         collections=("labels", "predictions"))
    r = verdict(path)
    assert r.status == ISSUES, (r.status, r.detail)
    assert r.findings[0].reason.startswith("XGBoost objective reg:squarederror on one output per sample")
    assert "class ids 0-9" in r.findings[0].reason


def test_the_same_classes_with_a_classification_objective_are_not_applicable(tmp_path):
    x, y = classes()
    path = train_xgboost(tmp_path, {"objective": "multi:softprob", "num_class": 10, "max_depth": 3}, x, y,
                         rounds=3, collections=("labels", "predictions"))
    r = verdict(path)
    assert r.status == NOT_APPLICABLE and "XGBoost objective multi:softprob" in r.detail, (r.status, r.detail)


@pytest.mark.parametrize("objective", ["reg:squarederror", "reg:absoluteerror", "reg:pseudohubererror"])
def test_regressions_on_values_and_on_skewed_counts_are_judged_sound(tmp_path, objective):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(500, 4))
    values = x[:, 0] * 2.0 + rng.normal(size=500)
    counts = np.minimum(rng.poisson(np.exp(0.8 * x[:, 0])), 12)  # integers from 0, their small values common
    for name, y in (("values", values), ("counts", counts)):
        path = train_xgboost(tmp_path / name, {"objective": objective, "max_depth": 3}, x, y, rounds=5,
                             collections=("labels", "predictions"))
        r = verdict(path)
        assert r.status == NO_ISSUES, (name, r.status, r.detail, r.findings)


def test_a_run_of_the_original_smdebug_tells_its_objective_through_the_hyperparameters(tmp_path):
    rng = np.random.default_rng(2)
    labels = np.arange(400) % 5
    step = {"labels": labels.astype(np.float32), "predictions": (labels + rng.normal(size=400)).astype(np.float32),
            "hyperparameters/objective": np.array(["reg:squarederror"])}
    write(tmp_path / "regression", [step])
    r = verdict(tmp_path / "regression")
    assert r.status == ISSUES and "class ids 0-4" in r.findings[0].reason, (r.status, r.detail)
    step["hyperparameters/objective"] = np.array(["multi:softmax"])
    write(tmp_path / "classifier", [step])
    assert verdict(tmp_path / "classifier").status == NOT_APPLICABLE


def test_a_regression_whose_hook_had_no_validation_data_is_not_evaluated_and_says_why(tmp_path):
    x, y = classes()
    import smdebug.xgboost as smd

    hook = smd.Hook.recommended(str(tmp_path))  # no validation_data: no predictions or labels saved
    xgb.train({"objective": "reg:squarederror", "nthread": 1}, xgb.DMatrix(x, label=y), num_boost_round=3,
              callbacks=[hook])
    hook.close()
    r = verdict(tmp_path)
    assert r.status == NOT_EVALUATED, (r.status, r.detail)
    assert "'predictions' and 'labels' collections, and give the hook validation_data" in r.detail
