"""LossNotDecreasing after the run, on a training loss that reached its floor within its first few steps and sits
there with a per-batch noise of a third of the loss (a Poisson regression fitted by Adam at a high rate, batches of
16). The median of the first window is then post-learning noise, and an upward excursion of the window medians,
seen at two checks ``patience`` apart, reported "did not decrease" (probe 14a F1: a healthy run, 1 seed in 4),
while the live follower, which asks the stall to hold over half of the run, was quiet (F1b). A finished run's
training-loss stall is now reported only when the loss made no progress at every check from half-way to its end.
A model that learns nothing (a learning rate of 0) still fires."""

from __future__ import annotations

import pytest

from smdebug.rules.results import ISSUES, NO_ISSUES

torch = pytest.importorskip("torch")
nn = torch.nn

from _judging import judged  # noqa: E402
from _torch_runs import train_torch  # noqa: E402


def run(path, seed: int, lr: float = 0.3) -> str:
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2048, 4, generator=g)
    y = torch.poisson(torch.exp(0.6 * x[:, 0] - 0.4 * x[:, 1]), generator=g).unsqueeze(1)
    torch.manual_seed(seed)
    return train_torch(path, nn.Linear(4, 1), (x, y), steps=400, lr=lr, optimizer="adam", batch_size=16,
                       loss_fn=nn.PoissonNLLLoss(log_input=True), include_collections=("losses",))


@pytest.mark.parametrize("seed", [4, 5])
def test_a_noisy_floor_reached_in_a_few_steps_is_no_stall(tmp_path, seed):
    r = judged(run(tmp_path / "run", seed), "LossNotDecreasing")
    assert r.status == NO_ISSUES, (r.status, [f.reason for f in r.findings[:2]])
    assert r.steps_evaluated > 0


def test_a_model_that_learns_nothing_still_fires(tmp_path):
    r = judged(run(tmp_path / "run", 4, lr=0.0), "LossNotDecreasing")
    assert r.status == ISSUES, (r.status, r.detail)



@pytest.mark.parametrize("seed", [1, 2])
def test_a_loss_that_swings_above_its_first_window_still_fires(tmp_path, seed):
    """Heavy-ball SGD (momentum 0.99) on a linear regression: the loss swings from its first steps and ends above
    its first window (ends ~0.7 against a first window of ~0.5); a high first save (the model before any update,
    1.4) must not read as learning done early (the rule-accuracy benchmark's b_oscillate_momentum_linear)."""
    import numpy as np

    import smdebug.pytorch as smd

    torch.set_num_threads(1)
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(1500, 8)).astype(np.float32)
    w, w2 = rng.normal(size=8), rng.normal(size=8)
    y = x @ w / np.sqrt(8) + 0.5 * np.sin(x @ w2 / np.sqrt(8) * 2) + 0.1 * rng.normal(size=1500)
    y = ((y - y.mean()) / y.std()).astype(np.float32)
    x, y = torch.tensor(x), torch.tensor(y).unsqueeze(1)
    torch.manual_seed(seed)
    model, loss_fn = nn.Linear(8, 1), nn.MSELoss()
    out = str(tmp_path / "run")
    hook = smd.Hook(out, save_config=smd.SaveConfig(save_interval=1), include_collections=["losses"])
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.SGD(model.parameters(), lr=0.03, momentum=0.99)
    for step in range(300):
        i = (step * 32) % 1500
        opt.zero_grad()
        loss_fn(model(x[i:i + 32]), y[i:i + 32]).backward()
        opt.step()
    hook.close()
    r = judged(out, "LossNotDecreasing")
    assert r.status == ISSUES, (r.status, r.detail)
