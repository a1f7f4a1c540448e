"""Divergence measures what a loss gave back on the scale it fell on.

A positive loss that fell by orders of magnitude and then climbed back most of them (0.001 -> 0.07 after 0.23) has
lost most of what it learned, yet in its own units that is a few percent of the way back up: the give-back test
said nothing (probe 9 M4: a SIREN and a Fourier-feature fit blown up 30-fold late in training, by Adam's late
instability). Here a real run: an MLP regression whose learning rate is raised tenfold at step 200 (a warm
restart to a peak far too high for it)."""

from __future__ import annotations

import pytest

from smdebug.rules import run_rules
from smdebug.rules.results import ISSUES

torch = pytest.importorskip("torch")


def test_a_loss_that_climbs_back_most_of_its_orders_of_magnitude_gave_back_its_progress(tmp_path):
    import torch.nn as nn

    import smdebug.pytorch as smd

    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    x = torch.rand(256, 4, generator=g) * 2 - 1
    y = torch.sin(2 * x[:, :1]) * x[:, 1:2] + 0.5 * x[:, 2:3]
    model = nn.Sequential(nn.Linear(4, 64), nn.Tanh(), nn.Linear(64, 1))
    loss_fn = nn.MSELoss()
    hook = smd.Hook.recommended(str(tmp_path / "run"))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for step in range(300):
        if step == 200:
            for group in opt.param_groups:
                group["lr"] = 0.1
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    hook.close()
    floor = min(losses[:200])
    assert floor < losses[0] / 100 and max(losses[200:]) > 30 * floor, (losses[0], floor, max(losses[200:]))
    (r,) = run_rules(str(tmp_path / "run"), ["Divergence"]).rules
    assert r.status == ISSUES, (r.status, r.detail)
    assert "on a log scale" in r.findings[0].reason and r.findings[0].step > 200, r.findings[0].reason
