"""Gradients clipped to a tiny global norm (``clip_grad_norm_(max_norm=1e-6)``, meant 1.0) are saved after the
clip (the hook reads them at the optimizer step), so VanishingGradient rightly says nothing learns but pointed at the
network ("mean |gradient| 1.7e-08 < threshold"): the finding now says that every step's gradients have one total
norm, the signature of clipping to it. A network whose gradients vanish by themselves gets no such words."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

import smdebug.pytorch as smd  # noqa: E402
from smdebug.rules import run_rules  # noqa: E402
from smdebug.rules.results import ISSUES  # noqa: E402

from _torch_runs import classification_data  # noqa: E402


def _train(out, model, clip=None, steps=12, lr=0.1):
    torch.set_num_threads(1)
    x, y = classification_data(n=96, features=10, classes=3)
    hook = smd.Hook(str(out), save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["weights", "gradients", "losses"])
    hook.register_module(model)
    loss_fn = nn.CrossEntropyLoss()
    hook.register_loss(loss_fn)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    for step in range(steps):
        xb, yb = x[(step * 16) % 96:(step * 16) % 96 + 16], y[(step * 16) % 96:(step * 16) % 96 + 16]
        opt.zero_grad()
        loss_fn(model(xb), yb).backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
    hook.close()
    return str(out)


def test_gradients_clipped_to_a_tiny_norm_are_said_to_be(tmp_path):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 3))
    r = run_rules(_train(tmp_path / "run", model, clip=1e-6), ["VanishingGradient"]).rules[0]
    assert r.status == ISSUES, (r.status, r.detail)
    reason = r.findings[0].reason
    assert "the gradients of every step have the same total norm, 1e-06" in reason, reason
    assert "clip_grad_norm_" in reason and "saved after clipping" in reason, reason


def test_gradients_that_vanish_by_themselves_are_not_said_to_be_clipped(tmp_path):
    torch.manual_seed(0)
    layers = []
    for _ in range(8):  # (a deep sigmoid stack: the first layers' gradients vanish)
        layers += [nn.Linear(10, 10), nn.Sigmoid()]
    model = nn.Sequential(*layers, nn.Linear(10, 3))
    r = run_rules(_train(tmp_path / "run", model), ["VanishingGradient"]).rules[0]
    assert r.status == ISSUES, (r.status, r.detail)
    assert all("clip" not in f.reason for f in r.findings), r.findings[0].reason
