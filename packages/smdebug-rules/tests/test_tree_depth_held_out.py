"""TreeDepth in a run that saved a held-out metric: trees deeper than ``depth`` are a choice the data may bear.
``max_depth=10`` on thousands of rows bettered a shallower model's held-out error and fired "tree 0 has depth 10 >
depth 8" (probe 18a F3); now the depth is judged at the finished run's end, by whether the held-out metric rose
past its best. Deep trees that do overfit still fire, and a run with no held-out metric is told the risk as
before."""

from __future__ import annotations

import numpy as np
import pytest

from smdebug.rules.results import ISSUES, NO_ISSUES

xgb = pytest.importorskip("xgboost")
pytest.importorskip("smdebug.xgboost")

import smdebug.xgboost as smd  # noqa: E402

from _judging import judged  # noqa: E402


def _run(path, x, y, params, rounds, evals=True) -> str:
    n = int(len(y) * 0.75)
    dtrain, dval = xgb.DMatrix(x[:n], label=y[:n]), xgb.DMatrix(x[n:], label=y[n:])
    hook = smd.Hook.recommended(str(path), validation_data=dval)
    xgb.train({"nthread": 1, **params}, dtrain, rounds, callbacks=[hook], verbose_eval=False,
              evals=[(dtrain, "train"), (dval, "validation")] if evals else ())
    hook.close()
    return str(path)


def _smooth_regression(n=6000, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2, 2, (n, 6))
    y = np.sin(2 * x[:, 0]) * x[:, 1] + x[:, 2] ** 2 - x[:, 3] * x[:, 4] + 0.05 * rng.normal(size=n)
    return x, y


def _noisy_classes(n=300, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 8))
    y = ((x[:, 0] + 0.5 * rng.normal(size=n)) > 0).astype(int)
    flip = rng.random(n) < 0.3
    y[flip] = 1 - y[flip]
    return x, y


def test_deep_trees_that_keep_the_held_out_error_falling_are_no_fault(tmp_path):
    x, y = _smooth_regression()
    r = judged(_run(tmp_path / "deep", x, y, {"max_depth": 10, "eta": 0.1}, 60), "TreeDepth")
    assert r.status == NO_ISSUES, (r.status, r.findings)
    assert "has depth 10 > depth 8" in r.detail and "no fault" in r.detail, r.detail


def test_deep_trees_whose_held_out_metric_rises_fire_at_the_end(tmp_path):
    x, y = _noisy_classes()
    r = judged(_run(tmp_path / "overfit", x, y, {"objective": "binary:logistic", "max_depth": 12, "eta": 1.0,
                                                   "min_child_weight": 0, "eval_metric": "logloss"}, 40), "TreeDepth")
    assert r.status == ISSUES, (r.status, r.detail)
    reason = r.findings[0].reason
    assert "held-out metric rose past its best: validation-logloss" in reason and r.findings[0].step == 39, reason


def test_without_a_held_out_metric_the_depth_is_said_at_once(tmp_path):
    x, y = _smooth_regression(n=2000)
    r = judged(_run(tmp_path / "blind", x, y, {"max_depth": 10, "eta": 0.1}, 10, evals=False), "TreeDepth")
    assert r.status == ISSUES and r.findings[0].step == 0, (r.status, r.findings)
