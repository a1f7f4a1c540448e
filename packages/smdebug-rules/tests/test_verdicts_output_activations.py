"""ImproperOutput on real PyTorch runs: logits clamped at 0 by a ReLU left after the last layer, and integer
targets of a squared error that are counts (a regression) or balanced class ids (a classification trained as
a regression on the class index).

A linear layer's outputs are exactly 0 only all at once (a zero-initialised head at its first step); logits
that never go below 0 with many of them at 0 went through a clamp, which also stops their gradient. Integer
targets from 0 are class ids when they are about equally frequent, as a data set made for classification is;
a count's small values outnumber its tail by far."""

import numpy as np
import pytest

from smdebug.rules import run_rules

torch = pytest.importorskip("torch")
nn = torch.nn
pytest.importorskip("smdebug.pytorch")

from _torch_runs import classification_data, train_recommended  # noqa: E402


def _train(out_dir, model, x, y, loss_fn, steps=40, lr=0.05):
    return train_recommended(out_dir, model, x, y, loss_fn, steps=steps,
                             optimizer=torch.optim.Adam(model.parameters(), lr=lr))


def _improper_output(out_dir):
    (result,) = run_rules(str(out_dir), ["ImproperOutput"]).rules
    return result


def test_logits_through_a_relu_fire(tmp_path):
    torch.manual_seed(0)
    x, y = classification_data(256)
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3), nn.ReLU())
    _train(tmp_path, model, x, y, nn.CrossEntropyLoss())
    result = _improper_output(tmp_path)
    assert result.status == "IssuesFound", result.detail
    assert "never went below 0" in result.findings[0].reason and "clamped at 0" in result.findings[0].reason


def test_logits_of_a_zero_initialised_head_do_not_fire(tmp_path):
    # all exactly 0 at the first step, of both signs from the next
    torch.manual_seed(0)
    x, y = classification_data(256)
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))
    nn.init.zeros_(model[2].weight)
    nn.init.zeros_(model[2].bias)
    _train(tmp_path, model, x, y, nn.CrossEntropyLoss())
    result = _improper_output(tmp_path)
    assert result.status == "NoIssuesFound", (result.detail, result.findings)


def _regression(out_dir, targets, x):
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(x.shape[1], 32), nn.ReLU(), nn.Linear(32, 1))
    losses = _train(out_dir, model, x, targets[:, None], nn.MSELoss(), steps=60, lr=0.01)
    return _improper_output(out_dir), losses


def test_a_squared_error_on_counts_is_a_regression(tmp_path):
    # how many of 12 noisy features exceed a threshold: 0..12, most of them 3-6, the ends rare
    g = torch.Generator().manual_seed(2)
    x = torch.randn(1024, 12, generator=g)
    counts = ((x + 0.5 * torch.randn(1024, 12, generator=g)) > 0.3).sum(1).float()
    assert set(counts.long().tolist()) >= set(range(10))  # every id 0-9 present: ids alone cannot tell
    result, losses = _regression(tmp_path, counts, x)
    assert np.mean(losses[-10:]) < 0.5 * losses[0]  # it learns
    assert result.status == "NoIssuesFound", (result.detail, result.findings)


def test_a_squared_error_on_balanced_class_ids_fires(tmp_path):
    g = torch.Generator().manual_seed(3)
    x = torch.randn(1024, 12, generator=g)
    classes = torch.randint(0, 5, (1024,), generator=g).float()  # 5 classes, about equally frequent
    result, _ = _regression(tmp_path, classes, x)
    assert result.status == "IssuesFound", result.detail
    assert "class ids 0-4, each about as frequent as the others" in result.findings[0].reason
