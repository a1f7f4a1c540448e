"""Overfit judges the validation loss's rise against the noise of its validation ROWS (probe 14a F2).

Its trend test counts each evaluation as evidence, but every evaluation is of the same rows: on a small validation
set, a few rows the model gets wrong, more confidently at each evaluation, make a steady rise of the mean loss
("p = 0.001") that a validation set of other rows would not show -- a healthy model was called overfitting. Where
the run saved the predictions and labels at the EVAL steps (Hook.recommended does), the rise is tested paired over
the rows first; a model that memorised noisy training labels, whose validation loss rises on many rows, still fires,
saying so."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

import smdebug.pytorch as smd

from _judging import judged  # noqa: E402
from _torch_runs import classification_data, mlp  # noqa: E402

pytestmark = pytest.mark.usefixtures("torch_one_thread")


def validated_run(path, n_train: int, n_val: int, flip_val: int = 0, flip_train: float = 0.0, hidden: int = 32,
                  lr: float = 0.01, steps: int = 400, pos_weight: float = 0.0) -> str:
    """A 2-layer MLP under Hook.recommended, Adam, minibatches of 32, validated on the whole held-out set every 20
    steps; ``flip_val`` validation labels and a ``flip_train`` share of the training labels flipped. Cross-entropy
    over 2 classes, or with ``pos_weight`` one logit and a binary cross-entropy weighing positive rows so."""
    x, y = classification_data(n=n_train + n_val, classes=2, seed=0)
    xt, yt, xv, yv = x[:n_train], y[:n_train].clone(), x[n_train:], y[n_train:].clone()
    yv[:flip_val] = 1 - yv[:flip_val]
    flipped = int(flip_train * n_train)
    yt[:flipped] = 1 - yt[:flipped]
    model = mlp(classes=1 if pos_weight else 2, hidden=hidden, depth=2, seed=0)
    loss_fn = nn.CrossEntropyLoss()
    if pos_weight:
        loss_fn = nn.BCEWithLogitsLoss(pos_weight=torch.tensor([pos_weight]))
        yt, yv = yt.float().unsqueeze(1), yv.float().unsqueeze(1)
    hook = smd.Hook.recommended(str(path))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    for step in range(steps):
        hook.set_mode(smd.modes.TRAIN)
        start = (step * 32) % n_train
        opt.zero_grad()
        loss_fn(model(xt[start:start + 32]), yt[start:start + 32]).backward()
        opt.step()
        if (step + 1) % 20 == 0:
            hook.set_mode(smd.modes.EVAL)
            with torch.no_grad():
                loss_fn(model(xv), yv)
    hook.close()
    return str(path)


def test_a_rise_carried_by_two_mislabelled_validation_rows_is_not_overfitting(tmp_path):
    # 100 validation rows, 2 of them mislabelled: the model, right on the other 98, grows ever more confident on
    # those two, and the mean validation loss climbs steadily from its best (0.35 -> 0.80)
    r = judged(validated_run(tmp_path / "run", n_train=200, n_val=100, flip_val=2, lr=0.003), "Overfit")
    assert r.status == "NoIssuesFound", [f.reason for f in r.findings]


def test_a_model_memorising_noisy_training_labels_still_overfits_row_by_row(tmp_path):
    # 30% of 150 training labels flipped and memorised: the validation loss rises on many of its 200 rows
    r = judged(validated_run(tmp_path / "run", n_train=150, n_val=200, flip_train=0.3, hidden=64), "Overfit")
    assert r.status == "IssuesFound", (r.status, r.detail)
    reason = r.findings[0].reason
    assert "overfitting" in reason and "per row (cross-entropy of the 200 validation rows" in reason, reason
    assert "times its standard error over the rows" in reason, reason


def test_a_weighted_binary_cross_entropy_is_read_row_by_row_too(tmp_path):
    # BCEWithLogitsLoss(pos_weight=3): the weight is fitted to the saved loss at each evaluation and taken once two
    # evaluations agree on it; the two mislabelled rows' rise is then within the rows' noise, as above
    run = validated_run(tmp_path / "run", n_train=200, n_val=100, flip_val=2, lr=0.003, pos_weight=3.0)
    r = judged(run, "Overfit")
    assert r.status == "NoIssuesFound", [f.reason for f in r.findings]
