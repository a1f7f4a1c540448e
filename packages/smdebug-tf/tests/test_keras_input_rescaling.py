"""A Keras model that rescales its own input: raw pixels (0-255, Keras' image idiom) into ``Rescaling(1/255)`` or an
adapted ``Normalization`` as the first layer. The hook records the map (``_meta.input_scaling``) and
CheckInputImages judges the input as the first convolution sees it: quiet, where it fired "mean of channel 0 is
47.79" on healthy runs (probe 18a F1); the same pixels into a model without the layer still fire."""

from __future__ import annotations

import numpy as np

import keras
from keras import layers

import smdebug.tensorflow as smd
from smdebug.core.input_scaling import recorded_input_scaling
from smdebug.rules import run_rules
from smdebug.rules.results import ISSUES, NO_ISSUES
from smdebug.trials import create_trial


def _pixels(n=640, seed=0):
    """Dark images (0-255) with a bright square in one of two corners: the class."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    x = rng.uniform(0, 60, (n, 12, 12, 3))
    for i, c in enumerate(y):
        x[i, :6, :6] += 150 if c == 0 else 0
        x[i, 6:, 6:] += 150 if c == 1 else 0
    return np.round(x).astype("uint8"), y


def _fit(path, head) -> str:
    keras.utils.set_random_seed(0)
    x, y = _pixels()
    model = keras.Sequential([keras.Input((12, 12, 3)), *head, layers.Conv2D(4, 3, activation="relu"),
                              layers.GlobalAveragePooling2D(), layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.Adam(1e-2),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    hook = smd.KerasHook.recommended(str(path))
    model.fit(x, y, batch_size=64, epochs=2, verbose=0, callbacks=[hook])
    hook.close()
    return str(path)


def _check_input_images(path):
    (r,) = [r for r in run_rules(path).rules if r.name == "CheckInputImages"]
    assert r.error is None, r.error
    return r


def test_rescaling_inside_the_model_is_recorded_and_judged(tmp_path):
    path = _fit(tmp_path / "rescaled", [keras.Sequential([layers.RandomFlip("horizontal")]),
                                        layers.Rescaling(1 / 255)])
    scaling = recorded_input_scaling(create_trial(path), "inputs")
    assert scaling is not None and scaling.scale == (1 / 255,) and scaling.offset == (0.0,), scaling
    assert "Rescaling" in scaling.describe()
    r = _check_input_images(path)
    assert r.status == NO_ISSUES, (r.status, r.detail, r.findings)
    assert "rescaled by the model's own Rescaling" in (r.detail or ""), r.detail


def test_an_adapted_normalization_is_recorded_per_channel(tmp_path):
    norm = layers.Normalization()
    norm.adapt(_pixels()[0].astype("float32"))
    path = _fit(tmp_path / "normalized", [norm])
    scaling = recorded_input_scaling(create_trial(path), "inputs")
    assert scaling is not None and len(scaling.scale) == 3, scaling
    assert _check_input_images(path).status == NO_ISSUES


def test_the_same_pixels_without_the_layer_still_fire(tmp_path):
    path = _fit(tmp_path / "raw", [])
    assert recorded_input_scaling(create_trial(path), "inputs") is None
    r = _check_input_images(path)
    assert r.status == ISSUES, (r.status, r.detail)
    assert "mean of channel" in r.findings[0].reason and "model's own" not in r.findings[0].reason
