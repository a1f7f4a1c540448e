"""What the hook finds by type: activation modules whatever their names, the model's input, a classification
loss's predictions and labels, and the recommended configuration (Hook.recommended)."""

import logging

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import smdebug.pytorch as smd
from smdebug.core.activations import ACTIVATION_COLLECTIONS, activation_layers
from smdebug.core.testing import TAPERED_SAVED_STEPS, check_recommended_run
from smdebug_test_support.threads import one_torch_thread


@pytest.fixture(autouse=True)
def _one_thread():
    """Tiny models: torch's intra-op threads only contend for the CPU."""
    with one_torch_thread():
        yield


class OddNames(nn.Module):
    """Activation modules under names no regex would guess: nested Sequentials, a ReLU used twice, a
    functional relu (which no module hook sees), a subclass of nn.Tanh."""

    class MyTanh(nn.Tanh):
        pass

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Linear(6, 8), nn.Sequential(nn.Linear(8, 8), nn.LeakyReLU(0.1)))
        self.nonlin = nn.ReLU()
        self.mid = nn.Linear(8, 8)
        self.squash = OddNames.MyTanh()
        self.gate = nn.Sigmoid()
        self.smooth = nn.GELU()
        self.head = nn.Linear(8, 3)
        self.out = nn.LogSoftmax(dim=1)

    def forward(self, x):
        h = self.nonlin(self.stem(x))
        h = self.nonlin(self.mid(h))  # the same module again
        h = F.relu(h)  # functional: not a module, not seen
        h = self.smooth(self.squash(h)) * self.gate(h)
        return self.out(self.head(h))


