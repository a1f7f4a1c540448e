"""WeightUpdateRatio on a classifier head initialised far below its shape's standard initialisation (probe 17a F8).

ConvNeXt's and DeiT's fine-tuning recipes scale the head's initial weights by ``head_init_scale`` (1e-3): the
first AdamW step moves it by about its learning rate, twenty times its norm, and the rule reported "update/weight
ratio 19.9 > large_threshold 10" at step 1 of a healthy run. A zero-initialised head was already let be; a tiny
one has no more of a scale of its own. A learning rate far too large is still found once the head has grown.
Real PyTorch trainings under ``Hook.recommended``.
"""

from __future__ import annotations

import torch
from torch import nn

import smdebug.pytorch as smd
from smdebug.rules import run_rules
from smdebug.rules.generic.weight_update_ratio import tiny_start
from smdebug.rules.results import ISSUES, NO_ISSUES

from _torch_runs import classification_data  # noqa: E402


def train(out_dir, lr: float, head_scale: float, steps: int = 40):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Linear(64, 10))  # (10 scores, 3 of them used)
    with torch.no_grad():
        model[2].weight.mul_(head_scale)
        model[2].bias.zero_()
    x, y = classification_data(n=512)
    loss_fn = nn.CrossEntropyLoss()
    hook = smd.Hook.recommended(str(out_dir))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.05)
    for step in range(steps):
        batch = slice((step * 32) % 512, (step * 32) % 512 + 32)
        optimizer.zero_grad()
        loss_fn(model(x[batch]), y[batch]).backward()
        optimizer.step()
    hook.close()
    return run_rules(str(out_dir), rules=["WeightUpdateRatio"], ended=True).rules[0]


def test_a_head_scaled_down_at_initialisation_is_let_be(tmp_path):
    assert train(tmp_path / "run", lr=1e-3, head_scale=1e-3).status == NO_ISSUES


def test_a_learning_rate_far_too_large_is_still_found_on_such_a_head(tmp_path):
    result = train(tmp_path / "run", lr=5.0, head_scale=1e-3)
    assert result.status == ISSUES, result


def test_tiny_is_measured_against_the_shapes_standard_initialisations():
    torch.manual_seed(0)
    weight = nn.Linear(64, 10).weight.detach().numpy()
    assert not tiny_start(weight)  # (PyTorch's default initialisation)
    assert not tiny_start(weight * 0.05)  # (small, but a scale of its own)
    assert tiny_start(weight * 1e-3)
    assert not tiny_start(weight[0] * 1e-3)  # (a bias-like vector: no standard initialisation to compare)
