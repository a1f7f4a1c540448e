"""Overfit and Overtraining on a classifier whose validation cross-entropy rises while its validation error rate does
not: a model growing more confident on the validation rows it gets wrong (here: validation labels of which a fifth
are noise, which no model can get right). Stopping at the best validation loss keeps no better classifier (probe
19a F8: held-out accuracy no better early-stopped), so neither rule reports it, and each says why in its verdict.
The same run whose validation error rate does rise still fires."""

from __future__ import annotations

import pytest
import torch

from smdebug.rules.results import ISSUES, NO_ISSUES

from smdebug.rules import run_rules
from _torch_runs import classification_data, mlp, train_torch

pytestmark = pytest.mark.usefixtures("torch_one_thread")

#: Overtraining judged on single evaluations (its defaults want 10 evaluations of patience, medians of 10 saves)
OVERTRAINING = {"patience_validation": "3", "window_validation": "1", "window_train": "1"}


def run(path, validation_noise: float, shift: float = 0.0, steps: int = 150) -> str:
    """An MLP fitting 256 clean rows for ``steps`` Adam steps, evaluated on 256 other rows after every third step, every
    step saved (the validation rows' predictions and labels too); ``validation_noise`` of the validation labels
    drawn at random, ``shift`` moves the validation inputs away from the training ones (a model that fits the
    training rows closely classifies them worse and worse)."""
    x, y = classification_data(256, seed=1)
    g = torch.Generator().manual_seed(3)
    noisy = torch.rand(len(y), generator=g) < validation_noise
    y = torch.where(noisy, torch.randint(0, 3, y.shape, generator=g), y)
    return train_torch(path, mlp(hidden=64, depth=2), classification_data(256), steps=steps, lr=0.01, optimizer="adam",
                       include_collections=["losses", "loss_inputs"], eval_data=(x + shift, y), eval_every=3)


def test_a_validation_loss_rise_with_no_more_errors_is_no_overfitting(tmp_path):
    path = run(tmp_path / "run", validation_noise=0.2)
    for rule, params in (("Overfit", {}), ("Overtraining", OVERTRAINING)):
        (r,) = run_rules(path, [(rule, params)]).rules
        assert r.status == NO_ISSUES, (rule, r.status, [f.reason for f in r.findings[:2]])
        assert "but its error rate did not rise with it" in (r.detail or ""), (rule, r.detail)


def test_a_validation_loss_rise_with_more_errors_still_fires(tmp_path):
    path = run(tmp_path / "run", validation_noise=0.0, shift=1.5)
    for rule, params in (("Overfit", {}), ("Overtraining", OVERTRAINING)):
        (r,) = run_rules(path, [(rule, params)]).rules
        assert r.status == ISSUES, (rule, r.status, r.detail)
