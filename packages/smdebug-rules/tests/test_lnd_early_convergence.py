"""LossNotDecreasing on an evaluation set's metric of a model that converges within the rule's first window:
boosting at eta 0.3 reaches its plateau in a few rounds, and a small validation set's error rate then sits on a
step of 1/n for the rest of the run. The plateau was the "initial" value, so the run read as one that never
learned (probe 10: an XGBoost wine classifier, validation-merror .125 -> .083 by round 4). A booster that really
makes no progress (eta 1e-4) still fires."""

from __future__ import annotations

import numpy as np
import pytest

from smdebug.rules.results import ISSUES, NO_ISSUES

xgb = pytest.importorskip("xgboost")

import smdebug.xgboost as smd  # noqa: E402

from _judging import judged  # noqa: E402


def three_classes(n, seed):
    """Three Gaussian classes in 6 features, overlapping a little: a few percent of a validation set stays wrong."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    x = rng.normal(size=(n, 6)) + 2.6 * np.eye(3, 6)[y]
    return x, y


def run(path, eta: float) -> str:
    (x, y), (xv, yv) = three_classes(300, 0), three_classes(60, 1)  # validation-merror .05 -> .033 by round 3
    train, valid = xgb.DMatrix(x, label=y), xgb.DMatrix(xv, label=yv)
    hook = smd.Hook.recommended(str(path))
    params = {"objective": "multi:softmax", "num_class": 3, "eta": eta, "max_depth": 3, "eval_metric": "merror",
              "nthread": 1, "seed": 0}
    xgb.train(params, train, num_boost_round=50, evals=[(train, "train"), (valid, "validation")], callbacks=[hook])
    hook.close()
    return str(path)


def test_a_metric_at_its_plateau_from_the_first_rounds_is_no_stall(tmp_path):
    r = judged(run(tmp_path / "run", eta=0.3), "LossNotDecreasing")
    assert r.status == NO_ISSUES, (r.status, [f.reason for f in r.findings])


def test_a_booster_that_learns_nothing_still_fires(tmp_path):
    r = judged(run(tmp_path / "run", eta=1e-4), "LossNotDecreasing")
    assert r.status == ISSUES, (r.status, r.detail)
    assert "did not decrease" in r.findings[0].reason, r.findings[0].reason
