"""KerasHook under model.fit/evaluate/predict in the default compiled mode, read back through trials."""

import json
import logging
import os

import numpy as np
import pytest

import keras
import tensorflow as tf

import models
import smdebug.tensorflow as smd
from smdebug.core.stop_signal import write_stop_signal

ALL_TRAIN = ["weights", "biases", "gradients", "losses", "metrics", "layers", "inputs", "labels", "predictions",
             "optimizer_variables"]
MLP_VARS = ["mlp/dense/kernel", "mlp/dense/bias", "mlp/out/kernel", "mlp/out/bias"]


def hand_gradients(weights, x, y):
    """Gradients of the MSE of a fresh MLP with ``weights`` on one batch, by GradientTape."""
    model = models.dense(compile=False)
    model.set_weights(weights)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
    return [g.numpy() for g in tape.gradient(loss, model.trainable_variables)], float(loss)


def test_compiled_fit_saves_gradients_layers_and_data_exactly(out_dir):
    x, y = models.data()
    model = models.dense()
    assert not model.run_eagerly
    initial = [w.copy() for w in model.get_weights()]
    hook = smd.KerasHook(out_dir, save_config=smd.SaveConfig(save_interval=2), include_collections=ALL_TRAIN)
    model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0, callbacks=[hook])
    hook.close()

    trial = smd.create_trial(out_dir)
    assert trial.steps() == [0, 2, 4, 6]
    assert trial.steps(mode=smd.modes.TRAIN) == [0, 2, 4, 6]
    grads = ["gradients/" + v for v in MLP_VARS]
    assert trial.tensor_names(collection="gradients") == sorted(grads)
    assert trial.tensor_names(collection="weights") == ["mlp/dense/kernel", "mlp/out/kernel"]
    assert trial.tensor_names(collection="biases") == ["mlp/dense/bias", "mlp/out/bias"]
    assert trial.tensor_names(collection="layers") == [
        "mlp/dense/inputs", "mlp/dense/outputs", "mlp/out/inputs", "mlp/out/outputs"]
    assert trial.tensor_names(collection="losses") == ["loss"]
    assert trial.tensor_names(collection="metrics") == ["mae"]
    for name in grads + MLP_VARS + ["inputs", "labels", "predictions", "loss", "mae", "mlp/dense/outputs"]:
        assert trial.tensor(name).steps() == [0, 2, 4, 6], name
    opt_vars = trial.tensor_names(collection="optimizer_variables")
    assert [n.split("/", 1)[1] for n in opt_vars] == ["iteration", "learning_rate"]  # SGD has no slots
    assert trial.tensor(opt_vars[0]).values() == {0: 0, 2: 2, 4: 4, 6: 6}

    # step 0: the first batch at the initial weights (weights are saved before the update)
    expected, loss = hand_gradients(initial, x[:8], y[:8])
    for name, g in zip(grads, expected):
        np.testing.assert_allclose(trial.tensor(name).value(0), g, rtol=1e-5, atol=1e-6)
    for name, w in zip(MLP_VARS, initial):
        np.testing.assert_array_equal(trial.tensor(name).value(0), w)
    np.testing.assert_allclose(trial.tensor("loss").value(0), loss, rtol=1e-5)
    np.testing.assert_array_equal(trial.tensor("inputs").value(0), x[:8])
    np.testing.assert_array_equal(trial.tensor("labels").value(0), y[:8])
    np.testing.assert_array_equal(trial.tensor("mlp/dense/inputs").value(0), x[:8])
    hidden = np.maximum(x[:8] @ initial[0] + initial[1], 0)
    np.testing.assert_allclose(trial.tensor("mlp/dense/outputs").value(0), hidden, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(trial.tensor("predictions").value(0), hidden @ initial[2] + initial[3],
                               rtol=1e-5, atol=1e-6)
    assert trial.inputs(0)[0].shape == (8, 4) and trial.labels(0)[0].shape == (8, 1)

    # step 6 = epoch 1, batch 2: its gradient is the one at the weights saved at step 6
    weights6 = [trial.tensor(n).value(6) for n in MLP_VARS]
    expected6, _ = hand_gradients(weights6, x[16:24], y[16:24])
    for name, g in zip(grads, expected6):
        np.testing.assert_allclose(trial.tensor(name).value(6), g, rtol=1e-4, atol=1e-6)


def test_default_config_saves_losses_and_metrics_and_never_traces_a_capture(out_dir):
    x, y = models.data()
    model = models.dense()
    hook = smd.KerasHook(out_dir)
    model.fit(x, y, batch_size=8, epochs=3, verbose=0, callbacks=[hook])
    assert hook._capture_fns == {} and hook._offered == {}  # no second graph for the default config
    assert model.train_function is not None and not hasattr(model.train_function, "_smdebug_hook")
    hook.close()
    trial = smd.create_trial(out_dir)
    assert trial.steps() == [0]
    assert sorted(trial.tensor_names()) == ["loss", "mae"]
    with open(os.path.join(out_dir, "collections", "000000000", "worker_0_collections.json")) as f:
        collections = json.load(f)["collections"]
    assert {"losses", "metrics", "sm_metrics", "gradients", "weights"} <= set(collections)
    assert collections["metrics"]["tensor_names"] == ["mae"]


def test_collections_follow_their_own_schedules(out_dir):
    x, y = models.data()
    model = models.dense()
    hook = smd.KerasHook(out_dir, save_config=smd.SaveConfig(save_interval=100),
                         include_collections=["weights", "gradients", "layers"])
    hook.get_collection("gradients").save_config = smd.SaveConfig(save_interval=3)
    hook.get_collection("weights").save_config = smd.SaveConfig(save_steps=[1, 5])
    hook.get_collection("layers").save_config = smd.SaveConfig(save_interval=4, start_step=4)
    model.fit(x, y, batch_size=4, epochs=1, verbose=0, callbacks=[hook])  # 8 steps
    hook.close()
    trial = smd.create_trial(out_dir)
    assert trial.tensor("gradients/mlp/dense/kernel").steps() == [0, 3, 6]
    assert trial.tensor("mlp/dense/kernel").steps() == [0, 1, 5]  # save_steps and the interval: a union
    assert trial.tensor("mlp/out/outputs").steps() == [4]
    assert trial.tensor("loss").steps() == [0]
    assert trial.steps() == [0, 1, 3, 4, 5, 6]
    # two distinct sets of in-graph tensors were due (gradients; layer IO): one capture function each
    assert len(hook._capture_fns) == 2


def test_modes_fit_with_validation_evaluate_predict(out_dir):
    x, y = models.data()
    model = models.dense()
    hook = smd.KerasHook(out_dir, save_config=smd.SaveConfig(save_interval=1),
                         include_collections=["losses", "metrics", "predictions", "gradients", "weights"])
    model.fit(x, y, batch_size=16, epochs=2, verbose=0, callbacks=[hook], validation_data=(x[:8], y[:8]))
    model.evaluate(x, y, batch_size=16, verbose=0, callbacks=[hook])
    out = model.predict(x, batch_size=16, verbose=0, callbacks=[hook])
    hook.close()
    trial = smd.create_trial(out_dir)
    modes = smd.modes
    assert trial.steps(mode=modes.TRAIN) == [0, 1, 2, 3]
    assert trial.steps(mode=modes.EVAL) == [0, 1, 2, 3]  # one validation batch per epoch, then 2 batches
    assert trial.steps(mode=modes.PREDICT) == [0, 1]
    assert trial.steps() == list(range(10))
    assert [trial.mode(s) for s in trial.steps()] == [modes.TRAIN] * 2 + [modes.EVAL] + [modes.TRAIN] * 2 + \
        [modes.EVAL] * 3 + [modes.PREDICT] * 2
    # gradients only in TRAIN; the final validation values as val_*; evaluate's own at its last step
    assert trial.tensor("gradients/mlp/out/bias").steps(mode=modes.EVAL) == []
    assert trial.tensor("val_loss").steps() == [2, 5]
    assert trial.tensor_names(collection="losses") == ["loss", "val_loss"]
    assert trial.tensor_names(collection="metrics") == ["mae", "val_mae"]
    np.testing.assert_allclose(trial.tensor("val_loss").value(2), trial.tensor("loss").value(2), rtol=1e-6)
    assert trial.tensor("mlp/dense/kernel").steps(mode=modes.EVAL) == [0, 1, 2, 3]
    # predict: the predictions of each batch, equal to what predict returned
    pred = trial.tensor("predictions")
    np.testing.assert_allclose(np.concatenate([pred.value(0, mode=modes.PREDICT), pred.value(1, mode=modes.PREDICT)]),
                               out, rtol=1e-6)


def test_subclassed_model_nested_layers_and_batchnorm(out_dir):
    x, y = models.data()
    model = models.subclassed()
    hook = smd.KerasHook(out_dir, save_config=smd.SaveConfig(save_steps=[0]),
                         include_collections=["weights", "biases", "gradients", "layers", "predictions"])
    model.fit(x, y, batch_size=16, epochs=1, verbose=0, callbacks=[hook])
    hook.close()
    trial = smd.create_trial(out_dir)
    assert trial.steps() == [0]
    names = trial.tensor_names(step=0)
    for layer in ("sub/first", "sub/block", "sub/block/inner", "sub/norm", "sub/head"):
        assert f"{layer}/outputs" in names, layer
    assert "sub/norm/moving_mean" in trial.tensor_names(collection="weights")
    assert "sub/block/inner/bias" in trial.tensor_names(collection="biases")
    assert "gradients/sub/norm/moving_mean" not in names  # not trainable: no gradient
    assert "gradients/sub/block/inner/kernel" in names
    inner = trial.tensor("sub/block/inner/outputs").value(0)
    np.testing.assert_allclose(trial.tensor("sub/block/outputs").value(0), np.maximum(inner, 0), rtol=1e-6)


def test_functional_model_with_dict_inputs_and_outputs(out_dir):
    x, y = models.two_data()
    model = models.two_in_two_out()
    hook = smd.KerasHook(out_dir, save_config=smd.SaveConfig(save_interval=1),
                         include_collections=["inputs", "labels", "predictions", "losses", "metrics", "layers"])
    model.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False, callbacks=[hook])
    hook.close()
    trial = smd.create_trial(out_dir)
    assert trial.steps() == [0, 1]
    assert trial.tensor_names(collection="inputs") == ["inputs/a", "inputs/b"]
    assert trial.tensor_names(regex="^labels") == ["labels/cls", "labels/reg"]
    assert trial.tensor_names(regex="^predictions") == ["predictions/cls", "predictions/reg"]
    np.testing.assert_array_equal(trial.tensor("inputs/b").value(1), x["b"][8:])
    np.testing.assert_array_equal(trial.tensor("labels/cls").value(0), y["cls"][:8])
    assert trial.tensor("labels/cls").value(0).dtype == np.int32
    assert trial.tensor("predictions/cls").value(0).shape == (8, 2)
    assert trial.tensor("cat/inputs_0").value(0).shape == (8, 3)  # several inputs: _<i>
    assert trial.tensor("cat/inputs_1").value(0).shape == (8, 2)
    assert {"loss", "reg_loss", "cls_loss"} <= set(trial.tensor_names(collection="losses"))
    assert "cls_accuracy" in trial.tensor_names(collection="metrics")


