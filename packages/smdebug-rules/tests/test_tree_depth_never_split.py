"""TreeDepth on boosters whose trees never split (a constant model, whatever its metric did) and on healthy
boosters whose later rounds are single leaves once they converged: the first is a finding naming what to check,
the second is not."""

import numpy as np
import pytest

from smdebug.rules import run_rules

xgb = pytest.importorskip("xgboost")
smd = pytest.importorskip("smdebug.xgboost")


def _run(path, params, weight=None, rounds=16):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(800, 4))
    y = (x[:, 0] + 0.3 * rng.normal(size=800) > 0).astype(float)
    dtrain = xgb.DMatrix(x[:600], label=y[:600], weight=None if weight is None else np.full(600, weight))
    dvalid = xgb.DMatrix(x[600:], label=y[600:])
    hook = smd.Hook.recommended(str(path), validation_data=dvalid)
    xgb.train({"objective": "binary:logistic", "max_depth": 3, "nthread": 1, **params}, dtrain, rounds,
              evals=[(dtrain, "train"), (dvalid, "validation")], callbacks=[hook], verbose_eval=False)
    hook.close()


def _verdict(path):
    result = run_rules(str(path), rules=["TreeDepth"], ended=True)
    rule = result.rules[0]
    return rule.status, (rule.findings[0].reason if rule.findings else rule.detail) or ""


def test_a_booster_that_never_split_is_a_finding(tmp_path):
    """Row weights of 1e-4: the training rows' summed hessian (0.015) is below min_child_weight (1)."""
    _run(tmp_path, {}, weight=1e-4)
    status, reason = _verdict(tmp_path)
    assert status == "IssuesFound", reason
    assert "never split" in reason and "16 rounds trained" in reason, reason
    assert "min_child_weight (1)" in reason and "gamma (0)" in reason and "base_score (" in reason, reason


def test_a_booster_that_stopped_splitting_once_converged_is_no_finding(tmp_path):
    """gamma 10: the first rounds split, the last ones (gain below gamma) are single leaves."""
    _run(tmp_path, {"gamma": 10})
    status, reason = _verdict(tmp_path)
    assert status == "NoIssuesFound", reason


def test_a_short_run_is_not_judged_for_it(tmp_path):
    _run(tmp_path, {}, weight=1e-4, rounds=5)
    status, reason = _verdict(tmp_path)
    assert status == "NoIssuesFound", reason


def test_a_never_split_booster_with_row_offsets_is_said_to_use_no_feature(tmp_path):
    """base_margin given per row: the predictions differ between rows, but no tree looked at a feature."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(800, 4))
    y = (x[:, 0] + 0.3 * rng.normal(size=800) > 0).astype(float)
    margin = rng.normal(size=800)
    dtrain = xgb.DMatrix(x[:600], label=y[:600], weight=np.full(600, 1e-4), base_margin=margin[:600])
    dvalid = xgb.DMatrix(x[600:], label=y[600:], base_margin=margin[600:])
    hook = smd.Hook.recommended(str(tmp_path), validation_data=dvalid)
    xgb.train({"objective": "binary:logistic", "max_depth": 3, "nthread": 1}, dtrain, 12, callbacks=[hook])
    hook.close()
    status, reason = _verdict(tmp_path)
    assert status == "IssuesFound" and "uses none of its features" in reason, reason
