"""LossNotDecreasing on an evaluation set's metric that came down to its best and then rose again (XGBoost boosted
past its best round, on a problem whose whole achievable gain is a few percent of the initial loss): the finding
says so in the user's terms -- the best value and its step, the rise, early stopping -- instead of "did not
decrease ... progress below min_progress_percent", which read as a model that never learned (probe 8's categorical
XGBoost run). A metric that never came down (labels unrelated to the inputs) keeps the plain wording."""

from __future__ import annotations

import re

import numpy as np
import pytest

from smdebug.rules import run_rules
from smdebug.rules.results import ISSUES

xgb = pytest.importorskip("xgboost")


def boosted(path, informative: bool) -> str:
    """80 rounds of boosting on a noisy binary problem; ``informative``: depth-6 trees at eta 0.3 (validation
    logloss from about 0.64 to its best of about 0.57 near round 5, then up again to 0.67: most of its gain given
    back); False: depth-5 trees at eta 0.1, labels drawn independently of the inputs. (An informative run at eta
    0.1 whose logloss came back 17% of a 5% gain is no overtraining the rule reports as such: probe 15c F1.)"""
    import smdebug.xgboost as smd

    g = np.random.default_rng(0)
    x = g.standard_normal((4000, 6))
    logit = 2 * (0.7 * x[:, 0] - 0.4 * x[:, 1] * x[:, 2]) if informative else np.zeros(len(x))
    y = (g.random(len(x)) < 1 / (1 + np.exp(-logit))).astype(int)
    train, validation = xgb.DMatrix(x[:3000], y[:3000]), xgb.DMatrix(x[3000:], y[3000:])
    params = {"objective": "binary:logistic", "eval_metric": ["logloss"], "max_depth": 6 if informative else 5,
              "eta": 0.3 if informative else 0.1, "nthread": 1, "seed": 0}
    hook = smd.Hook.recommended(str(path), validation_data=validation, hyperparameters=params)
    xgb.train(params, train, 80, evals=[(train, "train"), (validation, "validation")], callbacks=[hook],
              verbose_eval=False)
    hook.close()
    return str(path)


def finding(path):
    (result,) = run_rules(path, ["LossNotDecreasing"]).rules
    assert result.error is None, result.error
    assert result.status == ISSUES, (result.status, result.detail)
    return result.findings[0].reason


def test_a_validation_metric_boosted_past_its_best_is_said_so(tmp_path):
    reason = finding(boosted(tmp_path / "run", informative=True))
    assert reason.startswith("validation-logloss rose past its best: median "), reason
    best = re.search(r"at its best \(the \d+ steps to step (\d+)\)", reason)
    assert best and 5 <= int(best.group(1)) <= 20, reason  # the best window ends near round 11
    assert f"early stopping at step {best.group(1)} would have kept" in reason, reason
    assert "did not decrease over" not in reason


def test_a_metric_that_never_came_down_keeps_the_plain_wording(tmp_path):
    reason = finding(boosted(tmp_path / "run", informative=False))
    assert reason.startswith("validation-logloss did not decrease over the second half"), reason
    assert "rose past its best" not in reason


def test_a_booster_that_barely_beat_a_constant_is_not_called_overtrained(tmp_path):
    """eta=2 overshoots at every round: the validation RMSE dips a few percent below what predicting the mean scores
    and rises again. "Overtraining ... early stopping would have kept" sent the user to a model no better than a
    constant (probe 18a W2); the finding says the model barely learned, measured against the constant prediction
    on the saved validation labels, and names the learning rate."""
    import smdebug.xgboost as smd

    from sklearn.datasets import make_regression

    from sklearn.model_selection import train_test_split

    x, y = make_regression(3000, 15, n_informative=10, noise=10, random_state=2)
    x_train, x_valid, y_train, y_valid = train_test_split(x, y, test_size=0.25, random_state=0)
    train, validation = xgb.DMatrix(x_train, y_train), xgb.DMatrix(x_valid, y_valid)
    params = {"objective": "reg:squarederror", "max_depth": 4, "eta": 2.0, "nthread": 1, "seed": 0}
    hook = smd.Hook.recommended(str(tmp_path / "run"), validation_data=validation, hyperparameters=params)
    booster = xgb.train(params, train, 100, evals=[(train, "train"), (validation, "validation")],
                        callbacks=[hook], verbose_eval=False)
    hook.close()
    rmse = float(np.sqrt(np.mean((booster.predict(validation) - y_valid) ** 2)))
    assert rmse > 0.9 * float(np.std(y_valid)), rmse  # (the run is as broken as the probe's)
    (result,) = run_rules(str(tmp_path / "run"), ["LossNotDecreasing"], max_findings=1000).rules
    assert result.status == ISSUES, (result.status, result.detail)
    past = [f.reason for f in result.findings if "rose past its best" in f.reason]
    assert past, [f.reason for f in result.findings[:3]]
    for reason in past:
        assert "the model barely learned" in reason and "below the best constant prediction's" in reason, reason
        assert "learning rate (eta) too high" in reason, reason
        assert "overtraining" not in reason and "early stopping" not in reason, reason
