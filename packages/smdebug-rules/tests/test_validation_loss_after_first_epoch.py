"""LossNotDecreasing on a Keras validation loss (probe 9, F2), judged on real training.

Keras saves ``val_loss`` at evaluation steps only, so the rule followed it in GLOBAL mode and took it for a training
loss; and its first value comes after a whole epoch of training, so "progress since the first save" says nothing
about whether the model learned. A noisy regression whose validation loss reached its floor within a few epochs and
then rose 8% (within Overfit's 10% tolerance, Overfit quiet) read "val_loss did not decrease ... progress below
min_progress_percent". Such a rise is Overfit's to judge; a validation loss back above its first evaluation still
fires here, in the words of a metric past its best."""

from __future__ import annotations

import numpy as np
import pytest

from smdebug.rules.results import ISSUES, NO_ISSUES

from _judging import judged  # noqa: E402
from _tensorflow import tensorflow_one_thread  # noqa: E402


def noisy_regression(path, noise: float, epochs: int):
    """A 64-64 ReLU MLP on 340 rows of a linear target with Gaussian noise (standardised), validated on 100; Adam
    at 3e-3: it fits the signal within a few epochs, then the noise. Returns the validation losses per epoch."""
    tensorflow_one_thread()
    keras = pytest.importorskip("keras")
    import smdebug.tensorflow as smd_tf

    keras.utils.set_random_seed(0)
    g = np.random.default_rng(0)
    x = g.standard_normal((440, 10)).astype("float32")
    y = (x[:, 0] + 0.5 * x[:, 1] + noise * g.standard_normal(440)).astype("float32")
    y = (y - y.mean()) / y.std()
    model = keras.Sequential([keras.Input((10,)), keras.layers.Dense(64, activation="relu"),
                              keras.layers.Dense(64, activation="relu"), keras.layers.Dense(1)])
    model.compile(keras.optimizers.Adam(0.003), "mse")
    hook = smd_tf.KerasHook.recommended(str(path))
    history = model.fit(x[:340], y[:340], validation_data=(x[340:], y[340:]), epochs=epochs, batch_size=32,
                        verbose=0, callbacks=[hook])
    hook.close()
    return history.history["val_loss"]


def test_a_validation_loss_that_rose_a_little_past_an_early_best_is_left_to_overfit(tmp_path):
    val = noisy_regression(tmp_path / "run", noise=1.0, epochs=15)
    best = min(val)
    assert val.index(best) < 8 and best < val[-1] < min(1.1 * best, val[0]), val  # the shape this test is about
    assert judged(tmp_path / "run", "Overfit").status == NO_ISSUES
    r = judged(tmp_path / "run", "LossNotDecreasing")
    assert r.status == NO_ISSUES, [f.reason for f in r.findings]


def test_a_validation_loss_back_above_its_first_evaluation_still_fires(tmp_path):
    val = noisy_regression(tmp_path / "run", noise=1.5, epochs=20)
    assert val[-1] > val[0] > min(val), val
    r = judged(tmp_path / "run", "LossNotDecreasing")
    assert r.status == ISSUES and "val_loss rose past its best" in r.findings[0].reason, (r.status, r.detail)
