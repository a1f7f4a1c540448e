"""LossNotDecreasing on a linear booster (gblinear) that converged within its first rounds (probe 16b F1).

gblinear's first round is a whole pass of coordinate descent: on the standardised diabetes regression its
validation RMSE is 71.4 for the constant model, 58.0 after round 0 and 55.1-55.9 from round 3 on, the best
linear fit. Measured from round 0, the booster had made 4% of progress and fired "did not decrease ... progress
below min_progress_percent 10%" at eta .3 over 200 rounds, not at gblinear's default eta over 100: a verdict on
the learning rate and the number of rounds, not on the model. Its progress is measured from the best constant
prediction on the validation labels the hook saves; a booster on labels it cannot learn is no lower than that,
and still fires.
"""

from __future__ import annotations

import numpy as np
import pytest

from smdebug.rules.results import ISSUES, NO_ISSUES

xgb = pytest.importorskip("xgboost")
datasets = pytest.importorskip("sklearn.datasets")
model_selection = pytest.importorskip("sklearn.model_selection")

import smdebug.xgboost as smd  # noqa: E402

from _judging import judged  # noqa: E402


def _gblinear(path, x, y, model):
    """Fit ``model`` (an XGBoost scikit-learn estimator, gblinear) on 70% of the rows, standardised, evaluated on
    those rows and the other 30% (``validation_0``, ``validation_1``), with the recommended hook (the split of
    probe 16b's run)."""
    x_train, x_val, y_train, y_val = model_selection.train_test_split(x, y, test_size=0.3, random_state=0)
    mean, std = x_train.mean(axis=0), x_train.std(axis=0) + 1e-12
    x_train, x_val = (x_train - mean) / std, (x_val - mean) / std
    hook = smd.Hook.recommended(str(path))
    model.set_params(booster="gblinear", n_jobs=1, callbacks=[hook])
    model.fit(x_train, y_train, eval_set=[(x_train, y_train), (x_val, y_val)], verbose=False)
    hook.close()  # (the run ends: judged as a finished run)
    return str(path)


def _regressor():
    return xgb.XGBRegressor(n_estimators=200, learning_rate=0.3, reg_lambda=0.0)


def test_a_gblinear_regression_that_converged_in_its_first_rounds_is_not_reported(tmp_path):
    x, y = datasets.load_diabetes(return_X_y=True)
    r = judged(_gblinear(tmp_path / "run", x, y, _regressor()), "LossNotDecreasing")
    assert r.status == NO_ISSUES, [f.reason for f in r.findings]


def test_a_gblinear_regression_on_shuffled_targets_is_still_reported(tmp_path):
    """The targets shuffled apart from their rows, 30 columns of noise added to the 10 features: the validation
    RMSE starts at the spread of the validation targets (what the constant model scores) and rises as the booster
    fits the noise; its start is the constant model's, and it still fires."""
    x, y = datasets.load_diabetes(return_X_y=True)
    x = np.hstack([x, np.random.default_rng(2).normal(size=(len(x), 30))])
    y = np.random.default_rng(2).permutation(y)
    r = judged(_gblinear(tmp_path / "run", x, y, _regressor()), "LossNotDecreasing")
    assert r.status == ISSUES
    assert any("validation_1-rmse did not decrease" in f.reason for f in r.findings), [f.reason for f in r.findings]


def test_a_gblinear_classifier_past_its_best_round_is_still_reported(tmp_path):
    """An unregularised gblinear classifier (breast cancer, lambda 0, 200 rounds): its validation logloss comes
    down to .09 by round ~40, then rises to .14 as the weights grow. A rise past its best is measured against the
    gain since round 0, the rounds early stopping chooses among, not against the constant model's logloss
    (.66: the rise would be 7% of that gain, and went unreported)."""
    x, y = datasets.load_breast_cancer(return_X_y=True)
    model = xgb.XGBClassifier(n_estimators=200, learning_rate=0.3, reg_lambda=0.0)
    r = judged(_gblinear(tmp_path / "run", x, y, model), "LossNotDecreasing")
    assert r.status == ISSUES
    assert any("validation_1-logloss rose past its best" in f.reason for f in r.findings), [
        f.reason for f in r.findings]


def test_the_xgboost_configuration_saves_the_labels_it_measures_from():
    """A job configured from rule_configs saves what the rule reads: the losses and the validation labels."""
    from smdebug.rules import rule_configs

    config = rule_configs.loss_not_decreasing(framework="xgboost")
    assert [c["CollectionName"] for c in config["CollectionConfigurations"]] == ["losses", "labels"]
