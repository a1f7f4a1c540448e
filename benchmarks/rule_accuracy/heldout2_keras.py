"""Keras runs of the second held-out batch (``h2_keras_``/``b2_keras_``): a functional model with two inputs
(numbers and a categorical id through an Embedding), BatchNormalization in a Sequential regression, one-hot
targets with label smoothing and a cosine-decay schedule, ``validation_split``, ReduceLROnPlateau; recorded
with ``KerasHook.recommended(out_dir)`` (hooks.heldout2_keras_hook).
"""

from __future__ import annotations

import numpy as np

from . import heldout2_data
from .hooks import heldout2_keras_hook
from .keras_runs import _model_facts


def _model(spec: dict, x: np.ndarray, outputs: int):
    import keras
    from keras import layers

    arch, out_act = spec["arch"], spec.get("output_activation")
    if arch == "two_inputs":
        numeric = keras.Input(shape=(x.shape[1] - 1,), name="numeric")
        category = keras.Input(shape=(1,), name="category")
        e = layers.Flatten(name="flat")(layers.Embedding(spec.get("categories", 30), 4, name="embed")(category))
        h = layers.Concatenate(name="concat")([layers.Dense(16, name="num_dense")(numeric), e])
        h = layers.Activation("relu", name="relu_0")(layers.Dense(32, name="dense_0")(h))
        out = layers.Dense(outputs, activation=out_act, name="head")(h)
        return keras.Model([numeric, category], out, name="two_inputs")
    if arch == "bn_mlp":
        model = keras.Sequential(name="sequential")
        model.add(keras.Input(shape=x.shape[1:]))
        for i, h in enumerate(spec["hidden"]):
            model.add(layers.Dense(h, use_bias=False, name=f"dense_{i}"))
            model.add(layers.BatchNormalization(name=f"bn_{i}"))
            model.add(layers.Activation("relu", name=f"relu_{i}"))
        model.add(layers.Dense(outputs, activation=out_act, name="head"))
        return model
    if arch == "cnn":
        inputs = keras.Input(shape=x.shape[1:], name="image")
        h = inputs
        for i, filters in enumerate(spec.get("filters", [16, 32])):
            h = layers.Conv2D(filters, 3, padding="same", name=f"conv_{i}")(h)
            h = layers.ReLU(name=f"relu_{i}")(h)
        h = layers.MaxPooling2D(name="pool")(h)
        h = layers.Flatten(name="flatten")(h)
        out = layers.Dense(outputs, activation=out_act, name="head")(h)
        return keras.Model(inputs, out, name="convnet")
    if arch == "mlp":
        model = keras.Sequential(name="sequential")
        model.add(keras.Input(shape=x.shape[1:]))
        for i, h in enumerate(spec["hidden"]):
            model.add(layers.Dense(h, name=f"dense_{i}"))
            model.add(layers.Activation("relu", name=f"relu_{i}"))
        model.add(layers.Dense(outputs, activation=out_act, name="head"))
        return model
    raise ValueError(f"unknown arch {arch!r}")


def _loss(kind: str):
    import keras

    return {"sparse_ce": keras.losses.SparseCategoricalCrossentropy(),
            "ce_smooth": keras.losses.CategoricalCrossentropy(label_smoothing=0.1),
            "bce": keras.losses.BinaryCrossentropy(), "mse": keras.losses.MeanSquaredError()}[kind]


def _optimizer(spec: dict, steps: int):
    import keras

    args = dict(spec)
    name, lr = args.pop("name"), args.pop("lr")
    if args.pop("cosine", False):
        lr = keras.optimizers.schedules.CosineDecay(lr, decay_steps=steps)
    if "decay_steps" in args:
        lr = keras.optimizers.schedules.ExponentialDecay(lr, args.pop("decay_steps"), args.pop("decay_rate"))
    return {"adam": keras.optimizers.Adam, "sgd": keras.optimizers.SGD}[name](learning_rate=lr, **args)


def train(spec: dict, out_dir: str) -> dict:
    import keras

    seed = spec.get("seed", 0)
    keras.utils.set_random_seed(seed)
    bug = spec.get("bug", {})
    x_train, y_train, x_valid, y_valid = heldout2_data.load({**spec["data"], "seed": seed})
    if spec["model"]["arch"] == "cnn":
        x_train, x_valid = x_train.transpose(0, 2, 3, 1), x_valid.transpose(0, 2, 3, 1)
    loss_kind = spec.get("loss", "sparse_ce")
    outputs = 1 if loss_kind in ("mse", "bce") else int(y_train.max()) + 1
    if loss_kind == "ce_smooth":
        y_train, y_valid = (np.eye(outputs, dtype=np.float32)[y] for y in (y_train, y_valid))
    bs, epochs = spec.get("batch_size", 32), spec.get("epochs", 10)
    model = _model(spec["model"], x_train, outputs)
    model.compile(optimizer=_optimizer(spec["optimizer"], epochs * int(np.ceil(len(x_train) / bs))),
                  loss=_loss(loss_kind))
    hook = heldout2_keras_hook(out_dir, spec.get("hook", "recommended"))
    callbacks = [hook]
    if spec.get("reduce_lr"):
        callbacks.append(keras.callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=2))

    def inputs(x):  # the two-input model takes the numbers and the id apart
        return [x[:, :-1], x[:, -1:].astype(np.int32)] if spec["model"]["arch"] == "two_inputs" else x

    fit = dict(batch_size=bs, epochs=epochs, verbose=0, callbacks=callbacks)
    if spec.get("validation_split"):
        x_all, y_all = np.concatenate([x_train, x_valid]), np.concatenate([y_train, y_valid])
        if bug.get("sorted_by_label"):
            # rows sorted by class (as exported from a database); validation_split takes the last 20%
            # before any shuffling: the validation set is the last classes only
            order = np.argsort(y_all if y_all.ndim == 1 else y_all.argmax(1), kind="stable")
            x_all, y_all = x_all[order], y_all[order]
        history = model.fit(inputs(x_all), y_all, validation_split=0.2, shuffle=True, **fit)
        n_train = int(len(x_all) * 0.8)
    else:
        history = model.fit(inputs(x_train), y_train, validation_data=(inputs(x_valid), y_valid), shuffle=True, **fit)
        n_train = len(x_train)
    hook.close()
    facts = _model_facts(model, len(history.history["loss"]) * int(np.ceil(n_train / bs)))
    facts["loss_expects"] = {"sparse_ce": "probabilities", "ce_smooth": "probabilities", "bce": "probabilities"}.get(
        loss_kind, "values")
    facts["task"] = "regression" if loss_kind == "mse" else "classification"
    if spec["model"]["arch"] == "two_inputs":
        facts["model_input"] = "^inputs_0$"
    return facts
