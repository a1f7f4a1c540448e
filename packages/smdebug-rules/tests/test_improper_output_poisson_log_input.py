"""ImproperOutput judges PoissonNLLLoss by its ``log_input`` flag, which the torch hook records with the loss's
type. With ``log_input=True`` (the default) the loss takes log-rates; a model ending in Softplus gives it rates,
so every predicted rate exp(softplus(.)) is at least 1 while most targets are 0: the model cannot fit the data,
and the rule said NotApplicable ("expect nothing this rule can check"), exit 0 (probe 14a x F2, b09)."""

from __future__ import annotations

import pytest

from smdebug.rules.results import ISSUES, NO_ISSUES

torch = pytest.importorskip("torch")
nn = torch.nn

from _judging import judged  # noqa: E402
from _torch_runs import train_recommended  # noqa: E402


def poisson_run(path, head, log_input: bool = True) -> str:
    """Counts of mean about 0.7 (rate exp(0.5 * x0 - 0.5)) from 6 features, a 6-16-1 MLP ending in ``head``."""
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(512, 6, generator=g)
    y = torch.poisson(torch.exp(0.5 * x[:, :1] - 0.5), generator=g)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1), *head)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    train_recommended(path, model, x, y, nn.PoissonNLLLoss(log_input=log_input), steps=40, optimizer=opt,
                      batch_size=64)
    return str(path)


def test_rates_fed_as_log_rates_fire(tmp_path):
    r = judged(poisson_run(tmp_path / "run", [nn.Softplus()]), "ImproperOutput")
    assert r.status == ISSUES, (r.status, r.detail)
    reason = r.findings[0].reason
    assert "log_input=True" in reason and "never went below 0" in reason, reason


def test_log_rates_from_a_linear_output_pass(tmp_path):
    r = judged(poisson_run(tmp_path / "run", []), "ImproperOutput")
    assert r.status == NO_ISSUES, (r.status, r.detail)


def test_log_rates_fed_as_rates_fire(tmp_path):
    r = judged(poisson_run(tmp_path / "run", [], log_input=False), "ImproperOutput")
    assert r.status == ISSUES, (r.status, r.detail)
    assert "log_input=False" in r.findings[0].reason, r.findings[0].reason
