"""The loss-curve rules on an XGBoost model trained in one round: a random forest (num_parallel_tree=100 and one
round, XGBoost's documented recipe) or a booster of num_boost_round=1 has no learning curve by design, so the
rules are NotApplicable and say why. They said NotEvaluated ("needs saves ... over at least ...") and every
random forest made the run exit 3 (probe 14b F7). A run that has not ended, one round so far, is still "not yet"."""

from __future__ import annotations

import os
import shutil

import pytest

from smdebug.core.locations import END_OF_JOB_FILE
from smdebug.rules import run_rules
from smdebug.rules.results import IN_PROGRESS, NOT_APPLICABLE, NOT_EVALUATED

xgb = pytest.importorskip("xgboost")

import smdebug.xgboost as smd  # noqa: E402

from _xgboost_runs import xgboost_data  # noqa: E402

CURVE_RULES = ["LossNotDecreasing", "SlowConvergence", "Divergence", "OscillatingLoss"]


def run(path, rounds: int, **params) -> str:
    x, y = xgboost_data(n=300)
    train, valid = xgb.DMatrix(x[:200], label=y[:200]), xgb.DMatrix(x[200:], label=y[200:])
    hook = smd.Hook.recommended(str(path), validation_data=valid)
    xgb.train({"objective": "binary:logistic", "nthread": 1, "seed": 0, **params}, train, num_boost_round=rounds,
              evals=[(train, "train"), (valid, "validation")], callbacks=[hook], verbose_eval=False)
    hook.close()
    return str(path)


def statuses(path):
    return {r.name: (r.status, r.detail or "") for r in run_rules(path, CURVE_RULES).rules}


def test_a_random_forest_of_one_round_has_no_curve_to_judge(tmp_path):
    path = run(tmp_path / "run", 1, num_parallel_tree=20, subsample=0.8, colsample_bynode=0.6, eta=1.0, max_depth=6)
    for name, (status, detail) in statuses(path).items():
        assert status == NOT_APPLICABLE, (name, status, detail)
        assert "a random forest (num_parallel_tree=20) trained in one round" in detail, (name, detail)
        assert "no learning curve" in detail, (name, detail)


def test_a_booster_of_one_round_has_no_curve_to_judge(tmp_path):
    path = run(tmp_path / "run", 1, max_depth=3)
    for name, (status, detail) in statuses(path).items():
        assert status == NOT_APPLICABLE and "a model trained in one boosting round" in detail, (name, detail)


def test_one_round_so_far_of_a_run_still_training_is_not_yet_judged(tmp_path):
    live = str(tmp_path / "live")
    shutil.copytree(run(tmp_path / "run", 1, num_parallel_tree=20, max_depth=6), live)
    os.remove(os.path.join(live, END_OF_JOB_FILE))
    for name, (status, detail) in statuses(live).items():
        assert status in (IN_PROGRESS, NOT_EVALUATED), (name, status, detail)


def test_a_booster_of_several_rounds_saved_at_step_0_only_is_not_taken_for_one_round(tmp_path):
    x, y = xgboost_data(n=300)
    train = xgb.DMatrix(x, label=y)
    # a schedule that saves the metrics at round 0 only, and no predictions: the last round is unknown
    hook = smd.Hook(out_dir=str(tmp_path / "run"), save_config=smd.SaveConfig(save_steps=[0]),
                    include_collections=["metrics", "losses"])
    xgb.train({"objective": "binary:logistic", "nthread": 1}, train, num_boost_round=5, evals=[(train, "train")],
              callbacks=[hook], verbose_eval=False)
    hook.close()
    for name, (status, detail) in statuses(str(tmp_path / "run")).items():
        assert status == NOT_EVALUATED, (name, status, detail)
