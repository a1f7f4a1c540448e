"""UnnormalizedInput on validation data prepared otherwise than the training data: a scaling applied to the
training split only leaves every feature of the evaluation batches off by the scaling's factor. The run holds
both (the hook saves the model's input in TRAIN and EVAL mode), so the rule compares them (probe 10: digits'
pixels divided by 16 for training only; the validation loss 3 times the training loss, and no rule said why). A
validation split prepared as the training one is quiet."""

from __future__ import annotations

import pytest

from smdebug.rules.results import ISSUES, NO_ISSUES

torch = pytest.importorskip("torch")
nn = torch.nn

import smdebug.pytorch as smd  # noqa: E402

from _judging import judged  # noqa: E402
from _torch_runs import classification_data, mlp  # noqa: E402


def run(path, validation_factor: float) -> str:
    torch.set_num_threads(1)
    x, y = classification_data(n=640, classes=3)
    train, val = slice(0, 512), slice(512, 640)
    model, loss_fn = mlp(classes=3, hidden=16), nn.CrossEntropyLoss()
    hook = smd.Hook.recommended(str(path))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(6):
        hook.set_mode(smd.modes.TRAIN)
        for start in range(0, 512, 32):
            loss = loss_fn(model(x[train][start:start + 32]), y[train][start:start + 32])
            opt.zero_grad()
            loss.backward()
            opt.step()
        hook.set_mode(smd.modes.EVAL)
        with torch.no_grad():
            for start in range(0, 128, 32):
                loss_fn(model(x[val][start:start + 32] * validation_factor), y[val][start:start + 32])
    hook.close()
    return str(path)


def test_validation_inputs_scaled_otherwise_fire(tmp_path):
    r = judged(run(tmp_path / "run", validation_factor=16.0), "UnnormalizedInput")
    assert r.status == ISSUES, (r.status, r.detail)
    assert "evaluation (EVAL) batches are on another scale" in r.findings[0].reason, r.findings[0].reason


def test_validation_inputs_prepared_alike_are_quiet(tmp_path):
    r = judged(run(tmp_path / "run", validation_factor=1.0), "UnnormalizedInput")
    assert r.status == NO_ISSUES, (r.status, [f.reason for f in r.findings])
