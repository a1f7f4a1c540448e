"""A run that saved no loss (a contrastive loss written with ``F.cross_entropy``: no loss module for the hook to
find) holds other one-element tensors: a learnt temperature, its gradient, a 1-unit output bias. None of them is a
loss: the loss rules say that no loss was saved rather than follow a parameter's gradient as the training curve
(probe 10's CLIP-style run fired "gradient/..._logit_scale did not decrease")."""

from __future__ import annotations

import pytest

from smdebug.rules.results import NOT_EVALUATED

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

import smdebug.pytorch as smd  # noqa: E402
from smdebug.core.save_config import SaveConfig  # noqa: E402

from _judging import judged  # noqa: E402
from _torch_runs import classification_data  # noqa: E402


class TwoTowers(nn.Module):
    """Two small encoders and a learnt logit scale (a 0-dim parameter), as CLIP-style models have."""

    def __init__(self):
        super().__init__()
        self.left = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 8))
        self.right = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 8))
        self.logit_scale = nn.Parameter(torch.tensor(1.0))

    def forward(self, a, b):
        za, zb = F.normalize(self.left(a), dim=1), F.normalize(self.right(b), dim=1)
        return self.logit_scale.exp() * za @ zb.T


@pytest.fixture(scope="module")
def contrastive_run(tmp_path_factory):
    torch.set_num_threads(1)
    torch.manual_seed(0)
    x, _ = classification_data(n=256, classes=3)
    model = TwoTowers()
    path = tmp_path_factory.mktemp("clip") / "run"
    hook = smd.Hook.recommended(str(path), save_config=SaveConfig(save_interval=1))
    hook.register_module(model)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    for step in range(60):
        batch = x[(step * 32) % 256:(step * 32) % 256 + 32]
        views = batch + 0.1 * torch.randn_like(batch), batch + 0.1 * torch.randn_like(batch)
        logits = model(*views)
        loss = F.cross_entropy(logits, torch.arange(len(batch)))  # InfoNCE: each row's match is its own index
        opt.zero_grad()
        loss.backward()
        opt.step()
    hook.close()
    return path


@pytest.mark.parametrize("rule", ["LossNotDecreasing", "SlowConvergence", "OscillatingLoss"])
def test_no_parameter_or_gradient_is_taken_for_the_loss(contrastive_run, rule):
    r = judged(contrastive_run, rule)
    assert r.status in (NOT_EVALUATED, "NotApplicable"), (r.status, [f.reason for f in r.findings], r.detail)
    assert "scalar tensors (no loss collection or regex) -> none" in r.detail, r.detail
    assert "gradient/" not in r.detail.split("; the run has")[0], r.detail
