"""ClassImbalance on binary models with one output per sample (a single logit under BCEWithLogitsLoss): the loss
scores two classes though the output has no class axis. A run whose labels are all one of them (a recommender
trained on positives only, probe 9's two-tower) is the extreme of imbalance and fires; balanced binary labels stay
quiet, and a multi-label model (several sigmoid columns) is still not read as one binary problem."""

from __future__ import annotations

import pytest

from smdebug.rules.results import ISSUES, NO_ISSUES, NOT_APPLICABLE

torch = pytest.importorskip("torch")
nn = torch.nn

from _torch_runs import train_recommended  # noqa: E402
from _judging import judged  # noqa: E402


def binary_data(positives_only: bool, n: int = 256):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 8, generator=g)
    y = torch.ones(n) if positives_only else (x[:, 0] > 0).float()
    return x, y


def single_logit_run(path, positives_only: bool) -> str:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    x, y = binary_data(positives_only)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1), nn.Flatten(0))  # one logit per sample
    train_recommended(path, model, x, y, nn.BCEWithLogitsLoss(), steps=40, lr=0.1, batch_size=64)
    return str(path)


def test_labels_all_one_class_of_a_single_logit_binary_model_fire(tmp_path):
    r = judged(single_logit_run(tmp_path / "run", positives_only=True), "ClassImbalance")
    assert r.status == ISSUES, (r.status, r.detail)
    reason = r.findings[0].reason
    assert "are class 1, of the 2 classes" in reason and "BCEWithLogitsLoss" in reason, reason


def test_balanced_labels_of_a_single_logit_binary_model_stay_quiet(tmp_path):
    r = judged(single_logit_run(tmp_path / "run", positives_only=False), "ClassImbalance")
    assert r.status == NO_ISSUES, (r.status, r.detail, [f.reason for f in r.findings])


def test_multi_label_sigmoid_columns_are_not_one_binary_problem(tmp_path):
    # three yes/no targets per sample, the first always 1: each column is its own binary task, not classes
    torch.manual_seed(0)
    torch.set_num_threads(1)
    x, _ = binary_data(False)
    y = torch.stack([torch.ones(len(x)), (x[:, 0] > 0).float(), (x[:, 1] > 0).float()], dim=1)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    train_recommended(tmp_path / "run", model, x, y, nn.BCEWithLogitsLoss(), steps=40, lr=0.1, batch_size=64)
    r = judged(tmp_path / "run", "ClassImbalance")
    assert r.status == NOT_APPLICABLE, (r.status, r.detail, [f.reason for f in r.findings])
