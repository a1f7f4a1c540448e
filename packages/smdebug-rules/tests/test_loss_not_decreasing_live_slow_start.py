"""LossNotDecreasing judged live (a followed run) on a slow start: a learning rate warmed up from nearly 0 keeps the
loss flat for its first steps, then it learns. Judged afterwards, the stall the loss later left is forgiven; live,
the first judgeable checks (step ~50) decided, and a healthy run was reported, and stopped with --stop-training
(probe 12c F1). Live, a stall is now reported once it has held over half of the run so far: the slow start is not,
and a loss that never moves (a learning rate of 0) still is, before the run ends."""

from __future__ import annotations

import shutil
import threading

import pytest

from smdebug.core.locations import END_OF_JOB_FILE
from smdebug.rules import run_rules
from smdebug.rules.results import ISSUES, NO_ISSUES
from smdebug.trials import create_trial

torch = pytest.importorskip("torch")
nn = torch.nn

import smdebug.pytorch as smd  # noqa: E402
from _torch_runs import classification_data, mlp  # noqa: E402

STEPS = 240


def _train(path, lr: float, warmup: int):
    torch.set_num_threads(1)
    x, y = classification_data(n=512, classes=3)
    model = mlp(classes=3, hidden=32)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    # a cubic warm-up: about 1/1000 of the rate for the first tenth of it, the full rate at its end
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: min(1.0, ((step + 1) / warmup) ** 3))
    loss_fn = nn.CrossEntropyLoss()
    hook = smd.Hook.recommended(str(path))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    losses = []
    for step in range(STEPS):
        start = (step * 64) % len(x)
        opt.zero_grad()
        loss = loss_fn(model(x[start:start + 64]), y[start:start + 64])
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
    hook.close()
    return losses


def _followed(run: str, tmp_path, monkeypatch):
    """The rule's verdict on ``run`` followed while it trained: every step judged before the end marker comes."""
    monkeypatch.setenv("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")
    live = tmp_path / "live"
    shutil.copytree(run, live)
    marker = live / END_OF_JOB_FILE
    kept = marker.read_bytes()
    marker.unlink()
    last = create_trial(run).steps()[-1]

    def end_once_every_step_was_judged(result):
        if result.last_step == last and not marker.exists():
            threading.Timer(0.5, lambda: marker.write_bytes(kept)).start()

    (r,) = run_rules(str(live), ["LossNotDecreasing"], follow=True, poll_interval=0.1, timeout=120,
                     on_progress=end_once_every_step_was_judged).rules
    return r


def test_a_slow_start_is_not_reported_while_the_run_trains(tmp_path, monkeypatch):
    losses = _train(tmp_path / "run", lr=0.5, warmup=150)
    early, late = sum(losses[:40]) / 40, sum(losses[-40:]) / 40
    assert abs(losses[45] - losses[0]) < 0.02 * losses[0] and late < 0.5 * early, (losses[0], losses[45], late)
    (after,) = run_rules(str(tmp_path / "run"), ["LossNotDecreasing"]).rules
    assert after.status == NO_ISSUES, [f.reason for f in after.findings]
    live = _followed(str(tmp_path / "run"), tmp_path, monkeypatch)
    assert live.status == NO_ISSUES, [(f.step, f.reason) for f in live.findings]


def test_a_loss_that_never_moves_is_reported_while_the_run_trains(tmp_path, monkeypatch):
    _train(tmp_path / "run", lr=0.0, warmup=1)
    live = _followed(str(tmp_path / "run"), tmp_path, monkeypatch)
    assert live.status == ISSUES
    first = live.findings[0].step
    assert first < STEPS - 60, first  # live: well before the end
