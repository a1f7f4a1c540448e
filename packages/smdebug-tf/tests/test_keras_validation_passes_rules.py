"""Overfit and Overtraining on a real Keras fit with validation data: Keras runs one EVAL step per validation
batch, and the hook saves the running mean of the pass so far at each (and ``val_loss`` at the pass's end).
One validation pass is one evaluation: a healthy fit whose validation loss falls pass after pass is no
overtraining, however many batches its validation set has."""

import numpy as np

import keras
from keras import layers

import smdebug.tensorflow as smd
from smdebug.rules import run_rules

RULES = ["Overfit", "Overtraining"]


def _data(n, seed):
    """Four separable classes: the class sets the mean of 8 features."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, n)
    centres = np.random.default_rng(0).normal(scale=2.0, size=(4, 8))
    return (centres[y] + rng.normal(scale=0.5, size=(n, 8))).astype("float32"), y.astype("int64")


def test_a_healthy_fit_with_15_validation_batches_is_no_overtraining(tmp_path):
    keras.utils.set_random_seed(0)
    x, y = _data(960, seed=1)
    xv, yv = _data(480, seed=2)  # 15 validation batches of 32
    model = keras.Sequential([keras.Input((8,)), layers.Dense(16, activation="relu"), layers.Dense(4)])
    model.compile(optimizer=keras.optimizers.Adam(1e-2),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    hook = smd.KerasHook.recommended(str(tmp_path))
    history = model.fit(x, y, batch_size=32, epochs=6, validation_data=(xv, yv), verbose=0, callbacks=[hook])
    hook.close()
    val = history.history["val_loss"]
    assert val[-1] < 0.5 * val[0] and all(b <= a * 1.05 for a, b in zip(val, val[1:]))  # healthy, converging

    trial = smd.create_trial(str(tmp_path))
    assert len(trial.steps(mode=smd.modes.EVAL)) == 6 * 15  # one EVAL step per validation batch
    assert len(trial.tensor("val_loss").steps(mode=smd.modes.EVAL)) == 6  # one per pass

    results = {r.name: r for r in run_rules(str(tmp_path), RULES).rules}
    for name in RULES:
        r = results[name]
        assert r.status == "NoIssuesFound", (name, r.detail, [f.reason for f in r.findings])
