"""Two documented ways of training that are not one plain ``xgboost.train`` (probe 11b, E1, E2, N3):

* ``xgboost.cv(..., callbacks=[Hook.recommended(...)])``: one booster per fold, so the hook saves the metrics
  (their mean over the folds) and nothing of a single model. It must say so without an ERROR, record in the run
  that it is a cross-validation, and the rules that need a single model's data answer NotApplicable with that
  reason (not NotEvaluated, which made every cv run exit 3).
* a refresh run (``process_type="update"``, ``updater="refresh"``, ``xgb_model=old``): every iteration re-fits
  one round of the old model's trees instead of adding one, and XGBoost refuses to slice a booster while it
  updates. The refreshed trees are still saved, and the recommended verdict of a sound run is judged.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import numpy as np
import pytest
import xgboost as xgb
from conftest import binary_data, regression_data

import smdebug.xgboost as smd
from smdebug.trials import create_trial
from smdebug.xgboost.hook import BOOSTER_META_KEY

CV_META_KEY = "xgboost_cv"  # (smdebug.xgboost.hook.CV_META_KEY)

pytest.importorskip("smdebug.rules", reason="the verdicts need smdebug-rules")


def _meta(out_dir):
    with open(os.path.join(out_dir, "collections", "000000000", "worker_0_collections.json")) as f:
        return json.load(f)["_meta"]


def _verdicts(run):
    done = subprocess.run([sys.executable, "-m", "smdebug.cli.main", "rules", "run", run, "--json", "--no-progress"],
                          capture_output=True, text=True, timeout=300)
    result = json.loads(done.stdout)
    return done.returncode, {r["name"]: r for r in result["rules"]}


def _problems(log):
    """ERROR records and tracebacks of the smdebug log."""
    return [r.getMessage() for r in log.records if r.levelno >= logging.ERROR or r.exc_info]


@pytest.mark.parametrize("objective, data", [("binary:logistic", binary_data), ("reg:squarederror", regression_data)])
def test_xgboost_cv_with_the_recommended_hook_is_said_once_and_judged(tmp_path, smd_log, objective, data):
    X, y = data(rows=200)
    out_dir = str(tmp_path / "cv")
    hook = smd.Hook.recommended(out_dir)
    result = xgb.cv({"objective": objective, "max_depth": 2, "nthread": 1}, xgb.DMatrix(X, label=y),
                    num_boost_round=60, nfold=3, seed=0, callbacks=[hook])
    hook.close()
    assert _problems(smd_log) == []
    # what cannot be saved is said once per kind, as a warning
    cv_warnings = [r.getMessage() for r in smd_log.records if "xgboost.cv" in r.getMessage()]
    assert cv_warnings and len(cv_warnings) == len(set(cv_warnings)), cv_warnings
    assert not hook.disabled
    meta = _meta(out_dir)
    assert meta[CV_META_KEY] == {"nfold": 3}
    assert meta[BOOSTER_META_KEY]["objective"] == objective  # the folds' booster, as xgboost.train records it
    trial = create_trial(out_dir)
    metric = "test-logloss" if objective.startswith("binary") else "test-rmse"
    assert trial.tensor(metric).value(59)[0] == pytest.approx(result[metric + "-mean"].iloc[59])

    code, rules = _verdicts(out_dir)
    statuses = {name: r["status"] for name, r in rules.items()}
    assert "NotEvaluated" not in statuses.values(), statuses
    for name in ("TreeDepth", "ImproperOutput"):
        assert statuses[name] == "NotApplicable" and "xgboost.cv" in rules[name]["detail"], rules[name]
    if objective.startswith("binary"):
        assert statuses["ClassImbalance"] == "NotApplicable" and "xgboost.cv" in rules["ClassImbalance"]["detail"]
    assert all("register_loss" not in (r.get("detail") or "") for r in rules.values())
    assert code == 0


def _refresh_run(out_dir, rounds_old=12, rounds_new=12, include=None, **params):
    X, y = binary_data(rows=400, features=5, seed=3)
    d_old, d_new, d_val = (xgb.DMatrix(X[a:b], label=y[a:b]) for a, b in ((0, 150), (150, 300), (300, 400)))
    base = {"objective": "binary:logistic", "max_depth": 3, "nthread": 1, "seed": 0, **params}
    old = xgb.train(base, d_old, rounds_old)
    refresh = {**base, "process_type": "update", "updater": "refresh", "refresh_leaf": 1}
    if include is None:
        hook = smd.Hook.recommended(out_dir, validation_data=d_val, hyperparameters=refresh)
    else:
        hook = smd.Hook(out_dir, save_config=smd.SaveConfig(save_interval=1), include_collections=include,
                        validation_data=d_val)
    booster = xgb.train(refresh, d_new, rounds_new, evals=[(d_new, "train"), (d_val, "validation")],
                        xgb_model=old, callbacks=[hook], verbose_eval=False)
    hook.close()
    return old, booster, hook


@pytest.mark.parametrize("params, trees_per_round", [({}, 1), ({"objective": "multi:softprob", "num_class": 3,
                                                                 "num_parallel_tree": 2}, 6)])
def test_a_refresh_run_saves_the_trees_each_iteration_refreshed(tmp_path, smd_log, params, trees_per_round):
    out_dir = str(tmp_path / "refresh")
    if params.get("num_class"):
        X, y = binary_data(rows=400, features=5, seed=3)
        y = np.digitize(X[:, 0], [-0.5, 0.5]).astype(np.float32)
        d_old, d_new = xgb.DMatrix(X[:200], label=y[:200]), xgb.DMatrix(X[200:], label=y[200:])
        base = {"max_depth": 3, "nthread": 1, "seed": 0, **params}
        old = xgb.train(base, d_old, 5)
        hook = smd.Hook(out_dir, save_config=smd.SaveConfig(save_interval=1), include_collections=["trees"])
        booster = xgb.train({**base, "process_type": "update", "updater": "refresh"}, d_new, 5, xgb_model=old,
                            callbacks=[hook], verbose_eval=False)
        hook.close()
        rounds = 5
    else:
        old, booster, hook = _refresh_run(out_dir, include=["metrics", "trees", "predictions", "labels"])
        rounds = 12
    assert _problems(smd_log) == []
    assert not hook.disabled
    trial = create_trial(out_dir)
    assert trial.tensor("trees/Node").steps() == list(range(rounds))
    final = booster.trees_to_dataframe()
    for step in range(rounds):
        # the trees of round `step`, numbered as in the whole model, as the refreshed model holds them
        layer = final[final["Tree"] // trees_per_round == step]
        assert trial.tensor("trees/Tree").value(step).tolist() == layer["Tree"].tolist()
        assert trial.tensor("trees/ID").value(step).tolist() == layer["ID"].tolist()
        leaves = layer["Feature"] == "Leaf"
        np.testing.assert_allclose(trial.tensor("trees/Gain").value(step)[leaves.to_numpy()],
                                   layer.loc[leaves, "Gain"].to_numpy(), rtol=1e-6)
    # the structure is the old model's (refresh keeps it): same nodes, depth from the saved links
    assert trial.tensor("trees/Node").value(rounds - 1).tolist() == \
        old.trees_to_dataframe().query(f"Tree // {trees_per_round} == {rounds - 1}")["Node"].tolist()


def test_a_sound_refresh_run_gets_a_verdict_with_tree_depth_judged(tmp_path, smd_log):
    out_dir = str(tmp_path / "refresh")
    _refresh_run(out_dir, rounds_old=60, rounds_new=60, eta=0.2)
    assert _problems(smd_log) == []
    code, rules = _verdicts(out_dir)
    assert rules["TreeDepth"]["status"] == "NoIssuesFound", rules["TreeDepth"]
    statuses = {name: r["status"] for name, r in rules.items()}
    assert "NotEvaluated" not in statuses.values() and code == 0, rules
