"""A validation pass's loss is its batches' losses averaged by their rows (probe 17a F1).

A DataLoader keeps a short last batch (``drop_last=False``, its default): 540 validation rows in batches of 256
are 256, 256 and 28. The hook saves each batch's mean loss; averaging the three as equals gave the 28 rows a
third of the pass's weight, and one confidently wrong digit among them read as a validation loss 80% above the
true one, rising while the true loss was flat -- Overfit fired on a healthy run. A real PyTorch run, read by the
rules' own reader of validation passes (which Overfit, Overtraining and LossNotDecreasing judge).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

import smdebug.pytorch as smd
from smdebug.rules.generic.loss_rules import SavedSteps, ValidationPasses
from smdebug.trials import create_trial

FEATURES, CLASSES = 8, 3


def data(n: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, FEATURES, generator=g)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0.5).long()
    return x, y


def train(out_dir, epochs: int, flip_tail: bool):
    """An MLP on a learnable task; validation in batches of 64, 64 and 6 rows (the last 6 mislabelled with
    ``flip_tail``: a few hard rows). Returns each pass's true validation loss (over its rows)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU(), nn.Linear(32, CLASSES))
    loss_fn = nn.CrossEntropyLoss()
    hook = smd.Hook.recommended(str(out_dir))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    x, y = data(512, seed=1)
    vx, vy = data(134, seed=2)
    if flip_tail:
        vy[-6:] = (vy[-6:] + 1) % CLASSES
    true_losses = []
    for _ in range(epochs):
        hook.set_mode(smd.modes.TRAIN)
        model.train()
        for start in range(0, len(x), 64):
            optimizer.zero_grad()
            loss = loss_fn(model(x[start:start + 64]), y[start:start + 64])
            loss.backward()
            optimizer.step()
        hook.set_mode(smd.modes.EVAL)
        model.eval()
        total = 0.0
        with torch.no_grad():
            for start in range(0, len(vx), 64):
                total += loss_fn(model(vx[start:start + 64]), vy[start:start + 64]).item() * len(vx[start:start + 64])
        true_losses.append(total / len(vx))
    hook.close()
    return true_losses


def test_a_pass_is_its_batches_losses_averaged_by_their_rows(tmp_path):
    true_losses = train(tmp_path / "run", epochs=8, flip_tail=True)
    trial = create_trial(str(tmp_path / "run"))
    passes = ValidationPasses(trial, SavedSteps(trial), "CrossEntropyLoss_output_0")
    passes.extend(trial.steps()[-1])
    assert [p.saves for p in passes.passes] == [3] * 8
    # (the loss's inputs were saved at the first EVAL steps only: the later passes are weighted by the rows of
    # the first ones, the same loader's batches)
    saved = trial.tensor("CrossEntropyLoss_input_0").steps(mode=smd.modes.EVAL)
    assert saved[-1] < trial.mode_modestep(passes.passes[-1].first)[1]
    np.testing.assert_allclose([p.value for p in passes.passes], true_losses, rtol=1e-5)

