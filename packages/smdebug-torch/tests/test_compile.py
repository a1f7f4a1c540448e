"""torch.compile: the hook adds no graphs, graph breaks or recompilations, and saves what eager saves.

Graphs, breaks and recompilations are counted with ``torch._dynamo.utils.counters`` for the same
training with and without the hook. Most tests compile with the ``aot_eager`` backend (dynamo and
AOTAutograd, as with the default backend, without inductor's code generation, which takes minutes on a
busy 2-core machine); one test runs inductor itself.
"""

import logging
import warnings

import numpy as np
import pytest
import torch
import torch.nn as nn

import smdebug.pytorch as smd

import torch._dynamo  # noqa: E402 (imported on purpose: these tests compile)
from torch._dynamo.utils import counters  # noqa: E402

STEPS = 6
WGL = ["weights", "biases", "gradients", "losses"]


class MLP(nn.Module):
    """The issue's 3-layer MLP, with a module (relu) called twice per forward."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(20, 32)
        self.fc2 = nn.Linear(32, 32)
        self.fc3 = nn.Linear(32, 4)
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.fc3(self.relu(self.fc2(self.relu(self.fc1(x)))))


def data():
    g = torch.Generator().manual_seed(1)
    return torch.randn(8, 20, generator=g), torch.randint(0, 4, (8,), generator=g)


def compile_model(model, how, backend):
    """The three ways a model is compiled: a wrapper (torch.compile), in place, or its forward only."""
    if how == "module.compile":
        model.compile(backend=backend)
        return model
    return torch.compile(model, backend=backend)


def train(out_dir, how="torch.compile", backend="aot_eager", collections=WGL, save_interval=2, steps=STEPS,
          register="before", hooked=True):
    """Train a fresh MLP (same initial weights every time); returns (trial or None, dynamo counts, losses)."""
    torch._dynamo.reset()
    counters.clear()
    torch.manual_seed(0)
    model, loss_fn = MLP(), nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    hook = None
    if hooked:
        hook = smd.Hook(out_dir=out_dir, save_config=smd.SaveConfig(save_interval=save_interval),
                        include_collections=collections)
    if hooked and register == "before":
        hook.register_module(model)
        hook.register_loss(loss_fn)
    run = model if how == "eager" else compile_model(model, how, backend)
    if hooked and register == "after":
        hook.register_module(run)  # the compiled wrapper itself
        hook.register_loss(loss_fn)
    x, y = data()
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_fn(run(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    counts = {"graphs": counters["stats"]["unique_graphs"], "breaks": sum(counters["graph_break"].values()),
              "recompiles": sum(counters["recompiles"].values())}
    if hook is None:
        return None, counts, losses
    hook.close()
    assert not hook.disabled
    return smd.create_trial(out_dir), counts, losses


@pytest.fixture(scope="module")
def baseline():
    """Graphs, breaks and recompilations of the compiled MLP without a hook."""
    _, counts, losses = train(None, hooked=False)
    assert counts == {"graphs": 1, "breaks": 0, "recompiles": 0}
    return counts, losses


@pytest.fixture(scope="module")
def eager_trial(tmp_path_factory):
    """What the hook saves from the eager model (the reference for every compiled run)."""
    out = str(tmp_path_factory.mktemp("eager") / "run")
    trial, _, _ = train(out, how="eager", collections=WGL + ["layers"])
    return trial


def assert_same_values(trial, reference, names):
    """Every step of ``names`` the trial has, equal to the reference's (which has them all)."""
    assert names, "nothing to compare"
    for name in names:
        ref = reference.tensor(name)
        steps = trial.tensor(name).steps()
        assert steps and set(steps) <= set(ref.steps()), name
        for step in steps:
            np.testing.assert_allclose(trial.tensor(name).value(step), ref.value(step), rtol=1e-5, atol=1e-6,
                                       err_msg=f"{name} at step {step}")


@pytest.mark.parametrize("how, register", [("torch.compile", "before"), ("torch.compile", "after"),
                                           ("module.compile", "before")])
