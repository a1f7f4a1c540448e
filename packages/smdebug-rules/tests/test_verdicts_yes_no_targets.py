"""ClassImbalance on targets written as rows of 0/1: a binary classifier trained with BCEWithLogitsLoss (its
labels were never collected: ClassImbalance said the run's targets are no classes), a multi-label classifier
(each label its own yes/no: counting all the 0s against all the 1s would call every task with rare labels
imbalanced), and one-hot targets (one class per sample; flattened, 12 balanced classes read as 11 zeros per
one)."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

import smdebug.pytorch as smd
from smdebug.rules import run_rules
from smdebug.rules.results import ISSUES, NO_ISSUES, NOT_APPLICABLE

pytestmark = pytest.mark.usefixtures("torch_one_thread")


def train(path, x, y, loss_fn, outputs, epochs=6):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(x.shape[1], 16), nn.ReLU(), nn.Linear(16, outputs))
    hook = smd.Hook.recommended(str(path))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(epochs):
        for i in range(0, len(x), 32):
            loss = loss_fn(model(x[i:i + 32]), y[i:i + 32])
            opt.zero_grad()
            loss.backward()
            opt.step()
    hook.close()
    return path


def class_imbalance(path):
    (result,) = run_rules(str(path), [("ClassImbalance", {"argmax": "True"})]).rules
    assert result.error is None, result.error
    return result


def features(n=512, d=10):
    torch.manual_seed(1)
    return torch.randn(n, d)


@pytest.mark.parametrize("cut, expected", [(0.0, NO_ISSUES), (1.6, ISSUES)], ids=["balanced", "one-in-twenty"])
def test_a_bce_with_logits_classifier_is_judged(tmp_path, cut, expected):
    x = features()
    y = (x[:, :1] > cut).float()
    r = class_imbalance(train(tmp_path, x, y, nn.BCEWithLogitsLoss(), 1))
    assert r.status == expected, (r.status, r.detail)
    assert r.steps_evaluated > 0
    if expected == ISSUES:
        assert "class 1" in r.findings[0].reason


def test_multi_label_targets_are_not_classes(tmp_path):
    x = features()
    y = (x[:, :4] > 1.0).float()  # four labels, each true for about one sample in six
    r = class_imbalance(train(tmp_path, x, y, nn.BCEWithLogitsLoss(), 4))
    assert r.status == NOT_APPLICABLE, (r.status, r.detail)
    assert "yes/no" in r.detail


def test_one_hot_targets_are_one_class_per_sample(tmp_path):
    x = features(n=768)
    classes = torch.argmax(x[:, :6], dim=1) * 2 + (x[:, 6] > 0).long()  # 12 classes, about equally common
    y = nn.functional.one_hot(classes, 12).float()  # CrossEntropyLoss takes class probabilities too
    r = class_imbalance(train(tmp_path, x, y, nn.CrossEntropyLoss(), 12))
    assert r.status == NO_ISSUES, (r.status, r.detail, [f.reason for f in r.findings])
    assert r.steps_evaluated > 0


def test_a_multi_label_batch_that_looks_one_hot_stays_multi_label(tmp_path):
    # step 0: rows with 0, 1 or 2 labels; step 1: by chance every row has exactly one (all the first label)
    import numpy as np

    from _hooks import NumpyHook
    from smdebug import SaveConfig

    hook = NumpyHook(out_dir=str(tmp_path), save_config=SaveConfig(save_interval=1))
    rng = np.random.default_rng(0)
    first = (rng.random((64, 4)) < 0.3).astype(np.float32)
    second = np.zeros((64, 4), np.float32)
    second[:, 0] = 1
    for labels in (first, second):
        hook.begin_step()
        hook.save_tensor("targets", labels, "labels")
        hook.save_tensor("scores", rng.normal(size=(64, 4)).astype(np.float32), "predictions")
        hook.save_tensor("loss", np.float32(1.0), "losses")
        hook.end_step()
    hook.close()
    r = class_imbalance(tmp_path)
    assert r.status == NOT_APPLICABLE, (r.status, r.detail, [f.reason for f in r.findings])
    assert "yes/no" in r.detail
