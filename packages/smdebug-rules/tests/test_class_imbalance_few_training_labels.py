"""ClassImbalance when the training labels saved are too few to settle the counts (probe 17a F7).

``Hook.recommended`` saves labels on a tapered schedule: with batches of 4 (or a hundred classes) a finished run
holds some 70 training labels, too few to tell a ratio above 10 from chance, and a healthy run ended NotEvaluated
(exit 3) while its first validation pass had saved hundreds. Those are judged now -- only to clear the counts,
and only when the training labels saved do not differ from them: a training set skewed on its own is never
cleared by a balanced validation set. Real PyTorch trainings.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

import smdebug.pytorch as smd
from smdebug.rules import run_rules
from smdebug.rules.results import ISSUES, NO_ISSUES, NOT_EVALUATED

CLASSES, FEATURES = 10, 16


def blobs(n: int, seed: int, shares=None):
    rng = np.random.default_rng(seed)
    centres = np.random.default_rng(7).normal(0, 3, size=(CLASSES, FEATURES))
    y = rng.choice(CLASSES, size=n, p=shares) if shares is not None else np.arange(n) % CLASSES
    x = centres[y] + rng.normal(size=(n, FEATURES))
    return torch.tensor(x, dtype=torch.float32), torch.tensor(y)


def train(out_dir, shares=None, epochs: int = 3):
    """Batches of 4; a validation pass of 300 balanced rows after each epoch."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU(), nn.Linear(32, CLASSES))
    loss_fn = nn.CrossEntropyLoss()
    hook = smd.Hook.recommended(str(out_dir))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    x, y = blobs(400, seed=1, shares=shares)
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(0))
    x, y = x[order], y[order]
    vx, vy = blobs(300, seed=2)
    for _ in range(epochs):
        hook.set_mode(smd.modes.TRAIN)
        model.train()
        for start in range(0, len(x), 4):
            optimizer.zero_grad()
            loss_fn(model(x[start:start + 4]), y[start:start + 4]).backward()
            optimizer.step()
        hook.set_mode(smd.modes.EVAL)
        model.eval()
        with torch.no_grad():
            for start in range(0, len(vx), 150):
                loss_fn(model(vx[start:start + 150]), vy[start:start + 150])
    hook.close()
    return run_rules(str(out_dir), rules=["ClassImbalance"], ended=True).rules[0]


def test_a_balanced_run_with_few_training_labels_saved_is_judged_on_its_validation_labels(tmp_path):
    result = train(tmp_path / "run")
    assert result.status == NO_ISSUES, result
    assert "labels of the first validation pass (EVAL steps 0-1) were judged" in result.detail, result.detail


def test_a_skewed_training_set_is_not_cleared_by_balanced_validation_labels(tmp_path):
    shares = np.full(CLASSES, 0.02)
    shares[0] = 1 - shares[1:].sum()  # (82% class 0 in training; the validation rows stay balanced)
    result = train(tmp_path / "run", shares=shares)
    assert result.status in (ISSUES, NOT_EVALUATED), result
    assert "first validation pass" not in (result.detail or ""), result.detail
