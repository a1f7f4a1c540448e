"""A loss with no floor running away below 0 (a sign-flipped cross-entropy) is no budget too small:
SlowConvergence said "was still falling when training ended ... 8x as much in the last third" (probe 13a F7,
beside Divergence). It says the loss ran away; it still fires, as Divergence waits for a 100-fold growth. A loss
that falls steadily just through 0 (a Gaussian negative log-likelihood) is judged as before."""

import pytest

torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from _torch_runs import classification_data, mlp, train_torch  # noqa: E402

from smdebug.rules import run_rules  # noqa: E402


class NegatedCrossEntropy(nn.Module):
    """The bug: a cross-entropy with its sign flipped, so that training maximises it."""

    def forward(self, logits, target):
        return -F.cross_entropy(logits, target)


class GaussianNLL(nn.Module):
    """A regression head predicting a mean and a log-variance: its loss goes below 0 once the variance is small."""

    def forward(self, out, target):
        mean, log_var = out[:, 0], out[:, 1].clamp(-8, 8)
        return (0.5 * (log_var + (target - mean) ** 2 / log_var.exp())).mean()


def _verdicts(run):
    result = run_rules(run, rules=["SlowConvergence", "Divergence"], ended=True)
    return {r.name: (r.status, r.findings[0].reason if r.findings else r.detail) for r in result.rules}


@pytest.mark.parametrize("optimizer,lr", [("adam", 0.01), ("sgd", 0.1)])
def test_a_sign_flipped_loss_running_away_is_said_as_such(tmp_path, optimizer, lr):
    torch.manual_seed(0)
    run = train_torch(tmp_path, mlp(), classification_data(), steps=100, lr=lr, optimizer=optimizer,
                      loss_fn=NegatedCrossEntropy(), include_collections=("losses",))
    status, reason = _verdicts(run)["SlowConvergence"]
    assert status == "IssuesFound" and "fell through 0 and ran away" in reason, reason
    assert "still falling" not in reason


def test_a_likelihood_settling_below_zero_is_still_judged(tmp_path):
    """Too small a learning rate for the budget: the NLL still falls steadily at the end, just through 0."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(256, 4, generator=g)
    y = x[:, 0] * 2 + 0.05 * torch.randn(256, generator=g)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 2))
    run = train_torch(tmp_path, model, (x, y), steps=200, lr=0.01, loss_fn=GaussianNLL(),
                      include_collections=("losses",))
    verdicts = _verdicts(run)
    assert verdicts["Divergence"][0] == "NoIssuesFound", verdicts
    assert verdicts["SlowConvergence"][0] == "IssuesFound", verdicts
    assert "was still falling when training ended" in verdicts["SlowConvergence"][1]
