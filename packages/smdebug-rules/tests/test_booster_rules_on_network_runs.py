"""TreeDepth and FeatureImportanceOverweight named on a network's run (``smdebug rules run RUN --rule TreeDepth``,
or every rule at once) say that they judge boosted models: NotApplicable, naming the framework that wrote the run.
They ended NotEvaluated ("looked for tensor 'trees/Node' -> none", exit 3), as if the run lacked data it should
hold, with a WARNING to save a collection a network cannot have. An XGBoost run without its trees still says
what it lacks."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

import smdebug.pytorch as smd
from smdebug.rules import run_rules
from smdebug.rules.results import NOT_APPLICABLE, NOT_EVALUATED

from _xgboost_runs import train_xgboost, xgboost_data

pytestmark = pytest.mark.usefixtures("torch_one_thread")


def test_booster_rules_on_a_pytorch_run_are_not_applicable(tmp_path):
    torch.manual_seed(0)
    model, loss_fn = nn.Linear(3, 2), nn.CrossEntropyLoss()
    hook = smd.Hook.recommended(str(tmp_path))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(5):
        opt.zero_grad()
        loss_fn(model(torch.randn(8, 3)), torch.randint(0, 2, (8,))).backward()
        opt.step()
    hook.close()
    for r in run_rules(str(tmp_path), ["TreeDepth", "FeatureImportanceOverweight"]).rules:
        assert r.status == NOT_APPLICABLE, (r.name, r.status, r.detail)
        assert "written by PyTorch" in r.detail and "XGBoost model" in r.detail, r.detail


def test_an_xgboost_run_without_its_trees_still_says_what_it_lacks(tmp_path):
    x, y = xgboost_data()
    path = train_xgboost(str(tmp_path), {"objective": "binary:logistic", "max_depth": 3}, x, y,
                         collections=("labels", "predictions"))
    tree_depth, importance = run_rules(path, ["TreeDepth", "FeatureImportanceOverweight"]).rules
    assert tree_depth.status == NOT_EVALUATED and "trees/Node" in tree_depth.detail, tree_depth
    assert importance.status == NOT_EVALUATED and "feature_importance" in importance.detail, importance
