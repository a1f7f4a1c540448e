"""``hook.register_optimizer`` with an optimizer stepped with a closure (L-BFGS; SAM-style loops call
``step(closure)`` too): the step's gradients do not exist when step() is called, the closure makes them inside it.
The hook saved the gradients as step() began, found none, and the run had no gradient at all, silently (probe 16a
F4). They are saved when the closure's first evaluation returns: the gradients the step starts from."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn as nn

import smdebug.pytorch as smd
from smdebug.trials import create_trial


def _train(out, steps=3, keyword=False):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    x, y = torch.randn(64, 4), torch.randint(0, 2, (64,))
    hook = smd.Hook(out_dir=str(out), save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["gradients", "losses"])
    hook.register_module(model)
    loss_fn = nn.CrossEntropyLoss()
    hook.register_loss(loss_fn)
    opt = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=4)
    hook.register_optimizer(opt)
    expected = []
    for _ in range(steps):
        # the gradient at the parameters the step starts from (what its first closure evaluation computes)
        probe = [p.detach().clone().requires_grad_(True) for p in model.parameters()]
        w0, b0, w2, b2 = probe
        out_ = torch.tanh(x @ w0.T + b0) @ w2.T + b2
        expected.append(torch.autograd.grad(nn.functional.cross_entropy(out_, y), probe[0])[0].numpy())

        def closure():
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            return loss

        if keyword:
            opt.step(closure=closure)
        else:
            opt.step(closure)
    hook.close()
    return expected


def test_gradients_of_a_closure_step_are_saved(tmp_path):
    expected = _train(tmp_path / "run")
    trial = create_trial(str(tmp_path / "run"))
    assert trial.steps() == [0, 1, 2]
    name = "gradient/Sequential_0.weight"
    assert name in trial.tensor_names(collection="gradients")
    for step, grad in enumerate(expected):
        np.testing.assert_allclose(trial.tensor(name).value(step), grad, rtol=1e-5, atol=1e-7)


def test_a_closure_given_by_keyword_too(tmp_path):
    _train(tmp_path / "run", steps=2, keyword=True)
    trial = create_trial(str(tmp_path / "run"))
    assert trial.tensor("gradient/Sequential_2.bias").steps() == [0, 1]
