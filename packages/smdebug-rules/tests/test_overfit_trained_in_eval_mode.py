"""A loop that calls ``model.eval()`` for its validation pass and never ``model.train()`` again trains on with Dropout
off and BatchNorm on its running statistics. The PyTorch hook, following the model's training flag, saves those
steps as EVAL steps and records that an optimizer stepped the model in eval() mode (``_meta.trained_in_eval``); every
rule passed the run (probe 19a F1: held-out accuracy 0.806 against 0.854). Overfit, the rule of training against
validation, now says so; the same loop with ``model.train()`` does not."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

import smdebug.pytorch as smd
from smdebug.rules.results import ISSUES

from _judging import judged
from _torch_runs import classification_data

pytestmark = pytest.mark.usefixtures("torch_one_thread")


def run(path, back_to_train: bool) -> str:
    torch.manual_seed(0)
    x, y = classification_data(512)
    xv, yv = classification_data(128, seed=1)
    model = nn.Sequential(nn.Linear(10, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 3))
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    hook = smd.Hook.recommended(str(path))  # (no set_mode: the hook reads the mode from model.training)
    hook.register_module(model)
    hook.register_loss(loss_fn)
    for epoch in range(4):
        if back_to_train or epoch == 0:
            model.train()
        for i in range(0, 512, 64):
            opt.zero_grad()
            loss_fn(model(x[i:i + 64]), y[i:i + 64]).backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            loss_fn(model(xv), yv)
    hook.close()
    return str(path)


def test_training_left_in_eval_mode_is_a_finding(tmp_path):
    r = judged(run(tmp_path / "run", back_to_train=False), "Overfit")
    assert r.status == ISSUES, (r.status, r.detail)
    reason = r.findings[0].reason
    assert reason.startswith("the model trained in eval() mode: an optimizer stepped it at step "), reason
    assert "call model.train() after each validation pass" in reason, reason


def test_training_switched_back_to_train_mode_is_not(tmp_path):
    r = judged(run(tmp_path / "run", back_to_train=True), "Overfit")
    assert not any("eval() mode" in f.reason for f in r.findings), [f.reason for f in r.findings[:2]]
    assert "eval() mode" not in (r.detail or ""), r.detail
