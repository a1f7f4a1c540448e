"""UnnormalizedInput on inputs that are no measurements: integer or boolean inputs of any rank (a 1-D batch of
node or item ids fed to an embedding was left unjudged, and a healthy run exited 3) are NotApplicable; an
input identical in every sample at every save (all zeros from a preprocessing fault) is a finding, judged for
the model's inputs as a whole -- constant features beside varying ones, or a constant input beside a varying
one (an RNN's zero initial state), are not."""

from __future__ import annotations

import torch
import torch.nn as nn

import smdebug.pytorch as smd
from smdebug.rules import run_rules
from smdebug.rules.results import ISSUES, NO_ISSUES, NOT_APPLICABLE


def verdict(path):
    r = run_rules(str(path), ["UnnormalizedInput"]).rules[0]
    assert r.error is None, r.error
    return r


def digits_like(n=256, seed=0):
    """Pixel-like features in [0, 1] whose first and last four columns are always 0 (an image's border), and a
    label that depends on the others."""
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 24, generator=g)
    x[:, :4] = 0
    x[:, -4:] = 0
    return x, (x[:, 4:12].sum(1) > x[:, 12:20].sum(1)).long()


def train(path, model, batches, steps=30, lr=0.05):
    """Train under Hook.recommended, ``batches(step) -> (inputs tuple, labels)``."""
    hook = smd.Hook.recommended(str(path))
    hook.register_module(model)
    loss_fn = nn.CrossEntropyLoss()
    hook.register_loss(loss_fn)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    for step in range(steps):
        inputs, y = batches(step)
        opt.zero_grad()
        loss_fn(model(*inputs), y).backward()
        opt.step()
    hook.close()
    return path


class NodeClassifier(nn.Module):
    """Node ids (a 1-D int64 batch) looked up in an embedding: the model's only input is an index."""

    def __init__(self, nodes=200, classes=3):
        super().__init__()
        self.emb = nn.Embedding(nodes, 8)
        self.out = nn.Linear(8, classes)

    def forward(self, ids):
        return self.out(torch.relu(self.emb(ids)))


def test_a_one_dimensional_batch_of_ids_is_not_applicable(tmp_path):
    g = torch.Generator().manual_seed(0)
    labels = torch.randint(0, 3, (200,), generator=g)
    torch.manual_seed(0)

    def batches(step):
        ids = torch.randint(0, 200, (32,), generator=g)
        return (ids,), labels[ids]

    r = verdict(train(tmp_path, NodeClassifier(), batches))
    assert r.status == NOT_APPLICABLE, (r.status, r.detail)
    assert "token or category ids" in r.detail and "integers (1-D" in r.detail


class Masked(nn.Module):
    """Features and a boolean mask of the features to keep."""

    def __init__(self):
        super().__init__()
        self.out = nn.Linear(24, 2)

    def forward(self, x, keep):
        return self.out(x * keep)


def test_inputs_all_zero_at_every_save_fire_and_say_so(tmp_path):
    x, y = digits_like()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(24, 16), nn.ReLU(), nn.Linear(16, 2))
    r = verdict(train(tmp_path, model, lambda s: ((torch.zeros_like(x[(s * 32) % 256:][:32]),),
                                                   y[(s * 32) % 256:][:32])))
    assert r.status == ISSUES, (r.status, r.detail)
    reason = r.findings[0].reason
    assert reason.startswith("the model's input carries no information: every sample is identical")
    assert "Sequential_input_0 (every value 0)" in reason


def test_one_sample_repeated_fires(tmp_path):
    x, y = digits_like()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(24, 16), nn.ReLU(), nn.Linear(16, 2))
    r = verdict(train(tmp_path, model, lambda s: ((x[:1].expand(32, -1).clone(),), y[(s * 32) % 256:][:32])))
    assert r.status == ISSUES, (r.status, r.detail)
    assert "the same in every sample" in r.findings[0].reason


def test_constant_columns_and_a_constant_input_beside_a_varying_one_are_quiet(tmp_path):
    x, y = digits_like()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(24, 16), nn.ReLU(), nn.Linear(16, 2))
    r = verdict(train(tmp_path / "border", model, lambda s: ((x[(s * 32) % 256:][:32],), y[(s * 32) % 256:][:32])))
    assert r.status == NO_ISSUES, (r.status, r.detail, [f.reason for f in r.findings])
    # a float mask of ones (every feature kept) beside the features: constant by design
    torch.manual_seed(0)
    r = verdict(train(tmp_path / "mask", Masked(), lambda s: ((x[(s * 32) % 256:][:32], torch.ones(32, 24)),
                                                                y[(s * 32) % 256:][:32])))
    assert r.status == NO_ISSUES, (r.status, r.detail, [f.reason for f in r.findings])
