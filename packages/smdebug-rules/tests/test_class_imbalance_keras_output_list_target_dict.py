"""ClassImbalance pairs a Keras model's outputs with their targets when the outputs are a list and the targets a
dict by output name -- ``keras.Model(inp, [cls, reg])`` with ``loss={"cls": ..., "ink": ...}``, the documented
way -- through the losses the hook recorded: the run holds ``predictions_0`` and ``labels/cls``, which the names
alone never paired, so the misprediction test of the classification head never ran (probe 16b F5)."""

from __future__ import annotations

import pytest

from smdebug.rules import run_rules
from smdebug.rules.results import ISSUES, NO_ISSUES

from _tensorflow import tensorflow_one_thread  # noqa: E402

sklearn_datasets = pytest.importorskip("sklearn.datasets")


def two_headed_run(path):
    """Digits: a class head (sparse CE) and a regression head (the digit's ink, MSE), outputs as a list and
    targets as a dict, trained under ``KerasHook.recommended`` for 7 epochs of 23 batches: 161 steps, so the
    tapered schedule saves the last one (step 160) and the trained model's predictions are judged."""
    tensorflow_one_thread()
    keras = pytest.importorskip("keras")
    import smdebug.tensorflow as smd_tf

    keras.utils.set_random_seed(0)
    x, y = sklearn_datasets.load_digits(return_X_y=True)
    x = ((x - x.mean(axis=0)) / (x.std(axis=0) + 1e-6)).astype("float32")
    ink = x.sum(axis=1, keepdims=True).astype("float32")
    inp = keras.Input((64,))
    h = keras.layers.Dense(32, activation="relu")(inp)
    cls = keras.layers.Dense(10, activation="softmax", name="cls")(h)
    reg = keras.layers.Dense(1, name="ink")(h)
    model = keras.Model(inp, [cls, reg])
    model.compile("adam", loss={"cls": "sparse_categorical_crossentropy", "ink": "mse"})
    hook = smd_tf.KerasHook.recommended(str(path))
    model.fit(x, {"cls": y, "ink": ink}, epochs=7, batch_size=79, verbose=0, callbacks=[hook])
    hook.close()
    return str(path)


def test_the_class_heads_predictions_are_paired_with_its_labels(tmp_path):
    run = two_headed_run(tmp_path / "run")
    result = run_rules(run, rules=["ClassImbalance"], ended=True).rules[0]
    assert result.status in (NO_ISSUES, ISSUES), result
    # (the regression head's targets are no classes; the class head's misprediction test is reached)
    assert "no predictions were paired" not in (result.detail or ""), result.detail
    assert "was not reached" not in (result.detail or ""), result.detail
