"""KerasHook: activation layers found by type whatever their names (fused activation= included), the model's
input, the recommended configuration, and `smdebug rules run RUN` picking the TensorFlow rules."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import keras
from keras import layers

import smdebug.tensorflow as smd
from smdebug.core.activations import ACTIVATION_COLLECTIONS, activation_layers
from smdebug.core.testing import TAPERED_SAVED_STEPS, check_recommended_run


def odd_names(seed=0):
    """Activation layers named nothing like their type; a ReLU layer called twice."""
    keras.utils.set_random_seed(seed)
    x = keras.Input((4,), name="features")
    h = layers.Dense(8, activation="relu", name="hidden")(x)  # fused: its output is the ReLU's output
    h = layers.Activation("tanh", name="squash")(h)
    clip = layers.ReLU(name="clip")
    h = clip(layers.Dense(8, name="mid")(clip(h)))  # the same layer twice
    h = layers.LeakyReLU(negative_slope=0.2, name="leaky")(h)
    out = layers.Dense(3, activation="softmax", name="probs")(h)
    model = keras.Model(x, out, name="odd")
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    return model


def data(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 4)).astype("float32"), rng.integers(0, 3, size=(n,)).astype("int64")


def test_activation_layers_fill_their_collections_whatever_their_names(out_dir):
    model = odd_names()
    x, y = data(16)
    hook = smd.KerasHook(out_dir, save_config=smd.SaveConfig(save_interval=1),
                         include_collections=[*ACTIVATION_COLLECTIONS, "inputs"])
    model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0, callbacks=[hook])
    hook.close()
    assert not hook.disabled
    trial = smd.create_trial(out_dir)
    assert trial.steps() == [0, 1]

    def names(coll):
        return trial.tensor_names(collection=coll) if trial.collection(coll).include_regex else []

    # (a functional model's layers are named by their own path: no model prefix)
    assert names("relu_activations") == ["clip/inputs", "clip/inputs_1", "clip/outputs", "clip/outputs_1",
                                         "hidden/activation_inputs", "hidden/outputs"]
    assert names("tanh_activations") == ["squash/inputs", "squash/outputs"]
    assert names("leaky_relu_activations") == ["leaky/inputs", "leaky/outputs"]
    assert names("softmax_activations") == ["probs/activation_inputs", "probs/outputs"]
    # a fused activation's input is the layer's pre-activation, which is not the layer's input
    assert "hidden/activation_inputs" not in trial.tensor_names(collection="layers")
    assert names("sigmoid_activations") == names("gelu_activations") == []
    for step in trial.steps():
        np.testing.assert_allclose(trial.tensor("squash/outputs").value(step),
                                   np.tanh(trial.tensor("squash/inputs").value(step)), rtol=1e-5, atol=1e-6)
        # the fused Dense(activation="relu"): its output is the ReLU of the captured pre-activation, which is the
        # dense transformation of the layer's input (the model's input here)
        pre = trial.tensor("hidden/activation_inputs").value(step)
        np.testing.assert_array_equal(trial.tensor("hidden/outputs").value(step), np.maximum(pre, 0))
        assert pre.min() < 0
        probs = trial.tensor("probs/outputs").value(step)
        logits = trial.tensor("probs/activation_inputs").value(step)
        np.testing.assert_allclose(probs, np.exp(logits) / np.exp(logits).sum(1, keepdims=True), rtol=1e-5)
    # the model's input, batch by batch
    np.testing.assert_array_equal(trial.tensor("inputs").value(1), x[8:])

    layers_found = activation_layers(trial)
    assert set(layers_found) == set(ACTIVATION_COLLECTIONS)
    relus = {l.name: l for l in layers_found["relu_activations"]}
    assert relus["hidden"].type == "Dense(activation=relu)"
    assert relus["hidden"].input_names(trial.tensor_names()) == ["hidden/activation_inputs"]
    assert relus["clip"].type == "ReLU" and relus["clip"].input_names(trial.tensor_names()) == [
        "clip/inputs", "clip/inputs_1"]
    assert [l.type for l in layers_found["tanh_activations"]] == ["Activation(tanh)"]
    assert layers_found["sigmoid_activations"] == []  # the model has none


def test_a_fused_tanh_is_judged_on_its_pre_activation(tmp_path):
    """SaturatedActivation reads tanh inputs: for Dense(activation="tanh") that is the pre-activation the
    hook captures inside the layer; the probe is gone after training (the model saves as before)."""
    from smdebug.rules import run_rules

    def train(out, scale):
        keras.utils.set_random_seed(0)
        dense = layers.Dense(16, activation="tanh", name="squash")
        model = keras.Sequential([keras.Input((4,)), dense, layers.Dense(3, name="head")], name="net")
        model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        model.build((None, 4))
        dense.kernel.assign(dense.kernel.numpy() * scale)
        x, y = data(64)
        hook = smd.KerasHook(str(out), save_config=smd.SaveConfig(save_interval=1),
                             include_collections=["tanh_activations"])
        model.fit(x * 100, y, batch_size=16, epochs=1, verbose=0, callbacks=[hook])
        hook.close()
        assert dense.activation is keras.activations.tanh  # the probe is removed
        # (64 samples in all: the share judged is 1 in 16, so 64 samples pooled settle it)
        return run_rules(str(out), [("SaturatedActivation", {"threshold_inactivity": "6.25"})]).rules[0]

    assert train(tmp_path / "saturated", 10.0).status == "IssuesFound"
    assert "net/squash/activation_inputs" in train(tmp_path / "saturated2", 10.0).findings[0].reason
    assert train(tmp_path / "sound", 0.001).status == "NoIssuesFound"


def test_recurrent_layers_are_no_activation_layers(out_dir):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((5, 2)), layers.SimpleRNN(4, activation="tanh", name="rnn"),
                              layers.Dense(1, activation="sigmoid", name="out")], name="seq")
    model.compile(optimizer="sgd", loss="binary_crossentropy")
    hook = smd.KerasHook(out_dir, save_config=smd.SaveConfig(save_interval=1),
                         include_collections=["tanh_activations", "sigmoid_activations"])
    rng = np.random.default_rng(0)
    model.fit(rng.normal(size=(8, 5, 2)).astype("float32"), rng.integers(0, 2, size=(8, 1)).astype("float32"),
              batch_size=4, verbose=0, callbacks=[hook])
    hook.close()
    trial = smd.create_trial(out_dir)
    found = activation_layers(trial)
    assert found["tanh_activations"] == []  # the RNN's tanh works inside its time loop
    assert [l.name for l in found["sigmoid_activations"]] == ["seq/out"]
    assert trial.tensor_names(collection="sigmoid_activations") == ["seq/out/activation_inputs", "seq/out/outputs"]


@pytest.mark.parametrize("steps, saved", sorted(TAPERED_SAVED_STEPS.items()))
def test_recommended_hook_and_smdebug_rules_run_with_no_rule(out_dir, steps, saved):
    from smdebug.rules import rule_configs

    model = odd_names()
    x, y = data(steps * 2)
    hook = smd.KerasHook.recommended(out_dir)
    model.fit(x, y, batch_size=2, epochs=1, shuffle=False, verbose=0, callbacks=[hook])
    hook.close()
    assert not hook.disabled
    check_recommended_run(out_dir, "tensorflow", saved,
                          ("weights", "gradients", "losses", "inputs", "relu_activations", "tanh_activations",
                           "loss_inputs"))
    if steps > 100:
        return
    result = subprocess.run([sys.executable, "-m", "smdebug.cli", "rules", "run", out_dir, "--json", "-q"],
                            capture_output=True, text=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert result.returncode in (0, 1), result.stderr
    rules = json.loads(result.stdout)["rules"]
    assert [r["name"] for r in rules] == list(rule_configs.RECOMMENDED["tensorflow"])
    params = {r["name"]: r["params"] for r in rules}
    assert params["CheckInputImages"]["channel"] == "-1"  # Keras images are channels-last
    assert not [r for r in rules if r["status"] == "Error"], rules


# --- the loss the model was compiled with (smdebug.core.loss_inputs) and ImproperOutput judging it -----------------
@pytest.mark.parametrize("output, loss, fires", [
    ("softmax", keras.losses.SparseCategoricalCrossentropy(from_logits=True), True),  # softmax applied twice
    (None, "sparse_categorical_crossentropy", True),  # logits into a loss that wants probabilities
    ("softmax", "sparse_categorical_crossentropy", False),
    (None, keras.losses.SparseCategoricalCrossentropy(from_logits=True), False),
])
def test_the_compiled_loss_is_recorded_and_improper_output_judges_it(out_dir, output, loss, fires):
    from smdebug.core.loss_inputs import recorded_losses
    from smdebug.rules import run_rules

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), layers.Dense(8, activation="relu"),
                              layers.Dense(3, activation=output)])
    model.compile(optimizer="adam", loss=loss)
    x, y = data(256)
    hook = smd.KerasHook.recommended(out_dir)
    model.fit(x, y, batch_size=64, epochs=2, shuffle=False, verbose=0, callbacks=[hook])
    hook.close()
    assert not hook.disabled
    trial = smd.create_trial(out_dir)
    [recorded] = recorded_losses(trial)
    assert recorded.type == (loss if isinstance(loss, str) else "SparseCategoricalCrossentropy")
    assert recorded.expects == ("logits" if not isinstance(loss, str) else "probabilities")
    assert set(trial.tensor_names(collection="loss_inputs")) == {"predictions", "labels"}
    result = run_rules(out_dir, ["ImproperOutput"]).rules[0]
    assert result.status == ("IssuesFound" if fires else "NoIssuesFound"), result.detail


@pytest.mark.parametrize("as_dict", [True, False])
@pytest.mark.parametrize("head, fires", [("softmax", False), (None, True)])
def test_each_output_of_a_two_output_model_is_judged_by_its_own_loss(out_dir, as_dict, head, fires):
    from smdebug.core.loss_inputs import recorded_losses
    from smdebug.rules import run_rules

    keras.utils.set_random_seed(0)
    inputs = keras.Input((4,))
    hidden = layers.Dense(8, activation="relu")(inputs)
    model = keras.Model(inputs, [layers.Dense(3, activation=head, name="cls")(hidden),
                                 layers.Dense(1, name="amount")(hidden)])
    losses = {"cls": "sparse_categorical_crossentropy", "amount": "mse"}
    model.compile(optimizer="adam", loss=losses if as_dict else [losses["cls"], losses["amount"]])
    x, y = data(256)
    targets = {"cls": y, "amount": x[:, :1]} if as_dict else [y, x[:, :1]]
    hook = smd.KerasHook.recommended(out_dir)
    model.fit(x, targets, batch_size=64, epochs=2, shuffle=False, verbose=0, callbacks=[hook])
    hook.close()
    assert not hook.disabled
    trial = smd.create_trial(out_dir)
    recorded = {loss.name: loss for loss in recorded_losses(trial)}
    assert {name: (loss.type, loss.expects) for name, loss in recorded.items()} == {
        "cls_loss": ("sparse_categorical_crossentropy", "probabilities"), "amount_loss": ("mse", "regression")}
    names = trial.tensor_names()
    assert recorded["cls_loss"].prediction_names(names) == ["predictions_0"]
    assert recorded["cls_loss"].target_names(names) == (["labels/cls"] if as_dict else ["labels_0"])
    result = run_rules(out_dir, ["ImproperOutput"]).rules[0]
    assert result.status == ("IssuesFound" if fires else "NoIssuesFound"), (result.detail, result.findings)
    if fires:
        assert result.findings[0].reason.startswith("sparse_categorical_crossentropy (cls_loss) expects probabilities")
