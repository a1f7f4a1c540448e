"""Overfit on boosting runs: a held-out metric that never followed the training data's is found, whatever early
stopping did to the run's length; sound boosters, linear or not, are let be (probe 16b F3).

Every run here is a real XGBoost training with the hook's recommended collections, trained the two usual ways: the
scikit-learn estimator with ``eval_set=[(X_train, y_train), (X_test, y_test)]`` (sets ``validation_0`` and
``validation_1``) and ``xgboost.train`` with named ``evals``.
"""

from __future__ import annotations

import numpy as np
import pytest

xgb = pytest.importorskip("xgboost")
sklearn_datasets = pytest.importorskip("sklearn.datasets")
model_selection = pytest.importorskip("sklearn.model_selection")

import smdebug.xgboost as smd_xgb  # noqa: E402
from smdebug.rules import run_rules  # noqa: E402
from smdebug.rules.rule_configs import collections_for, recommended_rules  # noqa: E402
from smdebug.rules.results import ISSUES, NO_ISSUES, NOT_APPLICABLE  # noqa: E402


def _split(x, y, shuffle_training_labels):
    x_train, x_test, y_train, y_test = model_selection.train_test_split(x, y, test_size=0.3, random_state=0)
    if shuffle_training_labels:
        y_train = np.random.default_rng(3).permutation(y_train)
    return x_train, x_test, y_train, y_test


def fit_estimator(out, estimator, x, y, *, shuffle_training_labels=False, training_set=True, **params):
    """The scikit-learn way: ``eval_set`` of the training rows (unless ``training_set`` is False) and the test
    rows, the hook's recommended collections."""
    x_train, x_test, y_train, y_test = _split(x, y, shuffle_training_labels)
    hook = smd_xgb.Hook.recommended(str(out))
    model = estimator(callbacks=[hook], n_jobs=1, random_state=0, **params)
    sets = [(x_train, y_train), (x_test, y_test)] if training_set else [(x_test, y_test)]
    model.fit(x_train, y_train, eval_set=sets, verbose=False)
    hook.close()
    return str(out)


def overfit(run):
    return run_rules(run, rules=["Overfit"], ended=True).rules[0]


def test_shuffled_training_labels_with_early_stopping_are_found(tmp_path):
    x, y = sklearn_datasets.load_breast_cancer(return_X_y=True)
    run = fit_estimator(tmp_path / "run", xgb.XGBClassifier, x, y, shuffle_training_labels=True, n_estimators=300,
                        learning_rate=0.1, max_depth=4, early_stopping_rounds=30, eval_metric="logloss")
    result = overfit(run)
    assert result.status == ISSUES, result
    reason = result.findings[0].reason
    assert reason.startswith("validation_1-logloss: no generalisation") and "validation_0-logloss" in reason, reason
    assert "labels shuffled apart from their rows" in reason, reason


def test_a_regression_whose_held_out_error_was_best_at_its_first_round_is_found(tmp_path):
    # (early stopping ends it about 30 rounds in: LossNotDecreasing alone calls such a run too short to judge)
    x, y = sklearn_datasets.load_diabetes(return_X_y=True)
    run = fit_estimator(tmp_path / "run", xgb.XGBRegressor, x, y, shuffle_training_labels=True,
                        n_estimators=300, early_stopping_rounds=30)
    result = overfit(run)
    assert result.status == ISSUES, result
    assert result.findings[0].reason.startswith("validation_1-rmse: no generalisation"), result.findings[0].reason


@pytest.mark.parametrize("estimator, data, params", [
    ("XGBClassifier", "load_breast_cancer", dict(n_estimators=300, learning_rate=0.1, max_depth=4,
                                                  early_stopping_rounds=30, eval_metric="logloss")),
    ("XGBRegressor", "load_diabetes", dict(n_estimators=200, learning_rate=0.05, max_depth=3, subsample=0.8)),
    # (a linear booster's first round is a whole pass of coordinate descent: its held-out error is near its best
    # from the first round, and so is the training error: neither gains much afterwards)
    ("XGBRegressor", "load_diabetes", dict(booster="gblinear", n_estimators=100)),
    ("XGBClassifier", "load_digits", dict(n_estimators=40, max_depth=3, eval_metric="mlogloss")),
], ids=["classifier-early-stopping", "regression", "gblinear", "multi-class"])
def test_sound_boosters_are_let_be(tmp_path, estimator, data, params):
    x, y = getattr(sklearn_datasets, data)(return_X_y=True)
    if params.get("booster") == "gblinear":
        x = (x - x.mean(axis=0)) / x.std(axis=0)
    result = overfit(fit_estimator(tmp_path / "run", getattr(xgb, estimator), x, y, **params))
    assert result.status == NO_ISSUES, result


def test_a_small_real_gain_on_a_noisy_task_is_told_from_chance_by_the_held_out_rows(tmp_path):
    # Friedman's regression under noise of sd 8 (its signal's sd is about 5): deep trees boosted 150 rounds at
    # eta 0.3 drive the training RMSE down 99% while the held-out one gains about 5% of that -- as small a share
    # as shuffled labels give, but real: on the 450 held-out rows the predictions beat the constant model by
    # many standard errors
    x, y = sklearn_datasets.make_friedman1(1500, noise=8.0, random_state=1)
    run = fit_estimator(tmp_path / "run", xgb.XGBRegressor, x, y, n_estimators=150, learning_rate=0.3, max_depth=6)
    assert overfit(run).status == NO_ISSUES
    shuffled = fit_estimator(tmp_path / "shuffled", xgb.XGBRegressor, x, y, shuffle_training_labels=True,
                             n_estimators=150, learning_rate=0.3, max_depth=6)
    result = overfit(shuffled)
    assert result.status == ISSUES and "beyond chance" in result.findings[0].reason, result