def test_weights_gradients_losses_cost_no_graph_break_or_recompile(tmp_path, baseline, eager_trial, how, register):
    trial, counts, losses = train(str(tmp_path / "run"), how=how, register=register)
    assert counts == baseline[0]
    assert losses == pytest.approx(baseline[1], rel=1e-6)
    assert trial.steps() == [0, 2, 4]
    names = trial.tensor_names()
    assert {"MLP_fc1.weight", "MLP_fc3.bias", "gradient/MLP_fc2.weight", "CrossEntropyLoss_output_0"} <= set(names)
    assert_same_values(trial, eager_trial, names)


def test_layer_inputs_outputs_of_a_compiled_model_equal_eager(tmp_path, baseline, eager_trial):
    trial, counts, _ = train(str(tmp_path / "run"), collections=WGL + ["layers"])
    # the traced hooks add outputs to the one graph: no break, no recompilation on the quiet steps
    assert counts == baseline[0]
    names = trial.tensor_names(collection="layers")
    assert {"fc1_output_0", "relu_output_0", "relu_output_1", "MLP_output_0", "fc1_input_0",
            "MLP_input_0"} <= set(names)
    assert_same_values(trial, eager_trial, names)


def test_activation_collections_of_a_compiled_model(tmp_path, baseline, eager_trial):
    """Collections chosen by layer type (``relu_activations``) and the model's own ``inputs``/``outputs``:
    only the modules they name are hooked, and the values equal eager's."""
    trial, counts, _ = train(str(tmp_path / "run"), collections=["relu_activations", "inputs", "outputs"])
    assert counts == baseline[0]
    assert set(trial.tensor_names(collection="relu_activations")) == {
        "relu_input_0", "relu_input_1", "relu_output_0", "relu_output_1"}
    assert trial.tensor_names(collection="inputs") == ["MLP_input_0"]
    assert trial.tensor_names(collection="outputs") == ["MLP_output_0"]
    assert not any(n.startswith("fc") for n in trial.tensor_names())
    assert_same_values(trial, eager_trial, trial.tensor_names())


def test_nothing_from_dynamo_in_the_logs(tmp_path, caplog):
    caplog.set_level(logging.WARNING)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train(str(tmp_path / "run"), collections=WGL + ["layers"], save_interval=3, steps=9)
    torch_records = [r for r in caplog.records if r.name.startswith("torch")]
    assert torch_records == []
    assert [w for w in caught if "torch" in str(w.filename)] == []


def test_a_compiled_function_that_calls_the_model_costs_one_break(tmp_path, baseline, eager_trial):
    """Documented: when the compiled code calls the registered model (instead of the model being
    compiled), the hook's step marker at the model's entry is one graph break; what is saved is right."""
    torch._dynamo.reset()
    counters.clear()
    torch.manual_seed(0)
    model, loss_fn = MLP(), nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    hook = smd.Hook(out_dir=str(tmp_path / "run"), save_config=smd.SaveConfig(save_interval=2),
                    include_collections=WGL)
    hook.register_module(model)
    hook.register_loss(loss_fn)
    step = torch.compile(lambda x, y: loss_fn(model(x), y), backend="aot_eager")
    x, y = data()
    for _ in range(STEPS):
        opt.zero_grad()
        step(x, y).backward()
        opt.step()
    hook.close()
    assert sum(counters["graph_break"].values()) == 1 and sum(counters["recompiles"].values()) == 0
    trial = smd.create_trial(str(tmp_path / "run"))
    assert_same_values(trial, eager_trial, [n for n in trial.tensor_names() if "Loss" not in n])


def test_inductor(tmp_path, eager_trial):
    """The default backend: generated code, same counts as without the hook, values equal to eager."""
    _, plain, _ = train(None, backend="inductor", hooked=False, steps=3)
    trial, counts, _ = train(str(tmp_path / "run"), backend="inductor", collections=WGL + ["layers"], steps=3)
    assert counts == plain
    assert trial.steps() == [0, 2]
    assert_same_values(trial, eager_trial, trial.tensor_names())
