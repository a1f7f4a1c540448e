"""LabelLeak on real XGBoost runs: a feature computed from the label makes the first round separate the
held-out classes; the same data without it, and models whose first round says nothing of a leak, stay quiet."""

import numpy as np
import pytest

from smdebug.rules import run_rules
from smdebug.rules.generic.label_leak import one_vs_rest_auc
from smdebug.rules.rule_configs import RECOMMENDED, collections_for

xgb = pytest.importorskip("xgboost")
smd = pytest.importorskip("smdebug.xgboost")


def _table(n, classes, seed, leak):
    """Rows whose label is a noisy function of 6 features (a task no single round solves); with ``leak``, a
    seventh column is the label plus a little noise."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 6))
    score = x @ rng.normal(size=6) + 1.5 * rng.normal(size=n)
    edges = np.quantile(score, np.linspace(0, 1, classes + 1)[1:-1])
    y = np.searchsorted(edges, score).astype(float)
    if leak:
        x = np.hstack([x, (y + 0.05 * rng.normal(size=n))[:, None]])
    return x, y


def _train(path, params, leak, classes=2, rounds=8, held_out=400, save_config=None, xgb_model=None):
    x, y = _table(1200 + held_out, classes, 0, leak)
    dtrain = xgb.DMatrix(x[:1200], label=y[:1200])
    dvalid = xgb.DMatrix(x[1200:], label=y[1200:])
    hook = smd.Hook(out_dir=str(path), include_collections=["labels", "predictions", "trees", "metrics"],
                    save_config=save_config or smd.SaveConfig(save_interval=1), validation_data=dvalid)
    booster = xgb.train({"nthread": 1, "max_depth": 4, **params}, dtrain, num_boost_round=rounds,
                        evals=[(dtrain, "train"), (dvalid, "validation")], callbacks=[hook], xgb_model=xgb_model,
                        verbose_eval=False)
    hook.close()
    return booster


def _verdict(path):
    result = run_rules(str(path), rules=["LabelLeak"], ended=True)
    rule = result.rules[0]
    return rule.status, (rule.findings[0].reason if rule.findings else rule.detail) or ""


def test_one_vs_rest_auc_counts_ties_as_half():
    rng = np.random.default_rng(1)
    scores = rng.integers(0, 5, size=60).astype(float)  # many ties
    positive = rng.random(60) < 0.4
    pos, neg = scores[positive], scores[~positive]
    pairs = (pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean()
    assert one_vs_rest_auc(scores, positive) == pytest.approx(pairs)
    assert one_vs_rest_auc(np.arange(10.0), np.arange(10) >= 5) == 1.0


@pytest.mark.parametrize("objective,classes", [("binary:logistic", 2), ("binary:logitraw", 2),
                                               ("multi:softprob", 4), ("multi:softmax", 4)])
def test_a_leaked_label_is_found_at_the_first_round(tmp_path, objective, classes):
    params = {"objective": objective, **({"num_class": classes} if objective.startswith("multi") else {})}
    _train(tmp_path / "leak", params, leak=True, classes=classes)
    status, reason = _verdict(tmp_path / "leak")
    assert status == "IssuesFound", reason
    assert "first round" in reason and "on one feature, f6:" in reason, reason  # names the leaked column

    _train(tmp_path / "clean", params, leak=False, classes=classes)
    status, reason = _verdict(tmp_path / "clean")
    assert status == "NoIssuesFound", reason


def test_one_informative_feature_with_a_noisy_label_is_no_leak(tmp_path):
    """The label is one feature plus noise: the first round splits on it alone, but the tree keeps finding gain
    in more cuts of it (the label's probability ramps), where a leak's one cut leaves pure children."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3000, 6))
    y = (x[:, 0] + 0.3 * rng.normal(size=3000) > 0).astype(float)
    hook = smd.Hook.recommended(str(tmp_path))
    dtrain, dvalid = xgb.DMatrix(x[:2000], label=y[:2000]), xgb.DMatrix(x[2000:], label=y[2000:])
    xgb.train({"nthread": 1, "objective": "binary:logistic"}, dtrain, 10,
              evals=[(dtrain, "train"), (dvalid, "validation")], callbacks=[hook], verbose_eval=False)
    hook.close()
    status, reason = _verdict(tmp_path)
    assert status == "NoIssuesFound", reason


def test_without_the_first_rounds_trees_the_run_is_not_evaluated(tmp_path):
    x, y = _table(1600, 2, 0, leak=True)
    hook = smd.Hook(out_dir=str(tmp_path), include_collections=["labels", "predictions"],
                    save_config=smd.SaveConfig(save_interval=1), validation_data=xgb.DMatrix(x[1200:], label=y[1200:]))
    xgb.train({"nthread": 1, "objective": "binary:logistic"}, xgb.DMatrix(x[:1200], label=y[:1200]), 4,
              callbacks=[hook])
    hook.close()
    status, reason = _verdict(tmp_path)
    assert status == "NotEvaluated" and "needs the first round's trees" in reason, reason


def test_recommended_for_xgboost_runs(tmp_path):
    assert "LabelLeak" in RECOMMENDED["xgboost"]
    # what a hook saving this rule's collections alone needs: the first round's trees too
    assert set(collections_for(["LabelLeak"], "xgboost")) == {"labels", "predictions", "trees"}
    _train(tmp_path, {"objective": "binary:logistic"}, leak=True)
    result = run_rules(str(tmp_path), ended=True)
    assert {r.name: r.status for r in result.rules}["LabelLeak"] == "IssuesFound"


@pytest.mark.parametrize("params,says", [
    ({"objective": "rank:pairwise"}, "rank:pairwise ranks rows within each query"),
    ({"objective": "binary:logistic", "num_parallel_tree": 4, "subsample": 0.8, "colsample_bynode": 0.8},
     "random forest"),
    ({"objective": "binary:logistic", "booster": "gblinear"}, "gblinear"),
    ({"objective": "binary:logistic", "max_depth": 1}, "stumps"),
])
def test_first_rounds_that_say_nothing_of_a_leak_are_not_judged(tmp_path, params, says):
    _train(tmp_path, params, leak=True)
    status, reason = _verdict(tmp_path)
    assert status == "NotApplicable" and says in reason, reason


def test_a_continued_model_is_not_judged(tmp_path):
    """xgb_model=: the hook records the rounds the model had; its step 0 is no first round."""
    booster = _train(tmp_path / "first", {"objective": "binary:logistic"}, leak=False, rounds=20)
    _train(tmp_path / "more", {"objective": "binary:logistic"}, leak=False, xgb_model=booster)
    status, reason = _verdict(tmp_path / "more")
    assert status == "NotApplicable" and "continues a model trained for 20 rounds" in reason, reason


def test_too_few_held_out_rows_per_class_is_said(tmp_path):
    _train(tmp_path, {"objective": "multi:softprob", "num_class": 3}, leak=True, classes=3, held_out=45)
    status, reason = _verdict(tmp_path)
    # the held-out rows are the same at every round: too few is the run's nature, not missing data
    assert status == "NotApplicable" and "min_class_samples=20" in reason, reason
    # a lower bar is the user's call
    result = run_rules(str(tmp_path), rules=[("LabelLeak", {"min_class_samples": "10"})], ended=True)
    assert result.rules[0].status == "IssuesFound"