def test_cnn_with_reductions_and_keras_layer_collection(out_dir):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(16, 8, 8, 1)).astype("float32")
    y = rng.integers(0, 3, size=(16,))
    model = models.cnn()
    hook = smd.KerasHook(out_dir, save_config=smd.SaveConfig(save_interval=2),
                         include_collections=["gradients", "conv_in"], reduction_config=smd.ReductionConfig(norms=["l2"], reductions=["max"]))
    hook.get_collection("gradients").reduction_config = smd.ReductionConfig(norms=["l2"], save_raw_tensor=True)
    conv_in = hook.get_collection("conv_in")
    conv_in.add_keras_layer(model.get_layer("conv"), inputs=True, outputs=False)
    model.fit(x, y, batch_size=4, epochs=1, verbose=0, shuffle=False, callbacks=[hook])
    hook.close()
    trial = smd.create_trial(out_dir)
    assert trial.tensor_names(collection="conv_in") == ["cnn/conv/inputs"]
    assert "cnn/conv/outputs" not in trial.tensor_names()
    g = trial.tensor("gradients/cnn/conv/kernel")
    assert g.steps() == [0, 2]
    raw = g.value(2)
    assert raw.shape == (3, 3, 1, 4)
    np.testing.assert_allclose(g.reduction_value(2, "l2"), np.linalg.norm(raw.reshape(-1)), rtol=1e-5)
    conv = trial.tensor("cnn/conv/inputs")
    np.testing.assert_allclose(conv.reduction_value(0, "max"), x[:4].max(), rtol=1e-6)
    with pytest.raises(Exception):
        conv.value(0)  # reductions only: no raw tensor


