"""A run a rule stopped (``--follow --stop-training``) has no trained model: ClassImbalance's misprediction test
and Confusion must not call the model at the stop "the trained model" (probe 15d F1: a run stopped at step 76 of
15 epochs by ExplodingTensor got "the trained model mispredicts class 8"). The misprediction test says it was not
reached, with the stop; Confusion is NotApplicable, saying so; the class-count test still judges the labels."""

from __future__ import annotations

import pytest

from smdebug.core.stop_signal import write_stop_signal
from smdebug.exceptions import TrainingStopRequested
from smdebug.rules.results import ISSUES, NO_ISSUES, NOT_APPLICABLE

torch = pytest.importorskip("torch")
nn = torch.nn

from _torch_runs import classification_data, mlp  # noqa: E402
from _judging import judged  # noqa: E402
import smdebug.pytorch as smd  # noqa: E402

pytestmark = pytest.mark.usefixtures("torch_one_thread")


def _stopped_run(out, y_of=lambda y: y):
    """An MLP on 3 classes, labels and predictions saved every step, stopped by a rule's signal at step 15 of a
    run meant to last 400: its model has barely started learning (it mispredicts whole classes)."""
    x, y = classification_data(n=512, classes=3)
    y = y_of(y)
    model = mlp(classes=3, hidden=32)
    loss_fn = nn.CrossEntropyLoss()
    hook = smd.Hook(out_dir=str(out), save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["losses", "labels", "predictions"])
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.SGD(model.parameters(), lr=0.001)
    with pytest.raises(TrainingStopRequested):
        for step in range(400):
            start = (step * 64) % 512
            opt.zero_grad()
            loss_fn(model(x[start:start + 64]), y[start:start + 64]).backward()
            opt.step()
            if step == 15:
                write_stop_signal(str(out), "LossNotDecreasing", 15, "the loss did not fall")
    hook.close()


def test_the_model_at_the_stop_is_not_judged_as_the_trained_model(tmp_path):
    _stopped_run(tmp_path)
    r = judged(tmp_path, "ClassImbalance")
    assert r.status == NO_ISSUES, (r.status, [f.reason for f in r.findings])
    assert "trained model" not in " ".join(f.reason for f in r.findings)
    assert r.detail and "misprediction test" in r.detail and "not reached" in r.detail, r.detail
    assert "stopped on request by rule LossNotDecreasing" in r.detail, r.detail
    c = judged(tmp_path, "Confusion")
    assert c.status == NOT_APPLICABLE, (c.status, c.detail, [f.reason for f in c.findings])
    assert "stopped on request by rule LossNotDecreasing" in c.detail, c.detail


def test_the_class_counts_of_a_stopped_run_are_still_judged(tmp_path):
    # (every label of classes 1 and 2 but one in 40 of class 0 -> class 0 about 40 times rarer)
    _stopped_run(tmp_path, y_of=lambda y: torch.where((y == 0) & (torch.arange(len(y)) % 40 != 0), 1, y))
    r = judged(tmp_path, "ClassImbalance")
    assert r.status == ISSUES, (r.status, r.detail)
    assert "ratio" in r.findings[0].reason and "trained model" not in r.findings[0].reason, r.findings[0].reason
