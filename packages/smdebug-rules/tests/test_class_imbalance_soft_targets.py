"""ClassImbalance on a cross-entropy trained against class probabilities (mixup's soft targets): nothing to count,
and the verdict says what the targets are, not "a regression target" (probe 19a W4)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

import smdebug.pytorch as smd  # noqa: E402
from smdebug.rules import run_rules  # noqa: E402


def train(out_dir, soft: bool):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    hook = smd.Hook.recommended(str(out_dir))
    hook.register_module(model)
    loss_fn = nn.CrossEntropyLoss()
    hook.register_loss(loss_fn)
    opt = torch.optim.Adam(model.parameters(), 1e-2)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(256, 8, generator=g)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()
    for i in range(0, 256, 32):
        xb, yb = x[i:i + 32], y[i:i + 32]
        target = yb
        if soft:  # mixup: each row mixed with another, its target the same mixture of their one-hot labels
            lam = 0.7
            perm = torch.randperm(len(xb), generator=g)
            xb = lam * xb + (1 - lam) * xb[perm]
            onehot = nn.functional.one_hot(yb, 3).float()
            target = lam * onehot + (1 - lam) * onehot[perm]
        opt.zero_grad()
        loss_fn(model(xb), target).backward()
        opt.step()
    hook.close()
    return str(out_dir)


def test_soft_targets_are_called_class_probabilities(tmp_path):
    result = run_rules(train(tmp_path / "run", soft=True), ["ClassImbalance"]).rules[0]
    assert result.status == "NotApplicable", result
    assert "CrossEntropyLoss_input_1 holds class probabilities, not class ids" in result.detail, result.detail


def test_class_ids_are_counted(tmp_path):
    result = run_rules(train(tmp_path / "run", soft=False), ["ClassImbalance"]).rules[0]
    assert result.status in ("NoIssuesFound", "IssuesFound"), result
