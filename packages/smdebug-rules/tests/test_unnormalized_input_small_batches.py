"""UnnormalizedInput on a run trained with batches smaller than min_samples (batch size 8): the rows of
consecutive saves are pooled until there are enough, so the input is judged rather than never (probe 10: a
healthy batch-8 run ended NotEvaluated, exit 3, for want of 16 rows in one save)."""

from __future__ import annotations

import pytest

from smdebug.rules.results import ISSUES, NO_ISSUES

torch = pytest.importorskip("torch")
nn = torch.nn

from _judging import judged  # noqa: E402
from _torch_runs import classification_data, mlp, train_recommended  # noqa: E402


def batch_8_run(path, scale: float) -> str:
    torch.set_num_threads(1)
    x, y = classification_data(n=256, classes=3, scale=scale)
    model = mlp(classes=3, hidden=16)
    opt = torch.optim.SGD(model.parameters(), lr=0.05 / scale)
    train_recommended(path, model, x, y, nn.CrossEntropyLoss(), steps=60, optimizer=opt, batch_size=8)
    return str(path)


def test_standardised_features_in_batches_of_8_are_judged(tmp_path):
    r = judged(batch_8_run(tmp_path / "run", scale=1.0), "UnnormalizedInput")
    assert r.status == NO_ISSUES, (r.status, r.detail)


def test_raw_features_in_batches_of_8_fire_over_pooled_saves(tmp_path):
    r = judged(batch_8_run(tmp_path / "run", scale=1000.0), "UnnormalizedInput")
    assert r.status == ISSUES, (r.status, r.detail)
    assert "rows of 2 saves" in r.findings[0].reason, r.findings[0].reason
