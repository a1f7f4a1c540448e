"""Validation on a copy of the registered model: an EMA or SWA average (``torch.optim.swa_utils.AveragedModel``,
timm's ModelEmaV2: a deep copy of the model), evaluated with the registered loss after ``hook.set_mode(EVAL)``.
Steps begin at the registered model's forward calls, and the copy is another module: its validation losses must
still be saved in EVAL steps (the registered loss begins them), and a copy made after registration must neither
break the script (copying the model copies the hook's torch hooks) nor count as the model. Real tiny models,
real training."""

import copy

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

import smdebug.pytorch as smd
from smdebug.core.modes import ModeKeys

TRAIN, EVAL = ModeKeys.TRAIN, ModeKeys.EVAL
EPOCHS, TRAIN_BATCHES, VAL_BATCHES = 3, 4, 2


def data(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 6, generator=g)
    return x, (x[:, 0] + x[:, 1] > 0).long()


def net():
    return nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 2))


def fit(out_dir, copy_when, record_value=False, set_mode_every_batch=False, second_loss=False,
        save_interval=1, functional=False):
    """A plain loop with an EMA copy (AveragedModel) updated after each optimizer step and validated, with the
    registered loss (or ``record_tensor_value`` of a functional loss), after ``set_mode(EVAL)``. ``copy_when``:
    the copy is made "before" or "after" the model is registered. Returns (hook, validation losses as computed)."""
    torch.manual_seed(0)
    model, ce, mse = net(), nn.CrossEntropyLoss(), nn.MSELoss()
    hook = smd.Hook(out_dir=out_dir, save_config=smd.SaveConfig(save_interval=save_interval),
                    include_collections=["losses", "weights"])
    if copy_when == "before":
        ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
    hook.register_module(model)
    hook.register_loss(ce)
    if second_loss:
        hook.register_loss(mse)
    if copy_when == "after":
        ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = data(16 * TRAIN_BATCHES, 0)
    vx, vy = data(16 * VAL_BATCHES, 1)
    validation = []
    hook.set_mode(smd.modes.TRAIN)
    for _ in range(EPOCHS):
        model.train()
        for b in range(TRAIN_BATCHES):
            if set_mode_every_batch:
                hook.set_mode(smd.modes.TRAIN)
            opt.zero_grad()
            ce(model(x[16 * b:16 * (b + 1)]), y[16 * b:16 * (b + 1)]).backward()
            opt.step()
            ema.update_parameters(model)
        hook.set_mode(smd.modes.EVAL)
        with torch.no_grad():
            for b in range(VAL_BATCHES):
                if set_mode_every_batch:
                    hook.set_mode(smd.modes.EVAL)
                out = ema(vx[16 * b:16 * (b + 1)])
                if record_value or functional:
                    loss = F.cross_entropy(out, vy[16 * b:16 * (b + 1)])
                    if record_value:
                        hook.record_tensor_value("val_loss", loss)
                else:
                    loss = ce(out, vy[16 * b:16 * (b + 1)])
                if second_loss:
                    mse(out.softmax(1)[:, 1], vy[16 * b:16 * (b + 1)].float())
                validation.append(float(loss))
        hook.set_mode(smd.modes.TRAIN)
    hook.close()
    assert not hook.disabled
    return hook, validation


@pytest.mark.parametrize("copy_when", ["before", "after"])
@pytest.mark.parametrize("set_mode_every_batch", [False, True])
def test_the_copys_validation_losses_are_saved_in_eval_steps(tmp_path, copy_when, set_mode_every_batch):
    out = str(tmp_path / "run")
    _, validation = fit(out, copy_when, set_mode_every_batch=set_mode_every_batch)
    trial = smd.create_trial(out)
    # the training steps are the registered model's forward calls, as without a copy
    assert trial.steps(mode=TRAIN) == list(range(EPOCHS * TRAIN_BATCHES))
    # each validation batch is an EVAL step, begun by the registered loss's call
    loss = trial.tensor("CrossEntropyLoss_output_0")
    assert trial.steps(mode=EVAL) == loss.steps(mode=EVAL) == list(range(EPOCHS * VAL_BATCHES))
    np.testing.assert_allclose([loss.value(s, mode=EVAL) for s in range(EPOCHS * VAL_BATCHES)], validation, rtol=1e-6)
    # the copy's layers are not the model's: nothing of the copy is saved under the model's names or others
    assert set(trial.tensor_names(collection="weights")) == {"Sequential_0.weight", "Sequential_2.weight"}
    assert not [n for n in trial.tensor_names() if n.startswith(("Linear", "AveragedModel"))]


