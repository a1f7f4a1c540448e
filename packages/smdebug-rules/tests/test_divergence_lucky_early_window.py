"""Divergence's give-back test measured against a level the loss held, not against the luckiest block of a noisy
loss. A small-batch classifier (two moons and six noise features, batches of 32, Adam 1e-2 with cosine warm
restarts every 50 steps) learns within 15 steps; its blocks of 10 batches then scatter around 0.33, and one early
block came out at 0.246. The lowest of many block medians is biased low, and the restart's designed bump at step 50
read as "gave back 59% of the progress it had made" (probe 14a F8: a healthy run, as good as the plain recipe).
The best is now the lowest level held over two consecutive blocks."""

from __future__ import annotations

import numpy as np
import pytest

from smdebug.rules.results import ISSUES, NO_ISSUES

torch = pytest.importorskip("torch")
nn = torch.nn
datasets = pytest.importorskip("sklearn.datasets")

import smdebug.pytorch as smd  # noqa: E402

from _judging import judged  # noqa: E402


def run(path, seed: int = 36, lr_after_restart: float = None) -> str:
    torch.set_num_threads(1)
    x, y = datasets.make_moons(n_samples=3000, noise=0.25, random_state=seed)
    x = np.c_[x, np.random.RandomState(seed).randn(3000, 6)].astype(np.float32)
    order = np.random.RandomState(seed).permutation(len(x))
    x, y = torch.tensor(x[order][:2400]), torch.tensor(y[order][:2400].astype(np.int64))
    x = (x - x.mean(0, keepdim=True)) / (x.std(0, keepdim=True) + 1e-8)
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(8, 64), nn.SiLU(), nn.Linear(64, 64), nn.SiLU(), nn.Linear(64, 2))
    loss_fn = nn.CrossEntropyLoss()
    hook = smd.Hook(out_dir=str(path), save_config=smd.SaveConfig(save_interval=1), include_collections=["losses"])
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=50)
    batches = torch.randperm(len(x), generator=torch.Generator().manual_seed(0)).split(32)
    for step, rows in enumerate(batches):  # one epoch: 75 steps
        if lr_after_restart is not None and step == 50:
            for group in opt.param_groups:  # (the restart's rate replaced by one far too high)
                group["initial_lr"] = lr_after_restart
            sched.base_lrs = [lr_after_restart] * len(opt.param_groups)
        opt.zero_grad()
        loss_fn(model(x[rows]), y[rows]).backward()
        opt.step()
        sched.step()
    hook.close()
    return str(path)


def test_a_warm_restart_after_a_lucky_early_block_is_no_give_back(tmp_path):
    r = judged(run(tmp_path / "run"), "Divergence")
    assert r.status == NO_ISSUES, (r.status, [f.reason for f in r.findings[:2]])
    assert r.steps_evaluated > 0


def test_a_restart_to_a_rate_far_too_high_still_fires(tmp_path):
    r = judged(run(tmp_path / "run", lr_after_restart=1.0), "Divergence")
    assert r.status == ISSUES, (r.status, r.detail)
    assert "grew" in r.findings[0].reason, r.findings[0].reason
