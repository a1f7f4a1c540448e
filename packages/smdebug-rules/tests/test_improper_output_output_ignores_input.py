"""ImproperOutput on an output that does not depend on the model's input, for any loss: a regression net whose
ReLUs before the output are dead predicts one value for every row; a VAE whose KL term is too strong collapses
its posterior, and its decoder gives the same reconstruction for every image (probe 15b F5: the loss fell and
flattened, every rule was quiet). Healthy regressions -- a weak one on noisy targets too -- and a healthy VAE are
not flagged, nor is a constant output whose targets are one value (then it is the best output)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

import smdebug.pytorch as smd  # noqa: E402
from smdebug.rules.results import ISSUES, NO_ISSUES  # noqa: E402

from _judging import judged  # noqa: E402

pytestmark = pytest.mark.usefixtures("torch_one_thread")

SAID = "barely depends on the model's input"


def _regression(out_dir, targets: str, dead: bool = False) -> str:
    """A small MLP regression (150 Adam steps of 32 rows, an EVAL pass every 50) under Hook.recommended, on
    ``targets``: "fit" (a linear function of the 6 features, little noise), "weak" (one feature's small effect
    in noise of unit scale: R^2 about 0.1) or "one" (the same value for every row). ``dead``: the hidden ReLUs
    start (and stay) dead, so the output is its bias for every row."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(640, 6, generator=g)
    noise = torch.randn(640, 1, generator=g)
    y = {"fit": 3.0 + x @ torch.randn(6, 1, generator=g) + 0.1 * noise,
         "weak": 3.0 + 0.4 * x[:, :1] + noise,
         "one": torch.full((640, 1), 3.0)}[targets]
    model = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 1))
    if dead:
        with torch.no_grad():
            model[0].bias.fill_(-20.0)
    loss_fn = nn.MSELoss()
    hook = smd.Hook.recommended(str(out_dir))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(150):
        model.train()
        j = (step * 32) % 512
        opt.zero_grad()
        loss_fn(model(x[j:j + 32]), y[j:j + 32]).backward()
        opt.step()
        if (step + 1) % 50 == 0:
            model.eval()
            with torch.no_grad():
                loss_fn(model(x[512:]), y[512:])
    hook.close()
    return str(out_dir)


class _VAE(nn.Module):
    def __init__(self, z: int = 8):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(64, 64), nn.ReLU())
        self.mu, self.lv = nn.Linear(64, z), nn.Linear(64, z)
        self.dec = nn.Sequential(nn.Linear(z, 64), nn.ReLU(), nn.Linear(64, 64))

    def forward(self, x):
        h = self.enc(x)
        mu, lv = self.mu(h), self.lv(h)
        z = mu + torch.randn_like(mu) * (0.5 * lv).exp() if self.training else mu
        return self.dec(z), mu, lv


class _VAELoss(nn.Module):
    """Reconstruction (binary cross-entropy on logits, summed per image) + beta * KL, called as
    ``loss((logits, mu, logvar), x)``: the hook saves the logits as its first input, and ``mu`` (not the image)
    as its second."""

    def __init__(self, beta: float):
        super().__init__()
        self.beta = beta

    def forward(self, out, x):
        logits, mu, lv = out
        rec = F.binary_cross_entropy_with_logits(logits, x, reduction="sum") / len(x)
        kl = (-0.5 * (1 + lv - mu ** 2 - lv.exp()).sum(1)).mean()
        return rec + self.beta * kl


def _vae(out_dir, beta: float) -> str:
    """A VAE on the 8x8 digits (10 epochs of 14 batches, a validation pass after each) under Hook.recommended:
    with beta 20 its posterior collapses (the KL term wins: the code carries nothing, the decoder gives the
    mean image), with beta 1 it learns."""
    datasets = pytest.importorskip("sklearn.datasets")
    torch.manual_seed(0)
    x = torch.tensor(datasets.load_digits().data / 16.0, dtype=torch.float32)
    model, loss_fn = _VAE(), _VAELoss(beta)
    hook = smd.Hook.recommended(str(out_dir))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(10):
        model.train()
        for j in range(0, 1400, 100):
            opt.zero_grad()
            loss_fn(model(x[j:j + 100]), x[j:j + 100]).backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            loss_fn(model(x[1400:]), x[1400:])
    hook.close()
    return str(out_dir)


def test_a_regression_whose_relus_are_dead_predicts_one_value_and_is_found(tmp_path):
    r = judged(_regression(tmp_path / "run", "fit", dead=True), "ImproperOutput")
    assert r.status == ISSUES, (r.status, r.detail)
    reason = r.findings[0].reason
    assert SAID in reason and "the same value for every row" in reason and "MSELoss_input_1" in reason, reason


def test_a_collapsed_vae_is_found(tmp_path):
    r = judged(_vae(tmp_path / "run", beta=20.0), "ImproperOutput")
    assert r.status == ISSUES, (r.status, r.detail)
    reason = r.findings[0].reason
    # (compared with the model's input: the loss's second input is mu, not the image it reconstructs)
    assert SAID in reason and "the model's input _VAE_input_0" in reason and "times less spread" in reason, reason


@pytest.mark.parametrize("targets", ["fit", "weak"])
def test_healthy_regressions_are_not(tmp_path, targets):
    r = judged(_regression(tmp_path / "run", targets), "ImproperOutput")
    assert r.status == NO_ISSUES, (r.status, r.findings[0].reason if r.findings else r.detail)


def test_a_healthy_vae_is_not(tmp_path):
    r = judged(_vae(tmp_path / "run", beta=1.0), "ImproperOutput")
    assert r.status == NO_ISSUES, (r.status, r.findings[0].reason if r.findings else r.detail)
    assert "only whether the output depends on the model's input was judged" in r.detail, r.detail


def test_one_value_for_targets_that_are_one_value_is_not(tmp_path):
    r = judged(_regression(tmp_path / "run", "one", dead=True), "ImproperOutput")
    assert r.status != ISSUES, r.findings[0].reason
