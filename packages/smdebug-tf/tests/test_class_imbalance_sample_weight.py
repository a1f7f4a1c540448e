"""Per-row weights of ``Model.fit`` (``sample_weight=...``, or a dataset of ``(x, y, w)``, the only way to weight a
``tf.data`` pipeline) are recorded in the run as each class's mean row weight (``_meta.class_weights``, as the
XGBoost hook records a DMatrix's row weights): ClassImbalance judges the weighted counts, so rows weighted to
compensate a rare class are no alarm, as ``class_weight`` is not (probe 14b F1)."""

import numpy as np
import pytest

import keras
import tensorflow as tf
from keras import layers

import smdebug.tensorflow as smd
from smdebug.core.class_weights import recorded_class_weights
from smdebug.rules import run_rules


def _imbalanced(n=1600, seed=0):
    """Two classes, 1 in 20 positive, separable by the first feature; each row weighted by the inverse of its
    class's frequency."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.05).astype("int64")
    x = rng.normal(size=(n, 6)).astype("float32")
    x[:, 0] += 3.0 * y
    w = np.where(y == 1, n / (2 * y.sum()), n / (2 * (n - y.sum()))).astype("float32")
    return x, y, w


def _fit(path, data):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((6,)), layers.Dense(8, activation="relu"), layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.Adam(1e-2),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    hook = smd.KerasHook.recommended(str(path))
    model.fit(*data["args"], epochs=3, verbose=0, callbacks=[hook], **data["kwargs"])
    hook.close()
    return str(path)


def _data(kind):
    x, y, w = _imbalanced()
    if kind == "sample_weight":
        return {"args": (x, y), "kwargs": {"sample_weight": w, "batch_size": 64}}
    return {"args": (tf.data.Dataset.from_tensor_slices((x, y, w)).batch(64),), "kwargs": {}}


@pytest.mark.parametrize("kind", ["sample_weight", "dataset"])
def test_row_weights_that_compensate_are_judged_as_weights(tmp_path, kind):
    path = _fit(tmp_path / kind, _data(kind))
    x, y, w = _imbalanced()
    [record] = recorded_class_weights(smd.create_trial(path))
    assert record.targets == "^labels$" and "sample weights" in record.source
    assert record.weights == pytest.approx({0: w[y == 0][0], 1: w[y == 1][0]}, rel=1e-5)
    r = run_rules(path, ["ClassImbalance"]).rules[0]
    assert r.error is None, r.error
    assert r.status == "NoIssuesFound", (r.status, r.detail, [f.reason for f in r.findings])