def test_run_eagerly_and_steps_per_execution(out_dir, tmp_path):
    x, y = models.data()
    model = models.dense(run_eagerly=True)
    hook = smd.KerasHook(out_dir, save_config=smd.SaveConfig(save_interval=2), include_collections=["gradients"])
    model.fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[hook])
    hook.close()
    trial = smd.create_trial(out_dir)
    assert trial.tensor("gradients/mlp/out/kernel").steps() == [0, 2]

    out2 = str(tmp_path / "spe")
    model = models.dense(steps_per_execution=2)
    hook = smd.KerasHook(out2, save_config=smd.SaveConfig(save_interval=1), include_collections=["gradients", "inputs"])
    history = model.fit(x, y, batch_size=4, epochs=1, verbose=0, shuffle=False, callbacks=[hook])
    hook.close()
    trial = smd.create_trial(out2)
    # one hook step per execution (Keras calls the callbacks once per execution of 2 batches); the
    # tensors are those of the execution's first batch, and every batch still trains
    assert trial.steps() == [0, 1, 2, 3]
    np.testing.assert_array_equal(trial.tensor("inputs").value(1), x[8:12])
    assert np.isfinite(history.history["loss"][0])
    assert int(model.optimizer.iterations.numpy()) == 8


def test_mixed_precision_gradients_are_unscaled(out_dir):
    x, y = models.data()
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        model = models.dense()
        initial = model.get_weights()
        hook = smd.KerasHook(out_dir, save_config=smd.SaveConfig(save_steps=[0]),
                             include_collections=["gradients", "layers"])
        model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0, callbacks=[hook])
        hook.close()
    finally:
        keras.mixed_precision.set_global_policy("float32")
    trial = smd.create_trial(out_dir)
    assert trial.tensor("mlp/dense/outputs").value(0).dtype == np.float16
    expected, _ = hand_gradients(initial, x[:8], y[:8])
    grad = trial.tensor("gradients/mlp/dense/kernel").value(0)
    assert grad.dtype == np.float32
    np.testing.assert_allclose(grad, expected[0], rtol=0.05, atol=1e-2)