def test_recorded_values_begin_the_eval_steps_too(tmp_path):
    out = str(tmp_path / "run")
    _, validation = fit(out, "before", record_value=True)
    trial = smd.create_trial(out)
    assert trial.steps(mode=TRAIN) == list(range(EPOCHS * TRAIN_BATCHES))
    recorded = trial.tensor("val_loss_output_0")
    assert recorded.steps(mode=EVAL) == list(range(EPOCHS * VAL_BATCHES))
    np.testing.assert_allclose([recorded.value(s, mode=EVAL) for s in range(EPOCHS * VAL_BATCHES)], validation,
                               rtol=1e-6)


def test_two_registered_losses_of_one_validation_batch_share_its_step(tmp_path):
    out = str(tmp_path / "run")
    fit(out, "before", second_loss=True)
    trial = smd.create_trial(out)
    assert trial.steps(mode=EVAL) == list(range(EPOCHS * VAL_BATCHES))
    for name in ("CrossEntropyLoss_output_0", "MSELoss_output_0"):
        assert trial.tensor(name).steps(mode=EVAL) == list(range(EPOCHS * VAL_BATCHES))
    assert "CrossEntropyLoss_output_1" not in trial.tensor_names()


def test_a_copy_called_in_training_is_no_step_of_the_model(tmp_path):
    """A mean teacher: a deep copy of the registered model (made after registration) called at every training
    batch. Copying the model must not fail, and the teacher's calls must not be counted as steps."""
    out = str(tmp_path / "run")
    torch.manual_seed(0)
    student, ce = net(), nn.CrossEntropyLoss()
    hook = smd.Hook(out_dir=out, save_config=smd.SaveConfig(save_interval=1), include_collections=["losses"])
    hook.register_module(student)
    hook.register_loss(ce)
    teacher = copy.deepcopy(student)
    opt = torch.optim.SGD(student.parameters(), lr=0.1)
    x, y = data(16 * TRAIN_BATCHES, 0)
    hook.set_mode(smd.modes.TRAIN)
    for b in range(TRAIN_BATCHES):
        xb = x[16 * b:16 * (b + 1)]
        with torch.no_grad():
            target = teacher(xb).softmax(1)
        out_b = student(xb)
        loss = ce(out_b, y[16 * b:16 * (b + 1)]) + F.kl_div(out_b.log_softmax(1), target, reduction="batchmean")
        opt.zero_grad()
        loss.backward()
        opt.step()
    hook.close()
    assert not hook.disabled
    trial = smd.create_trial(out)
    assert trial.steps(mode=TRAIN) == list(range(TRAIN_BATCHES))
    assert trial.tensor("CrossEntropyLoss_output_0").steps(mode=TRAIN) == list(range(TRAIN_BATCHES))


