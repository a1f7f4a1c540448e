"""A booster evaluated on its own training rows under the name "validation" (or trained on the validation set):
its "validation" logloss fell to 0.011 on labels with 20% noise, and every rule said no issues. The training and
validation metrics were equal at every round; LabelLeak now says the two evaluation sets hold the same rows. A
booster validated on real held-out rows, and one whose two sets share some rows only, are not told so."""

from __future__ import annotations

import numpy as np
import pytest

xgb = pytest.importorskip("xgboost")

import smdebug.xgboost as smd  # noqa: E402
from smdebug.rules import run_rules  # noqa: E402
from smdebug.rules.results import ISSUES  # noqa: E402


def _data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 6))
    y = (x[:, 0] + x[:, 1] > 0).astype(int)
    flip = rng.random(n) < 0.2  # (noisy labels: a held-out logloss cannot reach 0)
    return x, np.where(flip, 1 - y, y)


def _train(out, train_rows, valid_rows, rounds=40):
    x, y = _data()
    dtrain = xgb.DMatrix(x[train_rows], label=y[train_rows])
    dvalid = xgb.DMatrix(x[valid_rows], label=y[valid_rows])
    hook = smd.Hook.recommended(str(out))
    xgb.train({"objective": "binary:logistic", "max_depth": 4, "nthread": 1}, dtrain, num_boost_round=rounds,
              evals=[(dtrain, "train"), (dvalid, "validation")], callbacks=[hook], verbose_eval=False)
    hook.close()
    return str(out)


def _verdict(run):
    return run_rules(run, ["LabelLeak"]).rules[0]


def test_a_validation_set_that_is_the_training_set_is_a_finding(tmp_path):
    rows = np.arange(400)
    r = _verdict(_train(tmp_path / "run", rows, rows))
    assert r.status == ISSUES, (r.status, r.detail)
    reason = r.findings[-1].reason
    assert reason.startswith("train-logloss and validation-logloss are equal at every one of the 40 rounds"), reason
    assert "hold the same rows" in reason and "validation set the training set" in reason, reason


def test_held_out_rows_and_overlapping_sets_are_not(tmp_path):
    for name, valid in [("held_out", np.arange(400, 600)), ("overlap", np.arange(300, 500))]:
        r = _verdict(_train(tmp_path / name, np.arange(400), valid))
        assert all("same rows" not in f.reason for f in r.findings), (name, r.findings[0].reason)
