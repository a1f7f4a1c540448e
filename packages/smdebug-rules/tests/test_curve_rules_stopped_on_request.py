"""A run a rule stopped (``--follow --stop-training``) ends normally, but early: the curve rules' tests of "the end
of training" must not judge it as a training that ran its course (probe 15d F1: SlowConvergence said "still falling
when training ended ... only 25% of the initial loss is gone" of a run the rules had stopped at step 56 of 680).
SlowConvergence, which judges the end only, is NotApplicable and says why; Divergence leaves out its climb-to-the-end
test and says so; what the rules judge step by step (LossNotDecreasing) is judged as before."""

from __future__ import annotations

import pytest

from smdebug.core.stop_signal import write_stop_signal
from smdebug.exceptions import TrainingStopRequested
from smdebug.rules.results import NO_ISSUES, NOT_APPLICABLE

torch = pytest.importorskip("torch")
nn = torch.nn

from _torch_runs import classification_data, mlp  # noqa: E402
from _judging import judged  # noqa: E402
import smdebug.pytorch as smd  # noqa: E402

pytestmark = pytest.mark.usefixtures("torch_one_thread")

STOP = "stopped on request by rule LossNotDecreasing"


def _stopped_while_learning(out, stop_at=None):
    """An MLP on 3 classes learning steadily (SGD, lr 0.05), its loss saved every step, stopped by a rule's signal
    at step ``stop_at`` of a run meant to last 2000 steps (None: the same run, 120 steps long, not stopped)."""
    x, y = classification_data(n=512, classes=3)
    model = mlp(classes=3, hidden=32)
    loss_fn = nn.CrossEntropyLoss()
    hook = smd.Hook(out_dir=str(out), save_config=smd.SaveConfig(save_interval=1), include_collections=["losses"])
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    try:
        for step in range(2000 if stop_at else 120):
            start = (step * 64) % 512
            opt.zero_grad()
            loss_fn(model(x[start:start + 64]), y[start:start + 64]).backward()
            opt.step()
            if step == stop_at:
                write_stop_signal(str(out), "LossNotDecreasing", stop_at, "the loss did not fall")
    except TrainingStopRequested:
        assert stop_at is not None
    hook.close()


def test_the_end_of_training_is_not_judged_on_a_run_a_rule_stopped(tmp_path):
    _stopped_while_learning(tmp_path, stop_at=120)
    slow = judged(tmp_path, "SlowConvergence")
    assert slow.status == NOT_APPLICABLE, (slow.status, [f.reason for f in slow.findings])
    assert STOP in slow.detail and "cut short" in slow.detail, slow.detail
    divergence = judged(tmp_path, "Divergence")
    assert divergence.status == NO_ISSUES, (divergence.status, [f.reason for f in divergence.findings])
    assert divergence.detail and "climbing until training ended was left out" in divergence.detail, divergence.detail
    assert STOP in divergence.detail, divergence.detail
    # (judged step by step: a stall is a stall wherever the run ends)
    assert judged(tmp_path, "LossNotDecreasing").steps_evaluated > 0


def test_a_run_that_ran_its_course_is_judged_at_its_end(tmp_path):
    # the control: the same steps, no stop -- the end is judged, and nothing is left out
    _stopped_while_learning(tmp_path)
    slow = judged(tmp_path, "SlowConvergence")
    assert slow.status != NOT_APPLICABLE and slow.steps_evaluated > 0, (slow.status, slow.detail)
    divergence = judged(tmp_path, "Divergence")
    assert not divergence.detail or "left out" not in divergence.detail, divergence.detail