def test_a_plain_loop_that_sets_its_modes_keeps_its_steps_and_quiet_path(tmp_path):
    """Validation on the registered model itself: its forward calls begin every step as before, and once the
    model has run the loss no longer begins any, so with nothing due the quiet path is taken again."""
    out = str(tmp_path / "run")
    torch.manual_seed(0)
    model, ce = net(), nn.CrossEntropyLoss()
    hook = smd.Hook(out_dir=out, save_config=smd.SaveConfig(save_steps=[0]), include_collections=["losses"])
    hook.register_module(model)
    hook.register_loss(ce)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = data(16 * TRAIN_BATCHES, 0)
    for _ in range(EPOCHS):
        for b in range(TRAIN_BATCHES):
            hook.set_mode(smd.modes.TRAIN)
            opt.zero_grad()
            ce(model(x[16 * b:16 * (b + 1)]), y[16 * b:16 * (b + 1)]).backward()
            opt.step()
            assert hook._step_openers is None  # (the model ran: the losses begin no step)
        hook.set_mode(smd.modes.EVAL)
        with torch.no_grad():
            for b in range(VAL_BATCHES):
                ce(model(x[16 * b:16 * (b + 1)]), y[16 * b:16 * (b + 1)])
        assert hook._step_openers is None
    assert hook._wired_quiet  # (nothing due: the model's forward pre-hook takes the quiet path again)
    assert hook.mode_steps[TRAIN] == EPOCHS * TRAIN_BATCHES - 1 and hook.mode_steps[EVAL] == EPOCHS * VAL_BATCHES - 1
    hook.close()


def test_a_replica_that_shares_the_models_hooks_keeps_them(tmp_path):
    """DataParallel's replicas (``_replicate_for_data_parallel``) share the model's hook dictionaries: a replica's
    call is no copy's, and taking the hooks off it would take them off the model."""
    out = str(tmp_path / "run")
    torch.manual_seed(0)
    model, ce = net(), nn.CrossEntropyLoss()
    hook = smd.Hook(out_dir=out, save_config=smd.SaveConfig(save_interval=1), include_collections=["losses"])
    hook.register_module(model)
    hook.register_loss(ce)
    x, y = data(16, 0)
    hook.set_mode(smd.modes.TRAIN)
    replica = model._replicate_for_data_parallel()
    replica(x)
    for _ in range(2):
        ce(model(x), y)
    assert len(model._forward_pre_hooks) == 1  # (the hook's, still there)
    hook.close()
    assert smd.create_trial(out).tensor("CrossEntropyLoss_output_0").steps(mode=TRAIN) == [1, 2]


def test_after_validating_a_copy_training_takes_the_quiet_path_again(tmp_path):
    """With nothing due, the model's forward pre-hook counts the step and returns (README "Costing nothing when
    nothing is due"): a validation that the registered loss began must not leave the hook off that path."""
    torch.manual_seed(0)
    model, ce = net(), nn.CrossEntropyLoss()
    ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
    hook = smd.Hook(out_dir=str(tmp_path / "run"), save_config=smd.SaveConfig(save_steps=[0]),
                    include_collections=["losses"])
    hook.register_module(model)
    hook.register_loss(ce)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = data(16, 0)
    for _ in range(4):
        hook.set_mode(smd.modes.TRAIN)
        for _ in range(3):
            opt.zero_grad()
            ce(model(x), y).backward()
            opt.step()
            ema.update_parameters(model)
        assert hook._wired_quiet
        hook.set_mode(smd.modes.EVAL)
        with torch.no_grad():
            ce(ema(x), y)
    assert hook.mode_steps[EVAL] == 3  # (the copy's four validations were EVAL steps)
    hook.close()


def test_a_validation_that_began_no_step_is_said_unsaved_not_absent(tmp_path):
    """The copy validated with a functional loss and nothing recorded: no EVAL step can begin (nothing the hook
    sees runs). The run records that the script did switch to EVAL, so the rules say the validation was not
    saved and how to save it -- not "call hook.set_mode(modes.EVAL)", which the script did."""
    from smdebug.core.run_info import modes_set
    from smdebug.rules import run_rules

    out = str(tmp_path / "run")
    fit(out, "before", functional=True)
    trial = smd.create_trial(out)
    assert trial.steps(mode=EVAL) == [] and modes_set(trial) == ["EVAL", "TRAIN"]
    (overfit,) = run_rules(out, ["Overfit"]).rules
    assert overfit.status == "NotEvaluated", (overfit.status, overfit.detail)
    assert "though the script switched to EVAL mode" in overfit.detail and "record_tensor_value" in overfit.detail
    assert "call hook.set_mode" not in overfit.detail, overfit.detail
