"""ClassImbalance's misprediction test judges the trained model by every label save that stands for it, pooled
(probe 14b F2): under Hook.recommended's tapered schedule the last save is one small batch, whose classes hold
fewer than 10 labels each, so a model collapsed to one class passed with a bare NoIssuesFound. Pooled, it is
found, and its message says that the model predicts one class; when even the pool leaves a class too rare to
judge, the verdict's detail says so. Prediction rows that are not finite (a diverged model's NaN outputs) are
not judged as class 0 (probe 14a z F7): when nothing finite is left, the detail says the predictions were not
numbers (Confusion: NotEvaluated, saying so)."""

from __future__ import annotations

import pytest

from smdebug.rules.results import ISSUES, NO_ISSUES, NOT_EVALUATED

torch = pytest.importorskip("torch")
nn = torch.nn

from _torch_runs import classification_data, mlp, train_recommended, train_torch  # noqa: E402
from _judging import judged  # noqa: E402


def test_a_collapsed_model_is_found_by_its_pooled_small_batches(tmp_path):
    torch.set_num_threads(1)
    x, y = classification_data(n=512, classes=3)  # classes 0, 1, 2 in about 1 : 2 : 1
    # weight decay 1.0 pulls every weight to 0 within a few steps: the model predicts class 1 for every sample;
    # batches of 16 leave fewer than 10 labels of any class in one save
    model = mlp(classes=3, hidden=32)
    opt = torch.optim.SGD(model.parameters(), lr=0.5, weight_decay=1.0)
    train_recommended(tmp_path, model, x, y, nn.CrossEntropyLoss(), steps=300, optimizer=opt, batch_size=16)
    r = judged(tmp_path, "ClassImbalance")
    assert r.status == ISSUES, (r.status, r.detail)
    reason = r.findings[0].reason
    assert "mispredicts class" in reason and "saves of steps" in reason, reason
    assert "it predicts class 1 for" in reason and "never predicted" in reason, reason


def test_classes_too_rare_even_pooled_are_said_not_judged(tmp_path):
    torch.set_num_threads(1)
    x, y = classification_data(n=64, classes=3)
    # 12 steps of 4 samples, saved every step: the trained model's saves (its last 10 %, the loss still falling
    # before) hold 4 labels, no class with 10
    train_torch(tmp_path, mlp(classes=3), (x, y), steps=12, batch_size=4, lr=0.05,
                include_collections=("losses", "labels", "predictions"))
    r = judged(tmp_path, "ClassImbalance")
    assert r.status == NO_ISSUES, (r.status, [f.reason for f in r.findings])
    assert r.detail and "misprediction test" in r.detail and "no class with 10" in r.detail, r.detail


def test_predictions_that_are_not_finite_are_not_judged_as_class_0(tmp_path):
    torch.set_num_threads(1)
    x, y = classification_data(n=300, classes=3)
    model = mlp(classes=3)

    def poison(step):
        if step == 20:  # a diverged model: NaN weights, NaN outputs for every sample from here on
            with torch.no_grad():
                next(model.parameters()).fill_(float("nan"))

    train_torch(tmp_path, model, (x, y), steps=30, lr=0.1, before_step=poison,
                include_collections=("losses", "labels", "predictions"))
    r = judged(tmp_path, "ClassImbalance")
    assert r.status == NO_ISSUES, (r.status, [f.reason for f in r.findings])
    assert r.detail and "not finite" in r.detail and "not reached" in r.detail, r.detail
    # (Confusion, which judges nothing else, says why it did not judge: no confusion matrix of NaN rows as class 0)
    c = judged(tmp_path, "Confusion")
    assert c.status == NOT_EVALUATED and "not finite" in c.detail, (c.status, c.detail)
