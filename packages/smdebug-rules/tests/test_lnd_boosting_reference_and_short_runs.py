"""LossNotDecreasing on boosting runs (probe 11):

* an evaluation set's metric that falls fast is measured from its first evaluation, not from the median of its
  first saves: a boosted regression at its noise floor after a few rounds drifted +0.8% on a small test set and
  fired "rose past its best" (its "initial" was the second round's value, 7% above the floor, under the 10% of
  min_progress_percent; from the first round it had made 13%);
* a finished run too short for the patience chain (40 rounds: the first check that can be judged is the last one)
  is judged on the checks there are for an evaluation set's metric, which has no batch noise: a validation
  logloss rising .63 -> 5.4 in 40 rounds was "no issues";
* the "past its best / early stopping" words are kept for a metric that had made real progress at its best.
"""

from __future__ import annotations

import numpy as np
import pytest

from smdebug.rules.results import ISSUES, NO_ISSUES

xgb = pytest.importorskip("xgboost")
datasets = pytest.importorskip("sklearn.datasets")

import smdebug.xgboost as smd  # noqa: E402

from _judging import judged  # noqa: E402


def _train(path, params, sets, rounds, callbacks=()):
    hook = smd.Hook.recommended(str(path), validation_data=sets[1][0])
    xgb.train({**params, "nthread": 1, "seed": 0}, sets[0][0], rounds, evals=sets, callbacks=[hook, *callbacks],
              verbose_eval=False)
    hook.close()
    return str(path)


def test_a_fast_falling_metric_at_its_noise_floor_is_measured_from_its_first_evaluation(tmp_path):
    """The diabetes regression (it ships with scikit-learn), raw, with train, validation and a 72-row test set:
    every held-out rmse sits at the data's noise (~54) from round 8 and moves by a fraction of it at random."""
    x, y = datasets.load_diabetes(return_X_y=True, scaled=False)
    order = np.random.default_rng(0).permutation(len(x))
    x, y = x[order], y[order]
    sets = [(xgb.DMatrix(x[a:b], y[a:b]), name) for (a, b), name in
            (((0, 300), "train"), ((300, 370), "valid"), ((370, 442), "test"))]
    params = {"objective": "reg:squarederror", "eval_metric": ["rmse", "mae"], "tree_method": "hist",
              "grow_policy": "lossguide", "max_leaves": 8, "max_depth": 0, "max_bin": 16, "colsample_bytree": 0.8,
              "colsample_bylevel": 0.8, "colsample_bynode": 0.8, "min_child_weight": 5, "lambda": 5}
    lr = xgb.callback.LearningRateScheduler(lambda i: 0.3 * 0.97 ** i if i < 75 else 0.03)
    r = judged(_train(tmp_path / "run", params, sets, 150, [lr]), "LossNotDecreasing")
    assert r.status == NO_ISSUES, [f.reason for f in r.findings]


def _overfitting(n_rows=580, seed=11):
    """80 noisy training rows for a depth-15 booster with no regularisation: its validation logloss rises."""
    g = np.random.default_rng(seed)
    x = g.normal(0, 1, (n_rows, 12))
    y = ((x[:, 0] - x[:, 1] + g.normal(0, 1.2, n_rows)) > 0).astype(float)
    return [(xgb.DMatrix(x[:80], y[:80]), "train"), (xgb.DMatrix(x[80:], y[80:]), "validation")]


OVERFIT = {"objective": "binary:logistic", "eval_metric": "logloss", "eta": 0.5, "max_depth": 15,
           "min_child_weight": 0, "lambda": 0}


def test_a_short_boosting_run_whose_validation_rises_is_judged(tmp_path):
    r = judged(_train(tmp_path / "run", OVERFIT, _overfitting(), 40), "LossNotDecreasing")
    assert r.status == ISSUES, (r.status, r.detail)
    assert r.findings[0].reason.startswith("validation-logloss"), r.findings[0].reason


def test_a_short_healthy_boosting_run_stays_quiet(tmp_path):
    x, y = datasets.load_breast_cancer(return_X_y=True)
    order = np.random.default_rng(1).permutation(len(x))
    x, y = x[order], y[order]
    sets = [(xgb.DMatrix(x[:400], y[:400]), "train"), (xgb.DMatrix(x[400:], y[400:]), "validation")]
    params = {"objective": "binary:logistic", "eval_metric": ["logloss", "error"], "eta": 0.3, "max_depth": 3}
    r = judged(_train(tmp_path / "run", params, sets, 40), "LossNotDecreasing")
    assert r.status == NO_ISSUES, [f.reason for f in r.findings]


def test_a_booster_that_gives_back_a_quarter_of_its_gain_is_overtraining(tmp_path):
    """eta 1.5, depth 8, no child weight: the validation logloss falls from its first evaluation, then rises well
    past its best while boosting goes on; it stays below where it began, and is overtraining all the same."""
    x, y = datasets.load_breast_cancer(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(x))
    x, y = x[order], y[order]
    n = int(len(x) * 0.75)
    mean, std = x[:n].mean(0), x[:n].std(0)
    x = (x - mean) / std
    sets = [(xgb.DMatrix(x[:n], y[:n]), "train"), (xgb.DMatrix(x[n:], y[n:]), "validation")]
    params = {"objective": "binary:logistic", "eval_metric": ["logloss", "error"], "eta": 1.5, "max_depth": 8,
              "min_child_weight": 0}
    r = judged(_train(tmp_path / "run", params, sets, 60), "LossNotDecreasing")
    assert r.status == ISSUES, (r.status, r.detail)
    assert "validation-logloss rose past its best" in r.findings[0].reason, r.findings[0].reason
