"""Tiny Keras models and data shared by the tests."""

import numpy as np
import keras
import tensorflow as tf

from keras import layers


def data(n=32, features=4, outputs=1, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, features)).astype("float32")
    y = (x @ rng.normal(size=(features, outputs))).astype("float32")
    return x, y


def dense(seed=0, compile=True, optimizer="sgd", metrics=("mae",), **compile_kwargs):
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((4,)), layers.Dense(3, activation="relu", name="dense"),
                              layers.Dense(1, name="out")], name="mlp")
    if compile:
        model.compile(optimizer=optimizer, loss="mse", metrics=list(metrics), **compile_kwargs)
    return model


def cnn(seed=0):
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([
        keras.Input((8, 8, 1)),
        layers.Conv2D(4, 3, activation="relu", name="conv"),
        layers.MaxPooling2D(name="pool"),
        layers.Flatten(name="flat"),
        layers.Dense(3, name="logits"),
    ], name="cnn")
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    return model


class Block(layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.inner = layers.Dense(3, name="inner")

    def call(self, x):
        return tf.nn.relu(self.inner(x))


class Subclassed(keras.Model):
    def __init__(self):
        super().__init__(name="sub")
        self.first = layers.Dense(5, name="first")
        self.block = Block(name="block")
        self.norm = layers.BatchNormalization(name="norm")
        self.head = layers.Dense(1, name="head")

    def call(self, x, training=False):
        return self.head(self.norm(self.block(self.first(x)), training=training))


def subclassed(seed=0):
    keras.utils.set_random_seed(seed)
    model = Subclassed()
    model.compile(optimizer="sgd", loss="mse")
    return model


def two_in_two_out(seed=0):
    keras.utils.set_random_seed(seed)
    a = keras.Input((4,), name="a")
    b = keras.Input((2,), name="b")
    h = layers.Dense(3, name="h")(a)
    c = layers.Concatenate(name="cat")([h, b])
    reg = layers.Dense(1, name="reg")(c)
    cls = layers.Dense(2, activation="softmax", name="cls")(c)
    model = keras.Model({"a": a, "b": b}, {"reg": reg, "cls": cls}, name="two")
    model.compile(optimizer="sgd", loss={"reg": "mse", "cls": "sparse_categorical_crossentropy"},
                  metrics={"cls": ["accuracy"]})
    return model


def two_data(n=16, seed=0):
    rng = np.random.default_rng(seed)
    x = {"a": rng.normal(size=(n, 4)).astype("float32"), "b": rng.normal(size=(n, 2)).astype("float32")}
    y = {"reg": rng.normal(size=(n, 1)).astype("float32"), "cls": rng.integers(0, 2, size=(n,)).astype("int32")}
    return x, y
