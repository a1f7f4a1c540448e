"""WeightUpdateRatio on a weight that starts at zero and whose optimum is about zero: Adam moves it by about the
learning rate each step, back and forth across zero, so at a save where it happens to be near zero an ordinary
step reads as many times the weight (probe 10: a Keras LayerNormalization beta, norm 3e-4 at a save, fired 10.8).
Its scale is the largest size it has had so far; a weight whose updates are really too large still fires."""

from __future__ import annotations

import pytest

from smdebug.rules.results import ISSUES, NO_ISSUES

torch = pytest.importorskip("torch")
nn = torch.nn

import smdebug.pytorch as smd  # noqa: E402
from smdebug.core.save_config import SaveConfig  # noqa: E402

from _judging import judged  # noqa: E402


class WithNuisance(nn.Module):
    """A regression on 4 features plus a zero-initialised weight on a feature of pure noise (its optimum: 0)."""

    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 1)
        self.nuisance = nn.Linear(1, 1, bias=False)
        nn.init.zeros_(self.nuisance.weight)

    def forward(self, x):
        return self.body(x[:, :4]) + self.nuisance(x[:, 4:])


def run(path, lr: float) -> str:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    x = torch.randn(4096, 5)
    y = x[:, :4] @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]]) + 0.5 * torch.randn(4096, 1)  # noisy targets
    model, loss_fn = WithNuisance(), nn.MSELoss()
    hook = smd.Hook.recommended(str(path), save_config=SaveConfig(save_interval=1))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    for step in range(300):
        i = slice(step * 16 % 4096, step * 16 % 4096 + 16)
        loss = loss_fn(model(x[i]), y[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
    hook.close()
    return str(path)


def test_a_zero_started_weight_crossing_zero_is_no_large_update(tmp_path):
    r = judged(run(tmp_path / "run", lr=0.01), "WeightUpdateRatio")
    assert r.status == NO_ISSUES, (r.status, [f.reason for f in r.findings])


def test_too_large_updates_of_a_zero_started_weight_still_fire(tmp_path):
    r = judged(run(tmp_path / "run", lr=50.0), "WeightUpdateRatio")
    assert r.status == ISSUES, (r.status, r.detail)
