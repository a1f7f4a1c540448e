"""VanishingGradient and PoorWeightInitialization on layers whose gradient is small by construction while they keep
learning: a transformer's separate query and key projections initialised small (as Hugging Face models are) under
AdamW, and LoRA adapters whose B starts at zero. The rules used to call such healthy runs 'vanishing' or 'poorly
initialised' for their first tens of steps; the same layers trained with plain SGD do not learn, and still fire."""

import math

import pytest

torch = pytest.importorskip("torch")
smd = pytest.importorskip("smdebug.pytorch")

import torch.nn as nn  # noqa: E402

from smdebug.rules.runner import run_rules  # noqa: E402


class SmallInitAttention(nn.Module):
    """One self-attention block over 8 tokens of 8 features, every projection drawn from N(0, 0.02)."""

    def __init__(self, width=32, classes=4):
        super().__init__()
        self.embed = nn.Linear(8, width)
        self.query, self.key, self.value = nn.Linear(width, width), nn.Linear(width, width), nn.Linear(width, width)
        self.mix = nn.Linear(width, width)
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, classes)
        for layer in (self.embed, self.query, self.key, self.value, self.mix, self.head):
            nn.init.normal_(layer.weight, std=0.02)
            nn.init.zeros_(layer.bias)

    def forward(self, x):
        h = self.embed(x)
        scores = self.query(h) @ self.key(h).transpose(1, 2) / math.sqrt(h.shape[-1])
        attended = torch.softmax(scores, dim=-1) @ self.value(h)
        return self.head(self.norm(h + self.mix(attended)).mean(dim=1))


