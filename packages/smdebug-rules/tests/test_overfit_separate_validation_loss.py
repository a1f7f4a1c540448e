"""Overfit and Overtraining when training and validation use two instances of a loss (probe 17a F2).

Training with ``CrossEntropyLoss(label_smoothing=0.1)`` and validating with a plain ``CrossEntropyLoss()``, both
registered, saves two tensors -- ``CrossEntropyLoss_output_0`` in TRAIN mode only and
``CrossEntropyLoss_1_output_0`` in EVAL mode only -- and the rules comparing validation with training found no loss
with both: a healthy run ended NotEvaluated (exit 3). They are now read as one loss. Real PyTorch trainings.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

import smdebug.pytorch as smd
from smdebug.rules import run_rules
from smdebug.rules.results import ISSUES, NO_ISSUES


def data(n: int, seed: int, noise: float):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 10, generator=g)
    y = (x[:, 0] + x[:, 1] > 0).long() + (x[:, 2] > 0.7).long()
    flip = torch.rand(n, generator=g) < noise
    y[flip] = torch.randint(0, 3, (int(flip.sum()),), generator=g)
    return x, y


def train(out_dir, train_rows: int, epochs: int, noise: float, width: int, scalars=None):
    """Train with ``CrossEntropyLoss(label_smoothing=0.1)``, validate with a plain ``CrossEntropyLoss()``, both
    registered; or, with ``scalars`` (a TRAIN-mode and an EVAL-mode name), one loss registered with nothing, its
    values saved by the loop (``hook.save_scalar``), as a compiled training step must (probe 18a F6:
    ``train_loss`` and ``val_loss`` left Overfit NotEvaluated)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, width), nn.ReLU(), nn.Linear(width, 3))
    train_loss, validation_loss = nn.CrossEntropyLoss(label_smoothing=0.1 if scalars is None else 0.0), \
        nn.CrossEntropyLoss()
    hook = smd.Hook.recommended(str(out_dir))
    hook.register_module(model)
    if scalars is None:
        hook.register_loss(train_loss)
        hook.register_loss(validation_loss)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    x, y = data(train_rows, seed=1, noise=noise)
    vx, vy = data(300, seed=2, noise=noise)
    for _ in range(epochs):
        hook.set_mode(smd.modes.TRAIN)
        model.train()
        for start in range(0, train_rows, 32):
            optimizer.zero_grad()
            loss = train_loss(model(x[start:start + 32]), y[start:start + 32])
            loss.backward()
            optimizer.step()
            if scalars is not None:
                hook.save_scalar(scalars[0], loss.item())
        hook.set_mode(smd.modes.EVAL)
        model.eval()
        with torch.no_grad():
            validation = validation_loss(model(vx), vy)
        if scalars is not None:
            hook.save_scalar(scalars[1], validation.item())
    hook.close()


def judged(run):
    return {r.name: r for r in run_rules(str(run), rules=["Overfit", "Overtraining"], ended=True).rules}


#: (how the losses are saved, the name the pair is read under)
HOW = [(None, "CrossEntropyLoss_output_0 (training) / CrossEntropyLoss_1_output_0 (validation): "),
       (("train_loss", "val_loss"), "scalar/train_loss (training) / scalar/val_loss (validation): ")]


@pytest.mark.parametrize("scalars, pair", HOW)
def test_a_healthy_run_validated_with_another_loss_tensor_is_judged(tmp_path, scalars, pair):
    train(tmp_path / "run", train_rows=1024, epochs=12, noise=0.0, width=32, scalars=scalars)
    for name, result in judged(tmp_path / "run").items():
        assert result.status == NO_ISSUES, (name, result)


@pytest.mark.parametrize("scalars, pair", HOW)
def test_overfitting_seen_through_two_loss_tensors(tmp_path, scalars, pair):
    train(tmp_path / "run", train_rows=64, epochs=150, noise=0.2, width=256, scalars=scalars)
    results = judged(tmp_path / "run")
    assert results["Overfit"].status == ISSUES, results["Overfit"]
    reason = results["Overfit"].findings[0].reason
    assert reason.startswith(pair), reason


def test_names_that_say_other_data_are_not_joined(tmp_path):
    # a TRAIN-mode "val_loss" and an EVAL-mode "train_loss" say the other data: no pair, nothing to compare
    train(tmp_path / "run", train_rows=256, epochs=8, noise=0.0, width=16, scalars=("val_loss", "train_loss"))
    assert judged(tmp_path / "run")["Overfit"].status == "NotEvaluated"
