"""VanishingGradient on a run that converged: L-BFGS fits separable data until its cross-entropy is ~1e-7, and every
layer's gradient shrinks with the loss far below the absolute test's 1e-7 mean |gradient|. That is convergence, not
a vanishing gradient (the rule used to fire on it); the same network with a ridge penalty keeps a loss floor and
gradients above the threshold. A vanishing network (deep sigmoid stack) still fires: its loss never falls and its
gradients were never larger."""

import pytest

torch = pytest.importorskip("torch")
smd = pytest.importorskip("smdebug.pytorch")

import torch.nn as nn  # noqa: E402

from smdebug.rules.runner import run_rules  # noqa: E402


def separable_data(n=200, features=8):
    """Two Gaussian blobs six standard deviations apart: a linear boundary separates them, so cross-entropy can
    fall towards 0."""
    g = torch.Generator().manual_seed(0)
    y = torch.arange(n) % 2
    x = torch.randn(n, features, generator=g) + 3.0 * (2 * y[:, None] - 1).float()
    return x, y


def train_lbfgs(out_dir, steps=30):
    """Full-batch L-BFGS (several forward/backward calls per optimizer step, each a hook step), every step saved."""
    torch.manual_seed(0)
    x, y = separable_data()
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 2))
    loss_fn = nn.CrossEntropyLoss()
    hook = smd.Hook(str(out_dir), save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["weights", "gradients", "losses"])
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.LBFGS(model.parameters(), lr=1.0, max_iter=5, history_size=10, line_search_fn="strong_wolfe")
    losses = []

    def closure():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        return loss

    for _ in range(steps):
        losses.append(float(opt.step(closure).detach()))
    hook.close()
    return str(out_dir), losses


def train_deep_sigmoid(out_dir, steps=12):
    """Ten sigmoid layers trained with SGD: the gradient shrinks by at least 4x per layer on its way back."""
    torch.manual_seed(0)
    x, y = separable_data()
    layers = [nn.Linear(8, 32), nn.Sigmoid()]
    for _ in range(9):
        layers += [nn.Linear(32, 32), nn.Sigmoid()]
    model = nn.Sequential(*layers, nn.Linear(32, 2))
    loss_fn = nn.CrossEntropyLoss()
    hook = smd.Hook(str(out_dir), save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["weights", "gradients", "losses"])
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(steps):
        batch = slice((step * 32) % 200, (step * 32) % 200 + 32)
        opt.zero_grad()
        loss_fn(model(x[batch]), y[batch]).backward()
        opt.step()
    hook.close()
    return str(out_dir)


def verdict(path, **params):
    result = run_rules(path, [("VanishingGradient", params)]).rules[0]
    assert result.error is None, result.error
    return result


def test_a_run_that_converged_to_zero_loss_is_no_vanishing_gradient(tmp_path):
    torch.set_num_threads(1)
    path, losses = train_lbfgs(tmp_path / "lbfgs")
    assert losses[-1] < 1e-5 * losses[0]  # it fitted the training data
    # its gradients are below the absolute threshold: without the convergence exemption the rule fires
    off = verdict(path, converged_loss_fraction="0")
    assert off.status == "IssuesFound"
    assert "mean |gradient|" in off.findings[0].reason and "< threshold 1e-07" in off.findings[0].reason
    off = verdict(path, converged_gradient_fraction="0")
    assert off.status == "IssuesFound"
    # but every layer's gradient shrank together with the loss: convergence
    assert verdict(path).status == "NoIssuesFound"


def test_a_vanishing_network_still_fires(tmp_path):
    torch.set_num_threads(1)
    result = verdict(train_deep_sigmoid(tmp_path / "sigmoid"))
    assert result.status == "IssuesFound"
    assert result.findings[0].reason.startswith("gradient/")
