"""A loop whose optimizer steps with no gradient -- ``zero_grad()`` between ``backward()`` and ``step()`` (its
default, set_to_none, leaves every ``.grad`` None) -- saves no gradient. The hook says so once in the training
log and records it in the run, and the rules that needed gradients say why there are none (probe 12a W1: they
said only "collection 'gradients' -> none"). A healthy loop, and one whose optimizer also holds frozen
parameters, are not said to have lost their gradients."""

import torch
import torch.nn as nn

import smdebug.pytorch as smd
from smdebug.core.run_info import no_gradients
from smdebug.core.testing import capture_smdebug_log
from smdebug.rules import run_rules


def _train(out_dir, zero_grad_before_step: bool, freeze_first: bool = False):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    if freeze_first:
        for p in model[0].parameters():
            p.requires_grad_(False)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = nn.CrossEntropyLoss()
    hook = smd.Hook.recommended(str(out_dir))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    x, y = torch.randn(64, 8), torch.randint(0, 3, (64,))
    for i in range(12):
        loss = loss_fn(model(x[i % 4 * 16:(i % 4 + 1) * 16]), y[i % 4 * 16:(i % 4 + 1) * 16])
        if zero_grad_before_step:
            loss.backward()
            opt.zero_grad()  # the fault: the gradients are gone before the step
        else:
            opt.zero_grad()
            loss.backward()
        opt.step()
    hook.close()
    return smd.create_trial(str(out_dir))


def test_an_optimizer_stepping_without_gradients_is_said_and_recorded(tmp_path):
    with capture_smdebug_log() as log:
        trial = _train(tmp_path / "run", zero_grad_before_step=True)
    assert log.text.count("none of the 4 parameters the optimizer updates had a gradient") == 1, log.text
    assert "zero_grad() called between backward() and step()" in log.text
    assert no_gradients(trial) == (0, 4)
    assert not [n for n in trial.tensor_names() if n.startswith("gradient/")]

    (vanishing,) = run_rules(str(tmp_path / "run"), ["VanishingGradient"]).rules
    assert vanishing.status == "NotEvaluated", (vanishing.status, vanishing.detail)
    assert "none of the 4 parameters the optimizer updates had one as it stepped" in vanishing.detail, vanishing.detail


def test_healthy_and_partly_frozen_loops_are_not_said_to_lose_their_gradients(tmp_path):
    for name, frozen in (("healthy", False), ("frozen", True)):
        with capture_smdebug_log() as log:
            trial = _train(tmp_path / name, zero_grad_before_step=False, freeze_first=frozen)
        assert "had a gradient when it stepped" not in log.text, (name, log.text)
        assert no_gradients(trial) is None, name
        assert trial.tensor_names(regex="^gradient/"), name
