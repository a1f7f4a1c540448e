"""Divergence: a training loss that learned, then turned and climbed steadily to the end (probe 11b M2).

AdamW with ``weight_decay=10`` (meant as 1e-2) on a digits MLP: the training loss falls 2.2 -> 1.39, then the decay
comes to dominate and the loss climbs for the last third of the run at a constant learning rate. It gives back only
a few percent of its progress before the run ends, so neither "gave back most of its progress" nor "grew 100-fold"
held, and every rule was quiet. Schedules that raise the loss on purpose -- warm restarts, one-cycle -- must stay
quiet: their loss rises for a while and falls again."""

from __future__ import annotations

import numpy as np
import pytest

from smdebug.rules import run_rules
from smdebug.rules.results import ISSUES, NO_ISSUES

from _judging import judged  # noqa: E402
from _tensorflow import tensorflow_one_thread  # noqa: E402


def _digits():
    datasets = pytest.importorskip("sklearn.datasets")
    d = datasets.load_digits()
    x, y = (d.data / 16).astype("float32"), d.target.astype("int64")
    order = np.random.default_rng(0).permutation(len(x))
    return x[order], y[order]


def keras_adamw_decay_too_large(path, record_lr: bool = False):
    """A 64-64 ReLU MLP on 1347 digits, AdamW(1e-3, weight_decay=10), 12 epochs of batches of 32; returns the
    per-epoch training losses. ``record_lr``: the learning rate is saved every batch (as a user logs it)."""
    tensorflow_one_thread()
    keras = pytest.importorskip("keras")
    import smdebug.tensorflow as smd_tf

    keras.utils.set_random_seed(0)
    x, y = _digits()
    model = keras.Sequential([keras.Input((64,)), keras.layers.Dense(64, activation="relu"),
                              keras.layers.Dense(64, activation="relu"), keras.layers.Dense(10)])
    model.compile(keras.optimizers.AdamW(1e-3, weight_decay=10.0),
                  keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    hook = smd_tf.KerasHook.recommended(str(path))
    callbacks = [hook]
    if record_lr:
        class RecordLearningRate(keras.callbacks.Callback):
            def on_train_batch_begin(self, batch, logs=None):
                hook.save_scalar("learning_rate", float(np.asarray(model.optimizer.learning_rate)))

        callbacks.append(RecordLearningRate())
    history = model.fit(x[:1347], y[:1347], epochs=12, batch_size=32, verbose=0, callbacks=callbacks)
    hook.close()
    return history.history["loss"]


def test_a_training_loss_that_climbs_steadily_under_too_much_weight_decay_fires(tmp_path):
    losses = keras_adamw_decay_too_large(tmp_path / "run")
    best = int(np.argmin(losses))
    # the shape this test is about: real progress, then a climb over the last epochs, each higher than the last,
    # that gives back far less than half of the progress (the give-back test's share)
    assert best <= 8 and losses[best] < 0.75 * losses[0], losses
    assert all(b > a for a, b in zip(losses[best:], losses[best + 1:])), losses
    assert losses[-1] - losses[best] < 0.2 * (losses[0] - losses[best]), losses
    r = judged(tmp_path / "run", "Divergence")
    assert r.status == ISSUES, (r.status, r.detail)
    reason = r.findings[0].reason
    assert "climbed steadily after its progress" in reason and "weight decay" in reason, reason
    assert "recorded no learning rate" in reason, reason


def test_the_climb_at_a_recorded_constant_learning_rate_says_so(tmp_path):
    keras_adamw_decay_too_large(tmp_path / "run", record_lr=True)
    r = judged(tmp_path / "run", "Divergence")
    assert r.status == ISSUES, (r.status, r.detail)
    assert "at a constant learning rate (0.001, recorded)" in r.findings[0].reason, r.findings[0].reason
    # climb_percent=0 turns the test off: nothing else in the rule fires on this run
    (off,) = run_rules(str(tmp_path / "run"), [("Divergence", {"climb_percent": "0"})]).rules
    assert off.status == NO_ISSUES, [f.reason for f in off.findings]


#: the one-cycle schedule's peak learning rate (SGD with momentum 0.9: high, but one a healthy run survives)
MAX_LR = 0.5


def _torch_digits_run(path, schedule: str, steps: int):
    """A 64-64-10 MLP on digits minibatches under SGD with momentum and a schedule that raises the learning rate
    on purpose; the learning rate is not recorded (the loss's shape alone is judged). Returns the losses."""
    torch = pytest.importorskip("torch")
    import torch.nn as nn

    import smdebug.pytorch as smd

    torch.manual_seed(0)
    x, y = (torch.tensor(a) for a in _digits())
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    loss_fn = nn.CrossEntropyLoss()
    hook = smd.Hook.recommended(str(path))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    if schedule == "restarts":
        opt = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
        sched = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=steps // 4)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=MAX_LR, total_steps=steps)
    g = torch.Generator().manual_seed(0)
    losses = []
    for _ in range(steps):
        idx = torch.randint(0, len(x), (32,), generator=g)
        opt.zero_grad()
        loss = loss_fn(model(x[idx]), y[idx])
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
    hook.close()
    return np.asarray(losses)


def test_warm_restarts_whose_loss_rises_after_each_restart_stay_quiet(tmp_path):
    losses = _torch_digits_run(tmp_path / "run", "restarts", 400)
    # each restart (steps 100, 200, 300) throws the loss well above where the cycle before it ended
    for restart in (100, 200, 300):
        before, after = np.median(losses[restart - 20:restart]), np.median(losses[restart + 20:restart + 60])
        assert after > 1.5 * before, (restart, before, after)
    r = judged(tmp_path / "run", "Divergence")
    assert r.status == NO_ISSUES, [f.reason for f in r.findings]


def test_a_one_cycle_schedule_stays_quiet(tmp_path):
    losses = _torch_digits_run(tmp_path / "run", "onecycle", 400)
    medians = [float(np.median(losses[i:i + 20])) for i in range(0, 400, 20)]
    # near the peak of the learning rate (step 120) the loss rises above its best so far; then it falls far below
    assert max(medians[4:8]) > 1.2 * min(medians[:5]), medians
    assert medians[-1] < 0.5 * min(medians[:8]), medians
    r = judged(tmp_path / "run", "Divergence")
    assert r.status == NO_ISSUES, [f.reason for f in r.findings]