def train(out_dir, optimizer, *, collections=("weights", "gradients", "losses"), steps=30, warmup=0):
    """``warmup``: the learning rate rises linearly from 0 over that many steps (the first step takes none)."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(256, 8, 8, generator=g)
    y = (x[:, :, 0].mean(dim=1) > 0).long() + 2 * (x[:, 0, 1] > 0).long()  # learnable 4-class task
    model = SmallInitAttention()
    hook = smd.Hook(str(out_dir), save_config=smd.SaveConfig(save_interval=1), include_collections=list(collections))
    hook.register_module(model)
    loss_fn = nn.CrossEntropyLoss()
    hook.register_loss(loss_fn)
    opt = optimizer(model.parameters())
    schedule = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, s / warmup)) if warmup else None
    losses = []
    for step in range(steps):
        batch = slice((step * 32) % 256, (step * 32) % 256 + 32)
        opt.zero_grad()
        loss = loss_fn(model(x[batch]), y[batch])
        loss.backward()
        opt.step()
        if schedule is not None:
            schedule.step()
        losses.append(loss.item())
    hook.close()
    return str(out_dir), losses


def verdict(path, rule="VanishingGradient", **params):
    return run_rules(path, rules=[(rule, params)] if params else [rule]).rules[0]


def test_small_query_and_key_gradients_under_adamw_are_not_vanishing(tmp_path):
    path, losses = train(tmp_path / "adamw", lambda p: torch.optim.AdamW(p, lr=3e-3))
    assert losses[-1] < losses[0]  # it learns
    # the gradients are as small as a vanishing network's: with the check off the rule fires on them
    off = verdict(path, learning_fraction="0")
    assert off.status == "IssuesFound"
    assert "query.weight" in off.findings[0].reason or "key.weight" in off.findings[0].reason
    # but AdamW moves those layers at the others' pace: no vanishing gradient
    assert verdict(path).status == "NoIssuesFound"
    # nor a poor initialisation (their gradients are narrow next to the others' too)
    off = verdict(path, "PoorWeightInitialization", learning_fraction="0")
    assert off.status == "IssuesFound" and off.findings[0].reason.startswith("gradients:")
    assert verdict(path, "PoorWeightInitialization").status == "NoIssuesFound"


def test_a_warm_up_from_zero_is_no_vanishing_gradient(tmp_path):
    """The first step of a warm-up from 0 (the Hugging Face Trainer's schedules, LinearLR(start_factor=0)) moves no
    weight at all: how small a gradient is there says nothing of its layer's learning (probe 11 F3)."""
    path, losses = train(tmp_path / "warmup", lambda p: torch.optim.AdamW(p, lr=3e-3), warmup=5)
    assert losses[-1] < losses[0]
    found = verdict(path)
    assert found.status == "NoIssuesFound", [f.reason for f in found.findings]
    # SGD's small gradients still vanish once the warm-up moves the weights
    path, _ = train(tmp_path / "warmup_sgd", lambda p: torch.optim.SGD(p, lr=0.05), warmup=5)
    assert verdict(path).status == "IssuesFound"


def test_small_query_and_key_gradients_under_sgd_still_vanish(tmp_path):
    # plain SGD moves a weight in proportion to its gradient: the query and key projections do not learn
    path, _ = train(tmp_path / "sgd", lambda p: torch.optim.SGD(p, lr=0.05))
    found = verdict(path)
    assert found.status == "IssuesFound"
    assert "query.weight" in found.findings[0].reason or "key.weight" in found.findings[0].reason


def test_without_the_weights_the_gradients_are_judged_alone(tmp_path):
    # nothing tells whether the layers learn: judged as the gradients say
    path, _ = train(tmp_path / "gradients_only", lambda p: torch.optim.AdamW(p, lr=3e-3),
                    collections=("gradients", "losses"))
    assert verdict(path).status == "IssuesFound"


def test_learning_fraction_is_checked(tmp_path):
    path, _ = train(tmp_path / "short", lambda p: torch.optim.AdamW(p, lr=3e-3), steps=2)
    from smdebug.exceptions import SMDebugValueError
    from smdebug.rules.generic import VanishingGradient
    from smdebug.trials import create_trial

    with pytest.raises(SMDebugValueError, match="learning_fraction must be in"):
        VanishingGradient(create_trial(path), learning_fraction="2")


class LowRankAdapted(nn.Module):
    """A frozen linear layer plus a trained low-rank update ``B @ A`` whose ``B`` starts at zero (LoRA): ``A`` gets a
    gradient of exactly zero at the first step, by design."""

    def __init__(self, features=16, classes=4, rank=2, zero_a=False):
        super().__init__()
        self.base = nn.Linear(features, 32)
        self.base.requires_grad_(False)  # (the pretrained layer; the head trains only when both factors do not)
        self.A = nn.Parameter(torch.zeros(rank, features) if zero_a else torch.randn(rank, features) * 0.1)
        self.B = nn.Parameter(torch.zeros(32, rank))
        self.relu = nn.ReLU()
        self.head = nn.Linear(32, classes)
        self.head.requires_grad_(not zero_a)

    def forward(self, x):
        return self.head(self.relu(self.base(x) + x @ self.A.t() @ self.B.t()))


def train_adapted(out_dir, zero_a=False, steps=12):
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(256, 16, generator=g)
    y = (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long()
    model = LowRankAdapted(zero_a=zero_a)
    hook = smd.Hook(str(out_dir), save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["weights", "gradients", "losses"])
    hook.register_module(model)
    loss_fn = nn.CrossEntropyLoss()
    hook.register_loss(loss_fn)
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    for step in range(steps):
        batch = slice((step * 32) % 256, (step * 32) % 256 + 32)
        opt.zero_grad()
        loss_fn(model(x[batch]), y[batch]).backward()
        opt.step()
    hook.close()
    return str(out_dir)


def test_an_adapter_whose_b_starts_at_zero_is_no_poor_initialisation(tmp_path):
    path = train_adapted(tmp_path / "lora")
    assert verdict(path, "PoorWeightInitialization").status == "NoIssuesFound"
    # both factors at zero, the rest frozen: nothing can learn; every trained weight's gradient is zero
    both = verdict(train_adapted(tmp_path / "both_zero", zero_a=True), "PoorWeightInitialization")
    assert both.status == "IssuesFound"
