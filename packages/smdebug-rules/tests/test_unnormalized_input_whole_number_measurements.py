"""UnnormalizedInput judges a PyTorch model's float input of whole numbers (counts, amounts in cents, ages) as
the measurements it is: PyTorch takes ids as integer tensors only (``nn.Embedding``, ``one_hot``). It took such
a table, counts up to 1e5 fed raw to a Linear layer, for "token or category ids" and said NotApplicable while
training collapsed (probe 14a z F5, zb12)."""

from __future__ import annotations

import pytest

from smdebug.rules.results import ISSUES, NO_ISSUES

torch = pytest.importorskip("torch")
nn = torch.nn

from _judging import judged  # noqa: E402
from _torch_runs import mlp, train_recommended  # noqa: E402


def counts_run(path, means) -> str:
    """Poisson counts with the given per-column means, as float32, into an MLP: 3 classes by the first two."""
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    rates = torch.tensor(means, dtype=torch.float32).expand(256, len(means))
    x = torch.poisson(rates, generator=g)
    y = ((x[:, 0] > rates[:, 0]).long() + (x[:, 1] > rates[:, 1]).long()).clamp(max=2)
    model = mlp(features=len(means), classes=3, hidden=16)
    opt = torch.optim.SGD(model.parameters(), lr=1e-6)
    train_recommended(path, model, x, y, nn.CrossEntropyLoss(), steps=20, optimizer=opt, batch_size=32)
    return str(path)


def test_raw_counts_in_a_float_table_fire(tmp_path):
    r = judged(counts_run(tmp_path / "run", [10.0, 300.0, 2000.0, 40000.0, 5.0, 80.0]), "UnnormalizedInput")
    assert r.status == ISSUES, (r.status, r.detail)
    assert "feature 3 has scale" in r.findings[0].reason, r.findings[0].reason


def test_small_counts_in_a_float_table_pass(tmp_path):
    # whole numbers too, at the scale of the data a network takes (flags, small counts)
    r = judged(counts_run(tmp_path / "run", [0.5, 1.0, 2.0, 3.0, 0.2, 4.0]), "UnnormalizedInput")
    assert r.status == NO_ISSUES, (r.status, r.detail)
