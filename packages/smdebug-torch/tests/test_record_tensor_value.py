"""``hook.record_tensor_value`` is public API (users pass their own tensors and names): it behaves as
``save_tensor`` and ``save_scalar`` do (RELIABILITY.md). A bad argument is refused at every call with one
clear message, whether or not anything is due, and the hook keeps saving; an internal failure is logged
once and disables the hook; the training loop never sees an exception and trains as without the hook."""

import pytest
import torch
import torch.nn as nn

import smdebug.pytorch as smd
from models import MLP, mlp_data
from smdebug.core.testing import capture_smdebug_log

STEPS = 4


class LoudName(str):
    """A str whose own methods fail: the hook must use its text, never call them."""

    def __format__(self, spec):
        raise RuntimeError("format boom")

    def __hash__(self):
        raise RuntimeError("hash boom")


def _loop(out_dir, bad_call, before_first_step=None):
    """A real MLP trained with a functional loss recorded every step, ``bad_call(hook, loss)`` every step."""
    torch.manual_seed(0)
    model = MLP()
    hook = smd.Hook(out_dir=out_dir, save_config=smd.SaveConfig(save_interval=1), include_collections=["losses"])
    hook.register_module(model)
    if before_first_step is not None:
        before_first_step(hook)
    x, y = mlp_data()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        bad_call(hook, loss)
        hook.record_tensor_value("nll_loss", loss)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    hook.close()
    return hook, losses


def _plain_losses():
    torch.manual_seed(0)
    model = MLP()
    x, y = mlp_data()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    out = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        out.append(loss.item())
    return out


BAD_NAMES = {
    # (before: the list raised TypeError into the loop; None, 5 and "" were saved as "None_output_0",
    # "5_output_0" and "_output_0"; the loud str raised its own RuntimeError into the loop)
    "none": (None, "record_tensor_value needs a non-empty tensor name, got None"),
    "int": (5, "record_tensor_value needs a non-empty tensor name, got 5"),
    "empty": ("", "record_tensor_value needs a non-empty tensor name, got ''"),
    "list": (["loss"], "record_tensor_value needs a non-empty tensor name, got ['loss']"),
}


@pytest.mark.parametrize("case", sorted(BAD_NAMES))
def test_a_bad_name_is_refused_at_every_call_and_the_hook_goes_on(out_dir, case):
    bad, message = BAD_NAMES[case]
    with capture_smdebug_log() as log:
        hook, losses = _loop(out_dir, lambda h, loss: h.record_tensor_value(bad, loss))
    assert losses == pytest.approx(_plain_losses(), rel=1e-6)
    assert not hook.disabled, hook._failure
    said = [line for line in log.text.splitlines() if "record_tensor_value() ignored" in line]
    assert len(said) == 1 and message in said[0], log.text  # once, though called at every step
    trial = smd.create_trial(out_dir)
    assert trial.tensor("nll_loss_output_0").steps() == list(range(STEPS))
    assert sorted(n for n in trial.tensor_names() if n.endswith("_output_0")) == ["nll_loss_output_0"]


def test_a_str_subclass_is_taken_as_its_text(out_dir):
    """Its own methods never run inside the hook (before: its __format__ raised into the training loop)."""
    hook, losses = _loop(out_dir, lambda h, loss: h.record_tensor_value(LoudName("my_loss"), loss * 2))
    assert losses == pytest.approx(_plain_losses(), rel=1e-6)
    assert not hook.disabled, hook._failure
    trial = smd.create_trial(out_dir)
    assert trial.tensor("my_loss_output_0").steps() == list(range(STEPS))
    assert trial.tensor("my_loss_output_0").value(1) == pytest.approx(2 * trial.tensor("nll_loss_output_0").value(1))


def test_names_a_run_cannot_hold_are_refused_once(out_dir):
    def calls(h, loss):
        h.record_tensor_value("bad\udcff", loss)
        h.record_tensor_value("smdebug/reductions/max/x", loss)

    with capture_smdebug_log() as log:
        hook, _ = _loop(out_dir, calls)
    assert not hook.disabled
    assert log.text.count("not saving the tensor named") == 2, log.text
    assert smd.create_trial(out_dir).tensor("nll_loss_output_0").steps() == list(range(STEPS))


def test_a_bad_call_before_the_first_step_is_refused_too(out_dir):
    """Nothing is due before the first step: the call used to return without a word whatever it was given."""
    with capture_smdebug_log() as log:
        hook, _ = _loop(out_dir, lambda h, loss: None,
                        before_first_step=lambda h: h.record_tensor_value(None, torch.ones(1)))
    assert not hook.disabled
    assert "record_tensor_value needs a non-empty tensor name, got None" in log.text, log.text
    assert smd.create_trial(out_dir).tensor("nll_loss_output_0").steps() == list(range(STEPS))


def test_an_internal_failure_disables_the_hook_once_and_training_goes_on(out_dir, monkeypatch):
    """Fault injection into the hook's own naming (an internal bug): before, the RuntimeError reached the
    training loop; now it is logged once with its cause, the hook stops saving, the loop trains on."""
    def bad_call(h, loss):
        if h.step == 1 and "_next_name" not in h.__dict__:
            def broken(*a, **k):
                raise RuntimeError("naming bug")
            monkeypatch.setattr(h, "_next_name", broken)

    with capture_smdebug_log() as log:
        hook, losses = _loop(out_dir, bad_call)
    assert losses == pytest.approx(_plain_losses(), rel=1e-6)
    assert hook.disabled and "naming bug" in hook._failure
    assert log.text.count("smdebug hook disabled after an internal error in record_tensor_value()") == 1, log.text
    assert smd.create_trial(out_dir).tensor("nll_loss_output_0").steps() == [0]
