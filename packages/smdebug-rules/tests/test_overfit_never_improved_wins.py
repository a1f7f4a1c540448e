"""Overfit names a validation loss that never improved "no generalisation", not "overfitting" (probe 14a F3).

Validation labels misaligned with their inputs (shuffled apart): the validation loss is at chance from the first
evaluation and climbs as the model grows confident, while the training loss falls. The overfitting conditions were
tested first and called it "overfitting" (best median = the first one), which sends the user to regularisation;
the never-improved condition, which names the validation data, wins when the validation loss never improved."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from _judging import judged  # noqa: E402
from _torch_runs import classification_data, mlp, train_torch  # noqa: E402

pytestmark = pytest.mark.usefixtures("torch_one_thread")


def test_misaligned_validation_labels_are_no_generalisation_not_overfitting(tmp_path):
    x, y = classification_data(n=400, classes=2, seed=3)
    xv, yv = x[300:], y[300:][torch.randperm(100, generator=torch.Generator().manual_seed(1))]  # misaligned
    run = train_torch(tmp_path / "run", mlp(classes=2, hidden=32, seed=0), (x[:300], y[:300]), steps=240, lr=0.01,
                      optimizer="adam", batch_size=30, loss_fn=nn.CrossEntropyLoss(), eval_data=(xv, yv),
                      eval_every=12, include_collections=("losses",))
    r = judged(run, "Overfit")
    assert r.status == "IssuesFound", (r.status, r.detail)
    reason = r.findings[0].reason
    assert "no generalisation: the validation loss never improved" in reason, reason
    assert "overfitting" not in reason and "misaligned" in reason, reason