def test_embeddings_strings_and_ints(out_dir):
    words = np.array(["the cat", "a dog", "the dog", "a cat"] * 4)
    labels = np.array([0, 1, 1, 0] * 4, dtype="int64")
    keras.utils.set_random_seed(0)
    inp = keras.Input((1,), dtype="string", name="text")
    lookup = keras.layers.StringLookup(vocabulary=["the cat", "a dog", "the dog", "a cat"], name="lookup")
    ids = lookup(inp)
    emb = keras.layers.Embedding(6, 3, name="emb")(ids)
    out = keras.layers.Dense(2, name="cls")(keras.layers.Flatten(name="flat")(emb))
    model = keras.Model(inp, out, name="text_model")
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    hook = smd.KerasHook(out_dir, save_config=smd.SaveConfig(save_steps=[1]),
                         include_collections=["inputs", "labels", "gradients", "layers", "weights"])
    dataset = tf.data.Dataset.from_tensor_slices((words[:, None], labels)).batch(4)
    model.fit(dataset, epochs=1, verbose=0, callbacks=[hook])
    hook.close()
    trial = smd.create_trial(out_dir)
    assert trial.steps() == [0, 1]
    np.testing.assert_array_equal(trial.tensor("inputs").value(1).reshape(-1), words[4:8])
    assert trial.tensor("lookup/outputs").value(1).dtype == np.int64
    np.testing.assert_array_equal(trial.tensor("labels").value(1), labels[4:8])
    g = trial.tensor("gradients/emb/embeddings").value(1)  # IndexedSlices, saved dense
    assert g.shape == (6, 3)
    # only the rows of the batch's words (ids 1-4; 0 is the out-of-vocabulary id, 5 is unused)
    assert np.nonzero(np.abs(g).sum(axis=1))[0].tolist() == [1, 2, 3, 4]


