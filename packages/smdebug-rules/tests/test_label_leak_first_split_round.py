"""LabelLeak on boosters whose first round is a single leaf (binary:hinge with a majority of positives: every
row already has margin past the hinge, so round 0 finds no gain) and on held-out sets too small to judge: the
first round that splits is judged, a leak there is found, and a healthy run is never "could not judge"."""

import numpy as np
import pytest

from smdebug.rules import run_rules

xgb = pytest.importorskip("xgboost")
smd = pytest.importorskip("smdebug.xgboost")


def _hinge_run(path, leak, rounds=14):
    """binary:hinge on a noisy linear task with 65% positives (round 0 is one leaf); with ``leak`` a column is
    the label itself."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(1400, 6))
    y = (x @ rng.normal(size=6) + 1.0 * rng.normal(size=1400) > -0.6).astype(float)
    if leak:
        x = np.hstack([x, y[:, None]])
    dtrain, dvalid = xgb.DMatrix(x[:1000], label=y[:1000]), xgb.DMatrix(x[1000:], label=y[1000:])
    hook = smd.Hook.recommended(str(path), validation_data=dvalid)
    xgb.train({"objective": "binary:hinge", "max_depth": 3, "eta": 0.1, "nthread": 1}, dtrain, rounds,
              evals=[(dtrain, "train"), (dvalid, "validation")], callbacks=[hook], verbose_eval=False)
    hook.close()


def _verdict(path, **params):
    result = run_rules(str(path), rules=[("LabelLeak", params)], ended=True)
    rule = result.rules[0]
    return rule.status, (rule.findings[0].reason if rule.findings else rule.detail) or ""


def test_a_leak_behind_a_first_round_of_leaves_is_found(tmp_path):
    _hinge_run(tmp_path, leak=True)
    status, reason = _verdict(tmp_path)
    assert status == "IssuesFound", reason
    assert "first round that split (round 1;" in reason and "on one feature, f6:" in reason, reason


def test_a_healthy_hinge_booster_is_judged(tmp_path):
    _hinge_run(tmp_path, leak=False)
    status, reason = _verdict(tmp_path)
    assert status == "NoIssuesFound", reason


def test_a_small_held_out_set_is_not_applicable_not_unjudged(tmp_path):
    """wine split 70/30: 18, 21 and 15 held-out rows per class, under min_class_samples (20) for two of them."""
    from sklearn.datasets import load_wine
    from sklearn.model_selection import train_test_split

    x, y = load_wine(return_X_y=True)
    xtr, xv, ytr, yv = train_test_split(x, y, test_size=0.3, random_state=0, stratify=y)
    dtrain, dvalid = xgb.DMatrix(xtr, label=ytr), xgb.DMatrix(xv, label=yv)
    hook = smd.Hook.recommended(str(tmp_path), validation_data=dvalid)
    xgb.train({"objective": "multi:softprob", "num_class": 3, "max_depth": 3, "nthread": 1}, dtrain, 12,
              evals=[(dtrain, "train"), (dvalid, "validation")], callbacks=[hook], verbose_eval=False)
    hook.close()
    status, reason = _verdict(tmp_path)
    assert status == "NotApplicable" and "too few held-out rows" in reason and "min_class_samples=20" in reason, \
        reason
