"""LabelLeak on regressions: a column computed from the target makes the first round's tree cut that column
alone and rank the held-out rows as their labels; healthy regressions (Friedman's, counts) stay quiet."""

import numpy as np
import pytest

from smdebug.rules import run_rules
from smdebug.rules.generic.label_leak import rank_correlation

xgb = pytest.importorskip("xgboost")
smd = pytest.importorskip("smdebug.xgboost")


def _friedman(n, seed):
    """Friedman's first regression task (positive targets, 3 to 28, noise sd 1)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(size=(n, 8))
    y = 10 * np.sin(np.pi * x[:, 0] * x[:, 1]) + 20 * (x[:, 2] - 0.5) ** 2 + 10 * x[:, 3] + 5 * x[:, 4]
    return x, np.abs(y + rng.normal(size=n)), rng


def _run(path, x, y, params, rounds=12):
    dtrain, dvalid = xgb.DMatrix(x[:900], label=y[:900]), xgb.DMatrix(x[900:], label=y[900:])
    hook = smd.Hook.recommended(str(path), validation_data=dvalid)
    xgb.train({"max_depth": 4, "nthread": 1, **params}, dtrain, rounds,
              evals=[(dtrain, "train"), (dvalid, "validation")], callbacks=[hook], verbose_eval=False)
    hook.close()


def _verdict(path):
    result = run_rules(str(path), rules=["LabelLeak"], ended=True)
    rule = result.rules[0]
    return rule.status, (rule.findings[0].reason if rule.findings else rule.detail) or ""


def test_rank_correlation_averages_ties():
    a = np.array([1.0, 2.0, 2.0, 3.0])
    assert rank_correlation(a, a) == pytest.approx(1.0)
    assert rank_correlation(a, -a) == pytest.approx(-1.0)
    assert rank_correlation(a, np.ones(4)) is None


@pytest.mark.parametrize("objective,depth", [("reg:squarederror", 3), ("reg:squarederror", 6), ("reg:tweedie", 4)])
def test_a_leaked_target_in_a_regression_is_found(tmp_path, objective, depth):
    x, y, rng = _friedman(1300, 0)
    _run(tmp_path / "leak", np.hstack([x, (y + 0.05 * rng.normal(size=y.size))[:, None]]), y,
         {"objective": objective, "max_depth": depth})
    status, reason = _verdict(tmp_path / "leak")
    assert status == "IssuesFound", reason
    assert "rank correlation" in reason and "from one feature, f8:" in reason, reason

    _run(tmp_path / "clean", x, y, {"objective": objective, "max_depth": depth})
    status, reason = _verdict(tmp_path / "clean")
    assert status == "NoIssuesFound", reason


def test_a_healthy_count_regression_stays_quiet(tmp_path):
    x, _, rng = _friedman(1300, 1)
    counts = rng.poisson(np.exp(0.8 * x[:, 0] + 0.5 * x[:, 1])).astype(float)
    _run(tmp_path, x, counts, {"objective": "count:poisson", "max_depth": 3})
    status, reason = _verdict(tmp_path)
    assert status == "NoIssuesFound", reason
