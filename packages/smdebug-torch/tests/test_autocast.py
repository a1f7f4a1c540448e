"""torch.autocast (bfloat16 on CPU) with and without GradScaler: gradients are saved unscaled, as the
optimizer applies them; losses as computed; layer outputs in the precision autocast ran them in."""

import numpy as np
import pytest
import torch
import torch.nn as nn

import smdebug.pytorch as smd
from models import MLP, mlp_data

STEPS = 4


def train(out_dir, scaler=None, register_optimizer=False, steps=STEPS):
    torch.manual_seed(0)
    model, loss_fn = MLP(), nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    hook = smd.Hook(out_dir=out_dir, save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["weights", "gradients", "losses", "layers"])
    hook.register_module(model)
    hook.register_loss(loss_fn)
    if register_optimizer:
        hook.register_optimizer(opt)
    x, y = mlp_data()
    losses, grads = [], []
    for _ in range(steps):
        opt.zero_grad()
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            out = model(x)
            loss = loss_fn(out, y)
        if scaler is None:
            loss.backward()
            grads.append(model.fc1.weight.grad.clone())
            opt.step()
        else:
            scaler.scale(loss).backward()
            grads.append(model.fc1.weight.grad.clone())  # scaled: scaler.step unscales it before the update
            scaler.step(opt)
            scaler.update()
        losses.append(loss.item())
    hook.close()
    assert not hook.disabled
    return smd.create_trial(out_dir), losses, grads


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    return train(str(tmp_path_factory.mktemp("plain") / "run"))


def test_autocast_saves_what_ran(plain):
    trial, losses, grads = plain
    assert trial.steps() == list(range(STEPS))
    saved = [float(trial.tensor("CrossEntropyLoss_output_0").value(s)) for s in range(STEPS)]
    assert saved == pytest.approx(losses, rel=1e-6)  # the loss autocast computed (float32 for cross-entropy)
    # Linear layers ran in bfloat16: their outputs are bfloat16 values (saved widened to float32)
    fc1 = trial.tensor("fc1_output_0").value(0)
    assert fc1.dtype == np.float32
    np.testing.assert_array_equal(fc1, torch.tensor(fc1).to(torch.bfloat16).float().numpy())
    for step in range(STEPS):
        np.testing.assert_array_equal(trial.tensor("gradient/MLP_fc1.weight").value(step), grads[step].numpy())


@pytest.mark.parametrize("register_optimizer", [False, True], ids=["found-optimizer", "registered-optimizer"])
def test_grad_scaler_gradients_are_saved_unscaled(tmp_path, plain, register_optimizer):
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 12)
    trial, losses, scaled = train(str(tmp_path / "run"), scaler=scaler, register_optimizer=register_optimizer)
    plain_trial, plain_losses, plain_grads = plain
    assert losses == pytest.approx(plain_losses, rel=1e-6)
    for step in range(STEPS):
        saved = trial.tensor("gradient/MLP_fc1.weight").value(step)
        # backward produced scaled gradients (2**12 times the plain ones: powers of two scale exactly)...
        np.testing.assert_array_equal(scaled[step].numpy(), plain_grads[step].numpy() * 2.0 ** 12)
        # ...and the hook saved them unscaled, as the optimizer applied them
        np.testing.assert_array_equal(saved, plain_grads[step].numpy())
        assert float(trial.tensor("CrossEntropyLoss_output_0").value(step)) == pytest.approx(plain_losses[step])
