"""Keras held-out runs (scenarios ``hh_keras_``/``bh_keras_``): models and ``fit()`` calls unlike keras_runs.py's
-- Conv1D over sequences, an LSTM regression, Dropout-heavy MLPs, ``validation_split`` instead of validation data,
EarlyStopping and ReduceLROnPlateau callbacks, ``shuffle=False`` -- recorded with
``KerasHook.recommended(out_dir)`` (hooks.heldout_keras_hook).
"""

from __future__ import annotations

import numpy as np

from . import heldout_data
from .hooks import heldout_keras_hook
from .keras_runs import _model_facts


def _model(spec: dict, x: np.ndarray, outputs: int):
    import keras
    from keras import layers

    args = dict(spec)
    arch = args.pop("arch")
    out_act = args.get("output_activation")
    if arch == "conv1d":
        inputs = keras.Input(shape=x.shape[1:], name="sequence")
        h = inputs
        for i, filters in enumerate(args.get("filters", [16, 32])):
            h = layers.Conv1D(filters, 5, padding="same", name=f"conv_{i}")(h)
            h = layers.Activation(args.get("activation", "relu"), name=f"act_{i}")(h)
        h = layers.GlobalAveragePooling1D(name="pool")(h)
        out = layers.Dense(outputs, activation=out_act, name="head")(h)
        return keras.Model(inputs, out, name="conv1d")
    if arch == "lstm":
        inputs = keras.Input(shape=x.shape[1:], name="sequence")
        h = layers.LSTM(args.get("units", 32), name="lstm")(inputs)
        h = layers.Dense(16, activation="relu", name="dense")(h)
        out = layers.Dense(outputs, activation=out_act, name="head")(h)
        return keras.Model(inputs, out, name="recurrent")
    if arch == "mlp":
        model = keras.Sequential(name="sequential")
        model.add(keras.Input(shape=x.shape[1:]))
        for i, h in enumerate(args["hidden"]):
            model.add(layers.Dense(h, name=f"dense_{i}"))
            model.add(layers.Activation(args.get("activation", "relu"), name=f"{args.get('activation', 'relu')}_{i}"))
            if args.get("dropout"):
                model.add(layers.Dropout(args["dropout"], name=f"dropout_{i}"))
        model.add(layers.Dense(outputs, activation=out_act, name="head"))
        return model
    if arch == "cnn":
        inputs = keras.Input(shape=x.shape[1:], name="image")
        h = inputs
        for i, filters in enumerate(args.get("filters", [16, 32])):
            h = layers.Conv2D(filters, 3, padding="same", name=f"conv_{i}")(h)
            h = layers.ReLU(name=f"relu_{i}")(h)
        h = layers.Flatten(name="flatten")(h)
        out = layers.Dense(outputs, activation=out_act, name="head")(h)
        return keras.Model(inputs, out, name="convnet")
    raise ValueError(f"unknown arch {arch!r}")


def _loss(kind: str):
    import keras

    return {"sparse_ce": keras.losses.SparseCategoricalCrossentropy(),
            "sparse_ce_logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            "mse": keras.losses.MeanSquaredError(), "huber": keras.losses.Huber(),
            "bce": keras.losses.BinaryCrossentropy()}[kind]


def _callbacks(names):
    import keras

    made = []
    for name in names or ():
        if name == "early_stopping":
            made.append(keras.callbacks.EarlyStopping(monitor="val_loss", patience=4, restore_best_weights=True))
        elif name == "reduce_lr":
            made.append(keras.callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=2))
        else:
            raise ValueError(f"unknown callback {name!r}")
    return made


def train(spec: dict, out_dir: str) -> dict:
    import keras

    seed = spec.get("seed", 0)
    keras.utils.set_random_seed(seed)
    bug = spec.get("bug", {})
    x_train, y_train, x_valid, y_valid = heldout_data.load({**spec["data"], "seed": seed})
    if spec["model"]["arch"] == "cnn":
        x_train, x_valid = x_train.transpose(0, 2, 3, 1), x_valid.transpose(0, 2, 3, 1)
    if bug.get("sorted_by_label"):
        order = np.argsort(y_train, kind="stable")
        x_train, y_train = x_train[order], y_train[order]
    loss_kind = spec.get("loss", "sparse_ce")
    outputs = 1 if loss_kind in ("mse", "huber", "bce") else int(y_train.max()) + 1
    model = _model(spec["model"], x_train, outputs)
    opt = dict(spec["optimizer"])
    name = opt.pop("name")
    optimizer = {"adam": keras.optimizers.Adam, "sgd": keras.optimizers.SGD, "rmsprop": keras.optimizers.RMSprop,
                 "nadam": keras.optimizers.Nadam}[name](learning_rate=opt.pop("lr"), **opt)
    model.compile(optimizer=optimizer, loss=_loss(loss_kind))
    hook = heldout_keras_hook(out_dir, spec.get("hook", "recommended"))
    bs, epochs = spec.get("batch_size", 32), spec.get("epochs", 10)
    fit = dict(batch_size=bs, epochs=epochs, shuffle=not bug.get("sorted_by_label"), verbose=0,
               callbacks=[hook, *_callbacks(spec.get("callbacks"))])
    if spec.get("validation_split"):
        # Keras takes the validation rows from the end of the arrays, before any shuffling
        history = model.fit(np.concatenate([x_train, x_valid]), np.concatenate([y_train, y_valid]),
                            validation_split=len(x_valid) / (len(x_train) + len(x_valid)), **fit)
    elif spec.get("validate", True):
        history = model.fit(x_train, y_train, validation_data=(x_valid, y_valid), **fit)
    else:
        history = model.fit(x_train, y_train, **fit)
    hook.close()
    steps = len(history.history["loss"]) * int(np.ceil(len(x_train) / bs))
    facts = _model_facts(model, steps)
    facts["loss_expects"] = {"sparse_ce_logits": "logits", "sparse_ce": "probabilities", "bce": "probabilities"}.get(
        loss_kind, "values")
    return facts
