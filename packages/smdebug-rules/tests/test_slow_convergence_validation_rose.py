"""SlowConvergence on a training loss still falling at the end while its validation loss rose at every pass: labels
shuffled apart from their inputs, a model slowly memorising them. "Still falling when training ended ... only 8% of
the initial loss is gone" read as "train longer" (probe 18a W3); the finding now says that the validation loss
never improved, so more training would not help. A learnable task still falling at the end keeps the plain words."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

import smdebug.pytorch as smd
from smdebug.rules.results import ISSUES

from _judging import judged

pytestmark = pytest.mark.usefixtures("torch_one_thread")


def train(path, shuffled: bool, epochs: int = 15) -> str:
    """A small MLP under Adam at 3e-4 (slow), 512 training rows in batches of 32, a validation pass of 256 rows
    after each epoch; the class is the signs of two features, or (``shuffled``) a class drawn apart from them."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(768, 20, generator=g)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long() * 2
    if shuffled:
        y = y[torch.randperm(len(y), generator=g)]
    model, loss_fn = nn.Sequential(nn.Linear(20, 128), nn.ReLU(), nn.Linear(128, 4)), nn.CrossEntropyLoss()
    opt = torch.optim.Adam(model.parameters(), lr=3e-4)
    hook = smd.Hook.recommended(str(path))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    for _ in range(epochs):
        hook.set_mode(smd.modes.TRAIN)
        for i in range(0, 512, 32):
            opt.zero_grad()
            loss_fn(model(x[i:i + 32]), y[i:i + 32]).backward()
            opt.step()
        hook.set_mode(smd.modes.EVAL)
        with torch.no_grad():
            for i in range(512, 768, 128):
                loss_fn(model(x[i:i + 128]), y[i:i + 128])
    hook.close()
    return str(path)


def test_memorising_shuffled_labels_is_not_told_to_train_longer(tmp_path):
    r = judged(train(tmp_path / "run", shuffled=True), "SlowConvergence")
    assert r.status == ISSUES, (r.status, r.detail)
    reason = r.findings[0].reason
    assert "was still falling when training ended" in reason, reason
    assert "but its validation loss never improved: it rose from " in reason, reason
    assert "training longer would not help" in reason, reason


def test_a_learnable_task_still_falling_keeps_the_plain_words(tmp_path):
    r = judged(train(tmp_path / "run", shuffled=False), "SlowConvergence")
    assert r.status == ISSUES, (r.status, r.detail)  # (Adam at 3e-4 for 240 steps: still falling steadily)
    assert "never improved" not in r.findings[0].reason, r.findings[0].reason
