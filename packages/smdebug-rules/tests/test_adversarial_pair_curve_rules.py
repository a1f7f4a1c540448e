"""The curve rules on a GAN (probe 15b F3): a healthy GAN's generator loss rises while its discriminator learns,
and its discriminator loss gives back what it had won as the generator improves; LossNotDecreasing and
Divergence read them as faults and a healthy run exited 1. The run's saved targets show the pair (the
generator's loss trained toward the one label "real" at every save, the discriminator's telling "real" from
"fake"): the curve rules leave those losses out and say why. Losses with constant targets that are no such pair
(a contrastive loss whose positive is always class 0, positives and negatives in two calls of one loss) are
judged as before."""

from __future__ import annotations

import numpy as np
import pytest

from smdebug.rules.results import NO_ISSUES, NOT_APPLICABLE
from smdebug.trials import create_trial

torch = pytest.importorskip("torch")

import torch.nn as nn  # noqa: E402

import smdebug.pytorch as smd  # noqa: E402
from _judging import judged  # noqa: E402
from smdebug.rules.generic.adversarial import adversarial_losses  # noqa: E402

CURVE_RULES = ("LossNotDecreasing", "Divergence", "SlowConvergence", "OscillatingLoss")


def _ring(n, gen):
    angles = torch.randint(0, 8, (n,), generator=gen) * (2 * np.pi / 8)
    return torch.stack([angles.cos(), angles.sin()], 1) * 2.0 + 0.05 * torch.randn(n, 2, generator=gen)


def _train_gan(out, iterations=1500):
    """A GAN on a ring of 8 Gaussians, its generator registered as the model; the discriminator's loss
    ``d_loss(cat(D(real), D(fake)), cat(ones, zeros))`` and the generator's ``g_loss(D(fake), ones)``."""
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    G = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 2))
    D = nn.Sequential(nn.Linear(2, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))
    hook = smd.Hook.recommended(str(out))
    hook.register_module(G)
    d_loss, g_loss = nn.BCEWithLogitsLoss(), nn.BCEWithLogitsLoss()
    hook.register_loss(d_loss)
    hook.register_loss(g_loss)
    opt_g = torch.optim.Adam(G.parameters(), lr=3e-3, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(D.parameters(), lr=3e-3, betas=(0.5, 0.999))
    b = 64
    for _ in range(iterations):
        fake = G(torch.randn(b, 8, generator=gen))
        opt_d.zero_grad()
        real_or_fake = torch.cat([D(_ring(b, gen)), D(fake.detach())])
        d_loss(real_or_fake, torch.cat([torch.ones(b, 1), torch.zeros(b, 1)])).backward()
        opt_d.step()
        opt_g.zero_grad()
        g_loss(D(fake), torch.ones(b, 1)).backward()
        opt_g.step()
    hook.close()
    with torch.no_grad():
        samples = G(torch.randn(2000, 8, generator=gen))
        centers = torch.stack([torch.arange(8) * (2 * np.pi / 8)], 0)[0]
        ring = torch.stack([centers.cos(), centers.sin()], 1) * 2.0
        near = torch.cdist(samples, ring).min(1).values < 0.3
    return float(near.float().mean())


def test_a_healthy_gan_is_no_loss_that_does_not_decrease(tmp_path):
    torch.set_num_threads(1)
    quality = _train_gan(tmp_path / "gan")
    assert quality > 0.5, quality  # (a GAN that learned the ring: most samples near one of its modes)
    pairs = adversarial_losses(create_trial(str(tmp_path / "gan")))
    assert set(pairs) == {"BCEWithLogitsLoss", "BCEWithLogitsLoss_1"}, pairs
    for rule in CURVE_RULES:
        r = judged(tmp_path / "gan", rule)
        # (Divergence judges the weights too: no issues there, the losses said as not judged)
        assert r.status == (NO_ISSUES if rule == "Divergence" else NOT_APPLICABLE), (rule, r.status, r.detail)
        assert "adversarial pair" in r.detail and "BCEWithLogitsLoss_1: always 1" in r.detail, (rule, r.detail)


def _train_constant_targets(out, calls):
    """A binary classifier trained with ``calls`` [(rows, label)]: one BCE module called once per entry."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))
    hook = smd.Hook.recommended(str(out))
    hook.register_module(model)
    loss_fn = nn.BCEWithLogitsLoss()
    hook.register_loss(loss_fn)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(40):
        opt.zero_grad()
        total = 0
        for shift, label in calls:
            x = torch.randn(32, 4) + shift
            total = total + loss_fn(model(x), torch.full((32, 1), float(label)))
        total.backward()
        opt.step()
    hook.close()


def test_positives_and_negatives_in_two_calls_are_no_pair(tmp_path):
    torch.set_num_threads(1)
    _train_constant_targets(tmp_path / "pu", [(1.0, 1), (-1.0, 0)])
    assert adversarial_losses(create_trial(str(tmp_path / "pu"))) == {}


def test_a_contrastive_loss_whose_positive_is_always_class_0_is_no_pair(tmp_path):
    torch.set_num_threads(1)
    torch.manual_seed(0)
    encoder = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 8))
    hook = smd.Hook.recommended(str(tmp_path / "nce"))
    hook.register_module(encoder)
    loss_fn = nn.CrossEntropyLoss()
    hook.register_loss(loss_fn)
    opt = torch.optim.Adam(encoder.parameters(), lr=1e-2)
    for _ in range(30):
        x = torch.randn(32, 8)
        a, p = encoder(x + 0.1 * torch.randn_like(x)), encoder(x + 0.1 * torch.randn_like(x))
        logits = nn.functional.normalize(a, dim=1) @ nn.functional.normalize(p, dim=1).T / 0.1
        opt.zero_grad()
        loss_fn(logits, torch.arange(32)).backward()
        opt.step()
    hook.close()
    assert adversarial_losses(create_trial(str(tmp_path / "nce"))) == {}
