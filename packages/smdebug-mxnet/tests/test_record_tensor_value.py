"""``hook.record_tensor_value`` is public API: it behaves as ``save_tensor`` and ``save_scalar`` do
(RELIABILITY.md). A bad name is refused at every call with one clear message, whether or not anything is
due, and the hook keeps saving; an internal failure is logged once and disables the hook; the training
loop never sees an exception and trains as without the hook."""

import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, gluon, nd

import smdebug.mxnet as smd
from models import mlp, mlp_data
from smdebug.core.testing import capture_smdebug_log

STEPS = 4


class LoudName(str):
    """A str whose own methods fail: the hook must use its text, never call them."""

    def __format__(self, spec):
        raise RuntimeError("format boom")

    def __hash__(self):
        raise RuntimeError("hash boom")


def _loop(out_dir, call, hook_on=True):
    """A real MLP trained with a loss computed without a loss block, recorded every step, and
    ``call(hook, loss)`` every step. Returns the hook and the losses."""
    mx.random.seed(0)
    net = mlp()
    hook = None
    if hook_on:
        hook = smd.Hook(out_dir=out_dir, save_config=smd.SaveConfig(save_interval=1), include_collections=["losses"])
        hook.register_block(net)
    x, y = mlp_data()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    losses = []
    for _ in range(STEPS):
        with autograd.record():
            out = net(x)
            loss = nd.mean(nd.square(out - y.reshape((-1, 1))))
        if hook is not None:
            call(hook, loss)
            hook.record_tensor_value("mse_loss", loss)
        loss.backward()
        trainer.step(1)
        losses.append(float(loss.asscalar()))
    if hook is not None:
        hook.close()
    return hook, losses


BAD_NAMES = {
    # (before: the list raised TypeError into the loop; None, 5 and "" were saved as "None_output_0"...)
    "none": (None, "got None"),
    "int": (5, "got 5"),
    "empty": ("", "got ''"),
    "list": (["loss"], "got ['loss']"),
}


@pytest.mark.parametrize("case", sorted(BAD_NAMES))
def test_a_bad_name_is_refused_at_every_call_and_the_hook_goes_on(out_dir, case):
    bad, shown = BAD_NAMES[case]
    reference = _loop(None, None, hook_on=False)[1]
    with capture_smdebug_log() as log:
        hook, losses = _loop(out_dir, lambda h, loss: h.record_tensor_value(bad, loss))
    np.testing.assert_allclose(losses, reference, rtol=1e-6)
    assert not hook.disabled, hook._failure
    said = [line for line in log.text.splitlines() if "record_tensor_value() ignored" in line]
    assert len(said) == 1 and "needs a non-empty tensor name, " + shown in said[0], log.text
    trial = smd.create_trial(out_dir)
    assert trial.tensor("mse_loss_output_0").steps() == list(range(STEPS))
    assert [n for n in trial.tensor_names() if n.endswith("_output_0") and "loss" in n] == ["mse_loss_output_0"]


def test_a_str_subclass_is_taken_as_its_text(out_dir):
    """Before: its __format__ raised into the training loop."""
    hook, _ = _loop(out_dir, lambda h, loss: h.record_tensor_value(LoudName("my_loss"), loss * 2))
    assert not hook.disabled, hook._failure
    trial = smd.create_trial(out_dir)
    assert trial.tensor("my_loss_output_0").steps() == list(range(STEPS))
    np.testing.assert_allclose(trial.tensor("my_loss_output_0").value(1),
                               2 * trial.tensor("mse_loss_output_0").value(1), rtol=1e-6)


def test_an_internal_failure_disables_the_hook_once_and_training_goes_on(out_dir, monkeypatch):
    """Fault injection into the hook's own naming (an internal bug): before, the RuntimeError reached the
    training loop; now it is logged once, the hook stops saving, the loop trains on."""
    reference = _loop(None, None, hook_on=False)[1]

    def call(h, loss):
        if h.step == 1 and "_next_name" not in h.__dict__:
            def broken(*a, **k):
                raise RuntimeError("naming bug")
            monkeypatch.setattr(h, "_next_name", broken)

    with capture_smdebug_log() as log:
        hook, losses = _loop(out_dir, call)
    np.testing.assert_allclose(losses, reference, rtol=1e-6)
    assert hook.disabled and "naming bug" in hook._failure
    assert log.text.count("smdebug hook disabled after an internal error in record_tensor_value()") == 1, log.text
