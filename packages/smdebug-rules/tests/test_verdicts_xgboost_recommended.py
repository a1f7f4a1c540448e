"""The recommended rules give a finished, sound boosting run of a usual length a verdict (every rule judged),
and still catch a booster whose rounds overshoot.

Most boosting runs train tens of rounds. OscillatingLoss needs 100 saves at its defaults, so while it was in
the XGBoost set every run under 100 rounds ended "NotEvaluated" (exit 3) whatever the rest found; and it could
not see the oscillation boosting does show (a learning rate past 2 makes each round overshoot: the metric
alternates every round, which its block means average away), while Divergence and LossNotDecreasing catch it.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

xgb = pytest.importorskip("xgboost")
sklearn_datasets = pytest.importorskip("sklearn.datasets")

import smdebug.xgboost as smd_xgb  # noqa: E402
from smdebug.rules.results import ISSUES, NO_ISSUES, NOT_APPLICABLE  # noqa: E402


def boost(out, x, y, params, rounds):
    rng = np.random.default_rng(0)
    order = rng.permutation(len(y))
    cut = int(0.75 * len(y))
    train = xgb.DMatrix(x[order[:cut]], label=y[order[:cut]])
    valid = xgb.DMatrix(x[order[cut:]], label=y[order[cut:]])
    params = {"nthread": 1, "max_depth": 3, **params}
    hook = smd_xgb.Hook.recommended(str(out), hyperparameters=params, train_data=train, validation_data=valid)
    xgb.train(params, train, num_boost_round=rounds, evals=[(train, "train"), (valid, "validation")],
              verbose_eval=False, callbacks=[hook])
    hook.close()  # the training is over (as at the script's exit): the verdict is final
    return str(out)


def recommended_verdict(run):
    done = subprocess.run([sys.executable, "-m", "smdebug.cli.main", "rules", "run", run, "--json", "--no-progress"],
                          capture_output=True, text=True, timeout=300)
    return done.returncode, json.loads(done.stdout), done.stderr


@pytest.mark.parametrize("rounds", [50, 80])
def test_a_sound_short_boosting_run_is_judged_by_every_recommended_rule(tmp_path, rounds):
    x, y = sklearn_datasets.load_breast_cancer(return_X_y=True)
    run = boost(tmp_path / "run", x, y, {"objective": "binary:logistic", "eta": 0.3, "eval_metric": "logloss"},
                rounds)
    code, result, err = recommended_verdict(run)
    statuses = {r["name"]: r["status"] for r in result["rules"]}
    assert set(statuses.values()) <= {NO_ISSUES, NOT_APPLICABLE}, statuses
    assert code == 0 and result["status"] == NO_ISSUES, (code, result["status"], err)


def test_a_booster_overshooting_every_round_is_caught(tmp_path):
    # squared error, eta 2.1: each round moves the prediction 2.1 times the residual's fitted value, so the
    # residual flips sign and grows: the validation RMSE alternates round by round on its way up
    x, y = sklearn_datasets.load_diabetes(return_X_y=True)
    run = boost(tmp_path / "run", x, y, {"objective": "reg:squarederror", "eta": 2.1}, 60)
    code, result, err = recommended_verdict(run)
    fired = {r["name"] for r in result["rules"] if r["status"] == ISSUES}
    assert code == 1 and fired & {"Divergence", "LossNotDecreasing"}, (code, fired, err)
