"""Confusion on XGBoost runs whose objective is no classification's: a ranking's relevance grades, a
regression's or a count's integer targets are no class ids, and whatever the booster's scores round to is no
predicted class. Such runs are NotApplicable, with the objective named, as ClassImbalance already said; a
classifier is still judged."""

from __future__ import annotations

import numpy as np
import pytest

from smdebug.rules import run_rules
from smdebug.rules.results import ISSUES, NO_ISSUES, NOT_APPLICABLE

xgb = pytest.importorskip("xgboost")


def verdict(path, rule="Confusion"):
    r = run_rules(str(path), [(rule, {})]).rules[0]
    assert r.error is None, r.error
    return r


def train(path, params, x, y, rounds=8, group=None):
    """A real booster whose hook saves the validation labels and predictions at every round (and after the
    last, as for the trained model)."""
    import smdebug.xgboost as smd

    data = xgb.DMatrix(x, label=y)
    if group is not None:
        data.set_group(group)
    hook = smd.Hook(out_dir=str(path), save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["labels", "predictions"], validation_data=data)
    xgb.train({"nthread": 1, **params}, data, num_boost_round=rounds, callbacks=[hook])
    hook.close()
    return path


def clicks(queries=60, per_query=10, seed=0):
    """Queries of ``per_query`` documents each, clicked (1) or not (0) by a noisy linear relevance."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(queries * per_query, 5))
    relevance = x @ np.array([1.5, -1.0, 0.5, 0.0, 0.0]) + rng.normal(size=len(x))
    return x, (relevance > 1.0).astype(np.float32), [per_query] * queries


@pytest.mark.parametrize("objective", ["rank:pairwise", "rank:ndcg", "rank:map"])
def test_a_ranking_of_clicks_is_not_applicable_and_names_its_objective(tmp_path, objective):
    x, y, group = clicks()
    path = train(tmp_path, {"objective": objective, "max_depth": 3, "eta": 0.3}, x, y, group=group)
    for rule in ("Confusion", "ClassImbalance"):
        r = verdict(path, rule)
        assert r.status == NOT_APPLICABLE, (rule, r.status, r.detail, r.findings)
        assert f"a ranking (XGBoost objective {objective})" in r.detail, (rule, r.detail)


@pytest.mark.parametrize("objective, kind", [("reg:squarederror", "a regression"),
                                             ("count:poisson", "a count regression")])
def test_regressions_on_integer_targets_are_not_applicable(tmp_path, objective, kind):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(600, 4))
    y = np.minimum(rng.poisson(np.exp(0.6 * x[:, 0])), 4).astype(np.float32)  # counts 0..4
    path = train(tmp_path, {"objective": objective, "max_depth": 3}, x, y)
    r = verdict(path)
    assert r.status == NOT_APPLICABLE, (r.status, r.detail, r.findings)
    assert f"{kind} (XGBoost objective {objective})" in r.detail, r.detail


def test_classifiers_are_still_judged(tmp_path):
    rng = np.random.default_rng(4)
    x = rng.normal(size=(600, 4))
    y = (x[:, 0] + 0.3 * rng.normal(size=600) > 0).astype(np.float32)
    for name, objective in (("binary", "binary:logistic"), ("reg_logistic", "reg:logistic")):
        r = verdict(train(tmp_path / name, {"objective": objective, "max_depth": 3}, x, y))
        assert r.status == NO_ISSUES, (name, r.status, r.detail, r.findings)
    # labels unrelated to the features: the trained model mispredicts a class, and Confusion says so
    noise = rng.permutation(y)
    r = verdict(train(tmp_path / "noise", {"objective": "binary:logistic", "max_depth": 2, "eta": 0.05}, x, noise,
                      rounds=3))
    assert r.status == ISSUES, (r.status, r.detail)
