"""WeightUpdateRatio names the trainable parameters no optimizer step ever moved (probe 13a F2, F3).

Two common bugs leave a layer at its initial values while the rest trains and the loss falls: a layer left out
of the optimizer's parameters (it gets a gradient, nothing applies it) and a ``.detach()`` cutting it off from
the loss (the optimizer holds it, it gets no gradient). The run saved no gradient of either, which the rule
read as frozen on purpose, so every rule was quiet. The PyTorch hook now records them (``_meta.untrained_
parameters``); ``requires_grad=False`` (frozen on purpose) is never recorded."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

import smdebug.pytorch as smd  # noqa: E402
from smdebug.core.run_info import untrained_parameters  # noqa: E402
from smdebug.rules import run_rules  # noqa: E402
from smdebug.trials import create_trial  # noqa: E402


class Net(nn.Module):
    def __init__(self, detach=False):
        super().__init__()
        self.detach = detach
        self.body = nn.Sequential(nn.Linear(8, 32), nn.ReLU())
        self.middle = nn.Sequential(nn.Linear(32, 32), nn.ReLU())
        self.head = nn.Linear(32, 3)

    def forward(self, x):
        h = self.body(x)
        return self.head(self.middle(h.detach() if self.detach else h))


def data(n=512):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(n, 8, generator=g)
    return x, (x[:, 0] > 0).long() + (x[:, 1] > 0).long()


def pretrain(model, steps=200):
    """Train the model before the hook exists, as a body frozen on purpose is (one frozen at its random
    initialisation is a finding of its own: test_weight_update_ratio_frozen_at_init.py)."""
    x, y = data()
    opt = torch.optim.Adam(model.parameters(), 1e-2)
    for step in range(steps):
        batch = slice((step * 32) % 512, (step * 32) % 512 + 32)
        opt.zero_grad()
        nn.functional.cross_entropy(model(x[batch]), y[batch]).backward()
        opt.step()


def train(out_dir, bug=None, steps=60):
    torch.manual_seed(0)
    model = Net(detach=bug == "detach")
    if bug == "frozen":
        pretrain(model)
        model.body.requires_grad_(False)  # on purpose: fine-tuning the rest of a pretrained model
    hook = smd.Hook.recommended(str(out_dir))
    hook.register_module(model)
    loss_fn = nn.CrossEntropyLoss()
    hook.register_loss(loss_fn)
    if bug == "left_out":
        params = list(model.body.parameters()) + list(model.middle.parameters())
    else:
        params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, 1e-2)
    x, y = data()
    for step in range(steps):
        batch = slice((step * 32) % 512, (step * 32) % 512 + 32)
        opt.zero_grad()
        loss_fn(model(x[batch]), y[batch]).backward()
        opt.step()
    hook.close()
    return str(out_dir)


def weight_update_ratio(run):
    return run_rules(run, ["WeightUpdateRatio"]).rules[0]


def test_a_layer_left_out_of_the_optimizer_is_named(tmp_path):
    run = train(tmp_path / "run", "left_out")
    record = untrained_parameters(create_trial(run))
    assert record["not_stepped"] == ["Net_head.bias", "Net_head.weight"] and record["no_gradient"] == []
    verdict = weight_update_ratio(run)
    assert verdict.status == "IssuesFound", verdict
    reason = verdict.findings[0].reason
    assert "Net_head.bias, Net_head.weight" in reason and "no optimizer of the run updates them" in reason


def test_a_layer_cut_from_the_loss_by_detach_is_named(tmp_path):
    run = train(tmp_path / "run", "detach")
    record = untrained_parameters(create_trial(run))
    assert record["no_gradient"] == ["Net_body.0.bias", "Net_body.0.weight"] and record["not_stepped"] == []
    verdict = weight_update_ratio(run)
    assert verdict.status == "IssuesFound", verdict
    assert "got no gradient" in verdict.findings[0].reason and "Net_body.0.weight" in verdict.findings[0].reason


@pytest.mark.parametrize("bug", [None, "frozen"])
def test_healthy_and_frozen_on_purpose_are_quiet(tmp_path, bug):
    run = train(tmp_path / "run", bug)
    record = untrained_parameters(create_trial(run))
    assert record is not None and record["not_stepped"] == [] and record["no_gradient"] == []
    assert weight_update_ratio(run).status == "NoIssuesFound"


def test_two_optimizers_of_a_gan_are_one_record(tmp_path):
    """A generator and a discriminator, each with its own optimizer, the generator's first seen after the
    discriminator's first step: neither is said never to train."""
    torch.manual_seed(0)
    generator = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
    discriminator = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 1))
    hook = smd.Hook.recommended(str(tmp_path / "run"))
    hook.register_module(discriminator)  # (its parameters get gradients from both losses; opt_g holds none)
    bce = nn.BCEWithLogitsLoss()
    hook.register_loss(bce)
    opt_g = torch.optim.Adam(generator.parameters(), 1e-3)
    opt_d = torch.optim.Adam(discriminator.parameters(), 1e-3)
    g = torch.Generator().manual_seed(0)
    for _ in range(40):
        real = torch.randn(32, 2, generator=g) * 0.5 + 2
        fake = generator(torch.randn(32, 4, generator=g))
        opt_d.zero_grad()
        d_loss = bce(discriminator(torch.cat([real, fake.detach()])), torch.cat([torch.ones(32, 1), torch.zeros(32, 1)]))
        d_loss.backward()
        opt_d.step()
        opt_g.zero_grad()
        g_loss = bce(discriminator(fake), torch.ones(32, 1))
        g_loss.backward()
        opt_g.step()
    hook.close()
    run = str(tmp_path / "run")
    record = untrained_parameters(create_trial(run))
    assert record is not None and record["not_stepped"] == [] and record["no_gradient"] == [], record
    assert weight_update_ratio(run).findings_total == 0