def test_the_native_api_names_its_training_set(tmp_path):
    # (the training set is told by its name, "train"; the hook saves the predictions and labels of the last
    # held-out set, "test")
    x, y = sklearn_datasets.load_breast_cancer(return_X_y=True)
    x_train, x_test, y_train, y_test = _split(x, y, shuffle_training_labels=True)
    train, test = xgb.DMatrix(x_train, label=y_train), xgb.DMatrix(x_test, label=y_test)
    hook = smd_xgb.Hook.recommended(str(tmp_path / "run"))
    xgb.train({"objective": "binary:logistic", "max_depth": 4, "eta": 0.1, "nthread": 1,
               "eval_metric": "logloss"}, train, num_boost_round=60,
              evals=[(train, "train"), (test, "test")], verbose_eval=False, callbacks=[hook])
    hook.close()
    result = overfit(str(tmp_path / "run"))
    assert result.status == ISSUES, result
    reason = result.findings[0].reason
    assert reason.startswith("test-logloss: no generalisation") and "while train-logloss fell" in reason, reason
    assert "the set whose metric fell most" not in reason, reason
    assert "never beat the best constant prediction beyond chance" in reason, reason


def test_without_the_held_out_rows_only_the_curves_judge(tmp_path):
    # (the metrics alone: a held-out gain of at most a tenth of the training gain; this run's held-out log loss
    # never got below its first round)
    x, y = sklearn_datasets.load_diabetes(return_X_y=True)
    x_train, x_test, y_train, y_test = _split(x, y, shuffle_training_labels=True)
    train, test = xgb.DMatrix(x_train, label=y_train), xgb.DMatrix(x_test, label=y_test)
    hook = smd_xgb.Hook(out_dir=str(tmp_path / "run"), save_config=smd_xgb.SaveConfig(save_interval=1),
                        include_collections=["metrics"])
    xgb.train({"max_depth": 6, "eta": 0.3, "nthread": 1}, train, num_boost_round=40,
              evals=[(train, "train"), (test, "test")], verbose_eval=False, callbacks=[hook])
    hook.close()
    result = overfit(str(tmp_path / "run"))
    assert result.status == ISSUES, result
    reason = result.findings[0].reason
    assert reason.startswith("test-rmse: no generalisation") and "beyond chance" not in reason, reason


@pytest.mark.parametrize("estimator, data, metric", [("XGBClassifier", "load_breast_cancer", "logloss"),
                                                     ("XGBRegressor", "load_diabetes", "rmse")])
def test_held_out_data_alone_is_judged_by_its_rows_once_the_run_has_ended(tmp_path, estimator, data, metric):
    # (eval_set=[(X_val, y_val)], the usual early-stopping set-up: no training metric to compare with, but the
    # hook saved the set's predictions and labels)
    x, y = getattr(sklearn_datasets, data)(return_X_y=True)
    params = dict(training_set=False, n_estimators=300, max_depth=4, early_stopping_rounds=30, eval_metric=metric)
    sound = overfit(fit_estimator(tmp_path / "sound", getattr(xgb, estimator), x, y, **params))
    assert sound.status == NO_ISSUES, sound
    shuffled = overfit(fit_estimator(tmp_path / "shuffled", getattr(xgb, estimator), x, y,
                                     shuffle_training_labels=True, **params))
    assert shuffled.status == ISSUES, shuffled
    reason = shuffled.findings[0].reason
    assert reason.startswith(f"validation_0-{metric}: no generalisation: on its") and "beyond chance" in reason
    assert "eval_set=[(X_train, y_train), (X_val, y_val)]" in reason, reason


def test_held_out_data_alone_without_its_rows_says_how_to_have_it_judged(tmp_path):
    x, y = sklearn_datasets.load_breast_cancer(return_X_y=True)
    x_train, x_test, y_train, y_test = _split(x, y, shuffle_training_labels=False)
    hook = smd_xgb.Hook(out_dir=str(tmp_path / "run"), save_config=smd_xgb.SaveConfig(save_interval=1),
                        include_collections=["metrics"])
    model = xgb.XGBClassifier(callbacks=[hook], n_jobs=1, n_estimators=30, max_depth=3, eval_metric="logloss")
    model.fit(x_train, y_train, eval_set=[(x_test, y_test)], verbose=False)
    hook.close()
    result = overfit(str(tmp_path / "run"))
    assert result.status == NOT_APPLICABLE, result
    assert "eval_set=[(X_train, y_train), (X_val, y_val)]" in result.detail, result.detail


def test_a_metric_whose_gain_is_no_share_of_its_value_is_not_applicable(tmp_path):
    # (AUC: one tree already ranks well, and a constant model's is 0.5, not a share of anything)
    x, y = sklearn_datasets.load_breast_cancer(return_X_y=True)
    run = fit_estimator(tmp_path / "run", xgb.XGBClassifier, x, y, n_estimators=30, max_depth=3, eval_metric="auc")
    result = overfit(run)
    assert result.status == NOT_APPLICABLE, result
    assert "share no metric the rule judges" in result.detail, result.detail


def test_overfit_is_recommended_for_boosters_and_reads_every_sets_metrics():
    assert "Overfit" in [name for name, _ in recommended_rules("xgboost")]
    assert set(collections_for(["Overfit"], "xgboost")) == {"metrics", "labels"}
