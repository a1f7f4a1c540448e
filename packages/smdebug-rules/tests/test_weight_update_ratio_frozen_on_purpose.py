"""WeightUpdateRatio does not hold a layer frozen on purpose (requires_grad=False) to small_threshold.

A run whose optimizer moved nothing saves no gradient at all, so nothing in the saved tensors told a frozen body
from the head the optimizer left out: the verdict's headline named the frozen ``body.0.weight`` ("update/weight
ratio 0"), and the right diagnosis came last (probe 19a W3). The PyTorch hook's record of untrained parameters now
lists the frozen ones; a model frozen whole is still judged."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

import smdebug.pytorch as smd  # noqa: E402
from smdebug.core.run_info import untrained_parameters  # noqa: E402
from smdebug.rules import run_rules  # noqa: E402
from smdebug.trials import create_trial  # noqa: E402


def train(out_dir, freeze_all: bool = False):
    torch.manual_seed(0)
    model = nn.Sequential()
    model.body = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
    model.head = nn.Linear(16, 3)
    for p in (model.parameters() if freeze_all else model.body.parameters()):
        p.requires_grad = False
    # the slip: the optimizer is built over a head that is then replaced, so it never steps the new one
    opt = torch.optim.SGD(list(model.parameters()) if freeze_all else [p for p in model.parameters()], lr=0.1)
    if not freeze_all:
        model.head = nn.Linear(16, 3)
    hook = smd.Hook(str(out_dir), save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["weights", "gradients", "losses"])
    hook.register_module(model)
    loss_fn = nn.CrossEntropyLoss()
    hook.register_loss(loss_fn)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(64, 8, generator=g)
    y = (x[:, 0] > 0).long()
    for _ in range(8):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        if loss.requires_grad:
            loss.backward()
        opt.step()
    hook.close()
    return str(out_dir)


def test_the_layer_frozen_on_purpose_is_not_the_headline(tmp_path):
    run = train(tmp_path / "run")
    record = untrained_parameters(create_trial(run))
    assert record["frozen"] == ["Sequential_body.0.bias", "Sequential_body.0.weight"], record
    result = run_rules(run, ["WeightUpdateRatio"]).rules[0]
    assert result.status == "IssuesFound", result
    reasons = [f.reason for f in result.findings]
    assert not any("body" in r.split(":")[0] for r in reasons), reasons
    assert reasons[0].startswith("Sequential_head."), reasons


def test_a_model_frozen_whole_is_still_judged(tmp_path):
    run = train(tmp_path / "run", freeze_all=True)
    result = run_rules(run, ["WeightUpdateRatio"]).rules[0]
    assert result.status == "IssuesFound", result
    assert "update/weight ratio 0 < small_threshold" in result.findings[0].reason, result.findings[0].reason
