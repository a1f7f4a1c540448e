"""LossNotDecreasing on an evaluation set's metric whose whole gain is a small share of its value (probe 15c F1).

A booster stacked on a prior model's margin (``base_margin``) starts near its floor, and a hard task's error rate on a
validation set of a few hundred rows moves by a handful of rows: such metrics made under min_progress_percent of
relative progress, and any rise fired "rose past its best ... early stopping would have kept" -- on a run whose last
model was its best one, and on a rise of 7 rows of 500. A rise past the best is now judged the same whatever the
relative progress (beyond noise, a real share of the gain), and a validation metric that gained little and sat flat
to the end (labels misaligned with their rows) is still reported, in the plain words of a metric that did not
decrease."""

from __future__ import annotations

import numpy as np
import pytest

from smdebug.rules import run_rules
from smdebug.rules.results import ISSUES, NO_ISSUES

xgb = pytest.importorskip("xgboost")
datasets = pytest.importorskip("sklearn.datasets")


def judged(path):
    (result,) = run_rules(str(path), ["LossNotDecreasing"]).rules
    assert result.error is None, result.error
    return result


def test_a_booster_on_a_prior_models_margin_that_ends_at_its_best_is_not_reported(tmp_path):
    """Breast cancer, an XGBClassifier boosted on top of a linear model's margin: validation logloss .0855 -> flat
    near .083 for half the run -> .077 at the end, its best (the linear model alone is as accurate)."""
    import smdebug.xgboost as smd

    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split

    x, y = datasets.load_breast_cancer(return_X_y=True)
    xt, xv, yt, yv = train_test_split(x, y, test_size=0.25, random_state=0, stratify=y)
    mean, std = xt.mean(axis=0), xt.std(axis=0)
    xt, xv = (xt - mean) / std, (xv - mean) / std
    prior = LogisticRegression(max_iter=200).fit(xt, yt)
    mt, mv = prior.decision_function(xt), prior.decision_function(xv)
    hook = smd.Hook.recommended(str(tmp_path / "run"))
    clf = xgb.XGBClassifier(n_estimators=100, learning_rate=0.05, max_depth=2, n_jobs=1, callbacks=[hook],
                            eval_metric="logloss")
    clf.fit(xt, yt, sample_weight=np.where(yt == 0, 1.7, 1.0), base_margin=mt, eval_set=[(xt, yt), (xv, yv)],
            base_margin_eval_set=[mt, mv], verbose=False)
    hook.close()
    result = judged(tmp_path / "run")
    assert result.status == NO_ISSUES, [f.reason for f in result.findings]


def test_a_hard_tasks_error_rate_rising_by_a_few_rows_is_not_reported(tmp_path):
    """A sound booster (eta 0.05, depth 3) on a task with a Bayes accuracy near 0.70: validation-error on 500 rows
    .298 -> .284 -> .292 (medians of windows), a rise of 4 rows, under one standard error of the set's error rate."""
    g = np.random.default_rng(0)
    x = g.normal(size=(2000, 10))
    y = (x[:, 0] + x[:, 1] + g.normal(scale=2.0, size=2000) > 0).astype(int)
    _boost(tmp_path / "run", {"objective": "binary:logistic", "eta": 0.05, "max_depth": 3,
                              "eval_metric": ["logloss", "error"]}, x, y, 100)
    result = judged(tmp_path / "run")
    assert result.status == NO_ISSUES, [f.reason for f in result.findings]


def test_a_validation_metric_that_gained_little_and_stayed_flat_is_reported_plainly(tmp_path):
    """Diabetes regression with its training labels shifted by 7 rows: validation-rmse 70.5 -> 68.4, flat for
    150 rounds (R^2 0.06; 0.24 with aligned labels). Reported as a metric that did not decrease, not as a rise past
    its best: it never had a best to rise from."""
    from sklearn.model_selection import train_test_split

    x, y = datasets.load_diabetes(return_X_y=True)
    xt, xv, yt, yv = train_test_split(x, y, test_size=0.25, random_state=0)
    _boost(tmp_path / "run", {"objective": "reg:squarederror", "eta": 0.05, "max_depth": 3, "eval_metric": "rmse"},
           np.vstack([xt, xv]), np.concatenate([np.roll(yt, 7), yv]), 200, train_rows=len(yt))
    result = judged(tmp_path / "run")
    assert result.status == ISSUES, (result.status, result.detail)
    reason = result.findings[0].reason
    assert reason.startswith("validation-rmse did not decrease over the second half"), reason
    assert "rose past its best" not in reason


def _boost(path, params, x, y, rounds, train_rows=None):
    """Boost on the first 3/4 of the rows (``train_rows``), evaluated on them and on the rest."""
    import smdebug.xgboost as smd

    n = train_rows or len(y) * 3 // 4
    train, valid = xgb.DMatrix(x[:n], y[:n]), xgb.DMatrix(x[n:], y[n:])
    hook = smd.Hook.recommended(str(path), validation_data=valid)
    xgb.train({"nthread": 1, "seed": 0, **params}, train, rounds, evals=[(train, "train"), (valid, "validation")],
              callbacks=[hook], verbose_eval=False)
    hook.close()

