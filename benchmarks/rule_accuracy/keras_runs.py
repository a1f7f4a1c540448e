"""Keras runs: Sequential and functional models trained with compiled ``fit()`` and validation data.

The run dict has the same shape as the PyTorch one (torch_runs.py): data, model, loss, optimiser, epochs,
batch size, bug. Activations are separate ``Activation`` layers where a label check needs their inputs
(a fused ``Dense(activation=...)`` hides the pre-activation), fused elsewhere, as people write both.
"""

from __future__ import annotations

import re
from typing import Dict, List

import numpy as np

from . import data as datasets
from .hooks import keras_hook


def _model(spec: dict, x: np.ndarray, outputs: int):
    import keras
    from keras import layers

    args = dict(spec)
    arch = args.pop("arch")
    out_act = args.get("output_activation")
    init = args.get("kernel_initializer", "glorot_uniform")
    bias = args.get("bias_initializer", "zeros")
    if arch == "mlp":
        model = keras.Sequential(name="sequential")
        model.add(keras.Input(shape=x.shape[1:]))
        for i, h in enumerate(args["hidden"]):
            if args.get("separate_activation"):
                model.add(layers.Dense(h, kernel_initializer=init, bias_initializer=bias, name=f"dense_{i}"))
                model.add(layers.Activation(args["activation"], name=f"{args['activation']}_{i}"))
            else:
                model.add(layers.Dense(h, activation=args["activation"], kernel_initializer=init,
                                       bias_initializer=bias, name=f"dense_{i}"))
        model.add(layers.Dense(outputs, activation=out_act, name="head"))
        return model
    if arch == "cnn":
        inputs = keras.Input(shape=x.shape[1:], name="image")
        h = inputs
        for i, filters in enumerate(args.get("filters", [16, 32])):
            h = layers.Conv2D(filters, 3, padding="same", use_bias=not args.get("batchnorm"), name=f"conv_{i}")(h)
            if args.get("batchnorm"):
                h = layers.BatchNormalization(name=f"bn_{i}")(h)
            h = layers.ReLU(name=f"relu_{i}")(h)
        h = layers.GlobalAveragePooling2D(name="pool")(h)
        out = layers.Dense(outputs, activation=out_act, name="head")(h)
        return keras.Model(inputs, out, name="convnet")
    if arch == "gru":
        inputs = keras.Input(shape=x.shape[1:], name="sequence")
        h = layers.GRU(args.get("units", 32), name="gru")(inputs)
        out = layers.Dense(outputs, activation=out_act, name="head")(h)
        return keras.Model(inputs, out, name="recurrent")
    raise ValueError(f"unknown arch {arch!r}")


def _loss(kind: str):
    import keras

    return {
        "sparse_ce": keras.losses.SparseCategoricalCrossentropy(),
        "sparse_ce_logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        "bce": keras.losses.BinaryCrossentropy(),
        "mse": keras.losses.MeanSquaredError(),
    }[kind]


def _optimizer(spec: dict):
    import keras

    args = dict(spec)
    name = args.pop("name")
    if "decay_steps" in args:
        args["learning_rate"] = keras.optimizers.schedules.ExponentialDecay(
            args.pop("lr"), args.pop("decay_steps"), args.pop("decay_rate"))
    else:
        args["learning_rate"] = args.pop("lr")
    cls = {"sgd": keras.optimizers.SGD, "adam": keras.optimizers.Adam, "adamw": keras.optimizers.AdamW,
           "rmsprop": keras.optimizers.RMSprop}[name]
    return cls(**args)


def train(spec: dict, out_dir: str) -> dict:
    import keras

    seed = spec.get("seed", 0)
    keras.utils.set_random_seed(seed)
    bug = spec.get("bug", {})
    x_train, y_train, x_valid, y_valid = datasets.load({**spec["data"], "seed": seed})
    if spec["model"]["arch"] == "cnn":  # Keras convolutions are channels-last
        x_train, x_valid = x_train.transpose(0, 2, 3, 1), x_valid.transpose(0, 2, 3, 1)
    if bug.get("shuffle_labels"):
        y_train = np.random.default_rng(seed + 7).permutation(y_train)
    loss_kind = spec.get("loss", "sparse_ce")
    outputs = 1 if loss_kind in ("bce", "mse") else int(y_train.max()) + 1
    model = _model(spec["model"], x_train, outputs)
    model.compile(optimizer=_optimizer(spec["optimizer"]), loss=_loss(loss_kind), metrics=spec.get("metrics", []))
    hook = keras_hook(out_dir)
    bs, epochs = spec.get("batch_size", 32), spec.get("epochs", 10)
    model.fit(x_train, y_train, batch_size=bs, epochs=epochs, validation_data=(x_valid, y_valid), shuffle=True,
              callbacks=[hook], verbose=0)
    hook.close()
    steps = epochs * int(np.ceil(len(x_train) / bs))
    facts = _model_facts(model, steps)
    facts["loss_expects"] = {"sparse_ce_logits": "logits", "sparse_ce": "probabilities", "bce": "probabilities"}.get(
        loss_kind, "values")
    return facts


def _model_facts(model, steps: int) -> dict:
    from keras import layers

    inputs: Dict[str, List[str]] = {}
    outputs: Dict[str, List[str]] = {}
    for layer in model.layers:
        kind = None
        if isinstance(layer, layers.ReLU):
            kind = "relu"
        elif isinstance(layer, layers.Activation):
            kind = getattr(layer.activation, "__name__", str(layer.activation))
        elif isinstance(layer, layers.Dense) and layer.activation.__name__ in ("relu", "tanh", "sigmoid"):
            kind = layer.activation.__name__  # fused: the output is the activation's, the input is not seen
        if kind is None:
            continue
        name = re.escape(layer.name)
        outputs.setdefault(kind, []).append(f"(^|/){name}/outputs$")
        if not isinstance(layer, layers.Dense):
            inputs.setdefault(kind, []).append(f"(^|/){name}/inputs$")
    # kernels and embeddings (the hook's weights collection); a GRU/LSTM bias is 2-D but a bias
    weights = [v.path for v in model.trainable_variables if len(v.shape) >= 2 and not v.path.endswith("bias")]
    return {"framework": "keras", "model_input": "^inputs$", "activation_inputs": inputs,
            "activation_outputs": outputs, "weights": weights, "gradient_prefix": "gradients/",
            "loss": "^loss$", "predictions": "^predictions$", "labels": "^labels$", "train_steps": steps}