def test_stop_signal_ends_fit_cleanly(out_dir, monkeypatch):
    monkeypatch.setenv("SMDEBUG_STOP_CHECK_INTERVAL", "0")
    x, y = models.data(n=64)
    model = models.dense()
    hook = smd.KerasHook(out_dir, save_config=smd.SaveConfig(save_interval=1), include_collections=["losses"])

    class Signal(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 3:
                write_stop_signal(out_dir, "LossNotDecreasing", 3, "loss is flat")

    history = model.fit(x, y, batch_size=8, epochs=5, verbose=0, callbacks=[Signal(), hook])
    assert hook.stop_requested and "LossNotDecreasing" in hook.stop_reason
    assert len(history.history["loss"]) == 1  # stopped in the first epoch
    assert int(model.optimizer.iterations.numpy()) == 5  # the batch that saw the signal still ran
    assert not hook.disabled
    hook.close()
    trial = smd.create_trial(out_dir)
    assert trial.steps() == [0, 1, 2, 3, 4]
    assert trial.loaded_all_steps or trial.tensor("loss").value(4) is not None


def test_an_internal_failure_disables_the_hook_not_training(out_dir, caplog):
    x, y = models.data()
    model = models.dense()
    hook = smd.KerasHook(out_dir, save_config=smd.SaveConfig(save_interval=1), include_collections=["gradients"])

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    hook._after_capture = broken
    with caplog.at_level(logging.ERROR):
        history = model.fit(x, y, batch_size=8, epochs=2, verbose=0, callbacks=[hook])
    assert len(history.history["loss"]) == 2 and int(model.optimizer.iterations.numpy()) == 8
    assert hook.disabled and "boom" in hook._failure
    assert sum("smdebug hook disabled" in r.getMessage() for r in caplog.records) == 1
    assert not hasattr(model.train_function, "_smdebug_hook")  # Keras' own function is back
    hook.close()


def test_json_configuration_and_get_hook(tmp_path, monkeypatch):
    out = str(tmp_path / "json_run")
    config = {
        "LocalPath": out,
        "HookParameters": {"save_interval": "2"},
        "CollectionConfigurations": [
            {"CollectionName": "gradients", "CollectionParameters": {"save_steps": "1"}},
            {"CollectionName": "layers", "CollectionParameters": {"include_regex": "out"}},
        ],
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    monkeypatch.setenv("SMDEBUG_CONFIG_FILE_PATH", str(path))
    assert smd.get_hook(hook_type="keras") is None
    hook = smd.get_hook(hook_type="keras", create_if_not_exists=True)
    assert isinstance(hook, smd.KerasHook) and smd.get_hook() is hook
    assert smd.get_hook(hook_type="keras") is hook
    x, y = models.data()
    model = models.dense()
    model.fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[hook])
    hook.close()
    trial = smd.create_trial(out)
    assert trial.tensor("gradients/mlp/out/kernel").steps() == [0, 1, 2]
    assert trial.tensor("mlp/out/outputs").steps() == [0, 2]
    assert trial.tensor("loss").steps() == [0, 2]
    with pytest.raises(ValueError):
        smd.get_hook(hook_type="nope")
