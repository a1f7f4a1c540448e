"""ImproperOutput on an output that is one value at every save: a Keras regression head ``Dense(1,
activation="softmax")`` (a softmax over a single unit is 1 whatever it is given, and passes no gradient back).
The finding says the output is constant, not that a sigmoid or tanh squashes it (probe 12b W2); a bounded output
that does vary keeps the sigmoid/tanh words (test_rule_generalisation2)."""

from __future__ import annotations

import numpy as np
import pytest

from smdebug.rules.results import ISSUES

from _judging import judged  # noqa: E402
from _tensorflow import tensorflow_one_thread  # noqa: E402


def _fit(path, activation: str, loss: str = "mse"):
    """A small Keras net (3 epochs of 10 batches) whose one output has ``activation``: a regression on targets
    around 3 (outside [0, 1]), or with ``loss="binary_crossentropy"`` a binary classifier (Keras computes that loss
    from the logits a softmax kept, so with Dense(1, softmax) the loss falls while the output is 1 for every row)."""
    tensorflow_one_thread()
    keras = pytest.importorskip("keras")
    import smdebug.tensorflow as smd_tf

    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(320, 6)).astype("float32")
    if loss == "mse":
        y = (3.0 + x @ rng.normal(size=(6, 1))).astype("float32")
    else:
        y = (x[:, 0] + 0.5 * x[:, 1] > 0).astype("float32")
    model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(16, activation="relu"),
                              keras.layers.Dense(1, activation=activation)])
    model.compile(keras.optimizers.Adam(1e-2), loss)
    hook = smd_tf.KerasHook.recommended(str(path))
    model.fit(x, y, batch_size=32, epochs=3, verbose=0, callbacks=[hook])
    hook.close()


def test_a_softmax_over_one_unit_is_said_to_be_constant(tmp_path):
    _fit(tmp_path / "run", "softmax")
    r = judged(tmp_path / "run", "ImproperOutput")
    assert r.status == ISSUES, (r.status, r.detail)
    reason = r.findings[0].reason
    assert "was 1 at every save" in reason and "a softmax over a single unit is always 1" in reason, reason
    assert "sigmoid, tanh" not in reason, reason



def test_a_classifier_whose_output_is_one_value_is_a_finding(tmp_path):
    _fit(tmp_path / "run", "softmax", "binary_crossentropy")
    r = judged(tmp_path / "run", "ImproperOutput")
    assert r.status == ISSUES, (r.status, r.detail)
    reason = r.findings[0].reason
    assert "was 1 at every save" in reason and "cannot tell the classes apart" in reason, reason


def test_a_sigmoid_classifier_is_not(tmp_path):
    _fit(tmp_path / "run", "sigmoid", "binary_crossentropy")
    r = judged(tmp_path / "run", "ImproperOutput")
    assert r.status != ISSUES, r.findings[0].reason