def _train(model, hook, loss_fn, steps, batch=16, opt=None):
    hook.register_module(model)
    hook.register_loss(loss_fn)
    hook.set_mode(smd.modes.TRAIN)
    opt = opt or torch.optim.SGD(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(0)
    fed = []
    for _ in range(steps):
        x, y = torch.randn(batch, 6, generator=g), torch.randint(0, 3, (batch,), generator=g)
        fed.append((x, y))
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
    hook.close()
    return fed


def test_activation_modules_fill_their_collections_whatever_their_names(out_dir):
    torch.manual_seed(0)
    model = OddNames()
    hook = smd.Hook(out_dir=out_dir, save_config=smd.SaveConfig(save_interval=1),
                    include_collections=list(ACTIVATION_COLLECTIONS))
    _train(model, hook, nn.NLLLoss(), steps=2)
    trial = smd.create_trial(out_dir)

    def names(coll):
        return trial.tensor_names(collection=coll) if trial.collection(coll).include_regex else []

    assert names("relu_activations") == ["nonlin_input_0", "nonlin_input_1", "nonlin_output_0", "nonlin_output_1"]
    assert names("leaky_relu_activations") == ["stem.1.1_input_0", "stem.1.1_output_0"]
    assert names("tanh_activations") == ["squash_input_0", "squash_output_0"]
    assert names("sigmoid_activations") == ["gate_input_0", "gate_output_0"]
    assert names("gelu_activations") == ["smooth_input_0", "smooth_output_0"]
    assert names("softmax_activations") == ["out_input_0", "out_output_0"]
    assert names("elu_activations") == names("silu_activations") == names("softplus_activations") == []
    # the values are the modules' real inputs and outputs
    for step in trial.steps():
        x = trial.tensor("squash_input_0").value(step)
        np.testing.assert_allclose(trial.tensor("squash_output_0").value(step), np.tanh(x), rtol=1e-5, atol=1e-6)
        relu_in, relu_out = trial.tensor("nonlin_input_1").value(step), trial.tensor("nonlin_output_1").value(step)
        np.testing.assert_array_equal(relu_out, np.maximum(relu_in, 0))

    layers = activation_layers(trial)
    assert set(layers) == set(ACTIVATION_COLLECTIONS)
    assert [(l.name, l.type) for l in layers["relu_activations"]] == [("nonlin", "ReLU")]  # once, used twice
    assert [(l.name, l.type) for l in layers["tanh_activations"]] == [("squash", "MyTanh")]
    assert [(l.name, l.type) for l in layers["leaky_relu_activations"]] == [("stem.1.1", "LeakyReLU")]
    assert layers["elu_activations"] == [] and layers["softplus_activations"] == []
    relu = layers["relu_activations"][0]
    assert relu.input_names(trial.tensor_names()) == ["nonlin_input_0", "nonlin_input_1"]
    assert relu.output_names(trial.tensor_names()) == ["nonlin_output_0", "nonlin_output_1"]


def test_the_record_tells_no_such_layer_from_nothing_saved(out_dir):
    """A model without tanh: the record says so. A model with ReLUs whose collection was not saved: the record
    lists them, and no saved tensor is theirs."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
    hook = smd.Hook(out_dir=out_dir, save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["tanh_activations", "losses"])
    _train(model, hook, nn.CrossEntropyLoss(), steps=2)
    assert not hook.disabled
    trial = smd.create_trial(out_dir)
    layers = activation_layers(trial)
    assert layers["tanh_activations"] == []  # the model has no tanh
    (relu,) = layers["relu_activations"]
    assert relu.name == "1" and relu.input_names(trial.tensor_names()) == []  # present, not saved
    assert trial.tensor_names() == ["CrossEntropyLoss_output_0"]


def test_model_input_and_the_classification_losss_predictions_and_labels(out_dir):
    torch.manual_seed(0)
    model = OddNames()
    hook = smd.Hook(out_dir=out_dir, save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["inputs", "outputs", "predictions", "labels"])
    fed = _train(model, hook, nn.NLLLoss(), steps=3)
    trial = smd.create_trial(out_dir)
    assert trial.tensor_names(collection="inputs") == ["OddNames_input_0"]  # the model's, not every module's
    assert trial.tensor_names(collection="outputs") == ["OddNames_output_0"]
    assert trial.tensor_names(collection="predictions") == ["NLLLoss_input_0"]
    assert trial.tensor_names(collection="labels") == ["NLLLoss_input_1"]
    for step, (x, y) in enumerate(fed):
        np.testing.assert_array_equal(trial.tensor("OddNames_input_0").value(step), x.numpy())
        np.testing.assert_array_equal(trial.tensor("NLLLoss_input_1").value(step), y.numpy())
        np.testing.assert_array_equal(trial.tensor("NLLLoss_input_0").value(step),
                                      trial.tensor("OddNames_output_0").value(step))
    # the original's way of asking for the model's inputs
    assert [v.shape for v in trial.inputs(0)] == [(16, 6)]


def test_a_regression_loss_gives_no_predictions_or_labels(out_dir):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 3))
    hook = smd.Hook(out_dir=out_dir, save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["predictions", "labels", "losses"])
    hook.register_module(model)
    loss_fn = nn.MSELoss()
    hook.register_loss(loss_fn)
    for _ in range(2):
        loss_fn(model(torch.randn(4, 6)), torch.randn(4, 3)).backward()
    hook.close()
    assert not hook.disabled
    assert smd.create_trial(out_dir).tensor_names() == ["MSELoss_output_0"]


@pytest.mark.parametrize("steps, saved", sorted(TAPERED_SAVED_STEPS.items()))
def test_recommended_hook_saves_what_the_recommended_rules_need(out_dir, steps, saved):
    from smdebug.core.testing import capture_smdebug_log
    from smdebug.rules import rule_configs

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 3))
    with capture_smdebug_log() as log:  # (the smdebug logger does not propagate to the one caplog hears)
        hook = smd.Hook.recommended(out_dir)
        _train(model, hook, nn.CrossEntropyLoss(), steps=steps, batch=4)
    assert not hook.disabled
    # the user did nothing wrong: no warning (the model has no BatchNorm, whose statistics the preset asks for)
    assert [r.getMessage() for r in log.records if r.levelno >= logging.WARNING] == []
    trial = check_recommended_run(out_dir, "pytorch", saved, ())
    assert set(rule_configs.recommended_collections("pytorch")) <= set(trial.collections())
    for coll, expected in {"gradients": 6, "weights": 3, "losses": 1, "inputs": 1, "relu_activations": 2,
                           "tanh_activations": 2, "loss_inputs": 2}.items():
        for step in (0, saved[-1]):
            assert len(trial.tensor_names(step=step, collection=coll)) == expected, (coll, step)
    assert "sigmoid_activations" in trial.collections()
    assert activation_layers(trial)["sigmoid_activations"] == []
