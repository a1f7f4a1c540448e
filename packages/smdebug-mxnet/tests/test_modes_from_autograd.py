"""Until a script calls ``hook.set_mode``, autograd tells the mode of each forward call of the model: under
``autograd.record()`` a TRAIN step, outside it an EVAL step. A Gluon loop that validates without set_mode (or
runs unmodified under ``smdebug run``) then keeps its validation losses out of the training series, and the
rules that compare the two (Overfit) can judge it. Real tiny Gluon networks, real training."""

import os
import subprocess
import sys
from pathlib import Path

import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, gluon, nd
from mxnet.gluon import nn

import smdebug.mxnet as smd
from smdebug.core.modes import ModeKeys

TRAIN, EVAL, GLOBAL = ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.GLOBAL
SCRIPT = Path(__file__).parent / "scripts" / "unmodified_train_validate.py"


def _rows(n, seed):
    rng = np.random.RandomState(seed)
    x = rng.randn(n, 6).astype("float32")
    return nd.array(x), nd.array((x[:, 0] + x[:, 1] > 0).astype("float32"))


def fit(hook, epochs, train_rows=32, batch=16, set_mode=False, trainer_registered=False, hybridize=False):
    """Training batches under autograd.record(), then a validation pass outside it, each epoch. Returns the
    validation losses (the mean of each batch) in order."""
    mx.random.seed(0)
    net = nn.HybridSequential()
    net.add(nn.Dense(64, activation="relu", in_units=6), nn.Dense(2, in_units=64))
    net.initialize(mx.init.Xavier(), ctx=mx.cpu())
    if hybridize:
        net.hybridize()
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.01})
    hook.register_block(net)
    hook.register_block(loss_fn)
    if trainer_registered:
        hook.register_trainer(trainer)
    x, y = _rows(train_rows, 0)
    vx, vy = _rows(64, 1)
    if set_mode:
        hook.set_mode(smd.modes.TRAIN)
    validation = []
    for _ in range(epochs):
        for i in range(0, train_rows, batch):
            with autograd.record():
                loss = loss_fn(net(x[i:i + batch]), y[i:i + batch])
            loss.backward()
            trainer.step(batch)
        for i in range(0, 64, 32):
            validation.append(loss_fn(net(vx[i:i + 32]), vy[i:i + 32]).asnumpy())
    hook.close()
    return validation


@pytest.mark.parametrize("trainer_registered", [False, True], ids=["forward_steps", "trainer_steps"])
@pytest.mark.parametrize("hybridize", [False, True], ids=["imperative", "hybridized"])
def test_validation_outside_record_is_saved_as_eval_steps_without_set_mode(out_dir, trainer_registered, hybridize):
    hook = smd.Hook(out_dir, save_config=smd.SaveConfig(save_interval=1), include_collections=["losses", "weights"])
    validation = fit(hook, epochs=3, trainer_registered=trainer_registered, hybridize=hybridize)
    trial = smd.create_trial(out_dir)
    assert trial.modes() == {TRAIN, EVAL}
    assert trial.steps(mode=TRAIN) == list(range(6)) and trial.steps(mode=EVAL) == list(range(6))
    loss = trial.tensor("softmaxcrossentropyloss0_output_0")
    saved = [loss.value(s, mode=EVAL) for s in loss.steps(mode=EVAL)]
    for got, want in zip(saved, validation, strict=True):
        np.testing.assert_array_equal(got, want)
    # two training batches, then two validation batches, each epoch
    assert [trial.mode(s) for s in trial.steps()][:6] == [TRAIN, TRAIN, EVAL, EVAL, TRAIN, TRAIN]
    # a training step's weights moved at its update; validation between updates saw the same weights
    w = trial.tensor("dense0_weight")
    np.testing.assert_array_equal(w.value(0, mode=EVAL), w.value(1, mode=EVAL))
    assert not np.array_equal(w.value(0, mode=TRAIN), w.value(1, mode=TRAIN))


def test_a_script_that_calls_set_mode_decides_the_modes(out_dir):
    hook = smd.Hook(out_dir, save_config=smd.SaveConfig(save_interval=1))
    fit(hook, epochs=2, set_mode=True)  # set_mode(TRAIN) once: its validation stays TRAIN, as it said
    trial = smd.create_trial(out_dir)
    assert trial.modes() == {TRAIN} and len(trial.steps(mode=TRAIN)) == 8


def test_a_schedule_written_per_mode_keeps_the_global_mode(out_dir):
    config = smd.SaveConfig(mode_save_configs={GLOBAL: smd.SaveConfigMode(save_interval=1)})
    hook = smd.Hook(out_dir, save_config=config)
    fit(hook, epochs=2)
    trial = smd.create_trial(out_dir)
    assert trial.steps() == list(range(8)) and {trial.mode(s) for s in trial.steps()} == {GLOBAL}


def test_overfit_judges_a_loop_that_never_calls_set_mode(out_dir):
    from smdebug.rules import run_rules

    hook = smd.Hook(out_dir, save_config=smd.SaveConfig(save_interval=1))
    validation = [float(v.mean()) for v in fit(hook, epochs=60, train_rows=16, batch=16)]  # memorises 16 rows
    assert min(validation) < validation[-1] * 0.8  # (the run really overfits)
    (rule,) = run_rules(out_dir, ["overfit"], follow=False).rules
    assert rule.status == "IssuesFound", (rule.status, rule.detail, rule.error)


def test_smdebug_run_tells_validation_from_training_in_an_unmodified_script(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "smdebug.cli.main", "run", "--out-dir", str(out), "--collections", "losses",
         "--save-interval", "1", "--", sys.executable, str(SCRIPT)],
        capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    trial = smd.create_trial(str(out))
    assert trial.modes() == {TRAIN, EVAL}
    assert len(trial.steps(mode=TRAIN)) == 6 and len(trial.steps(mode=EVAL)) == 3
