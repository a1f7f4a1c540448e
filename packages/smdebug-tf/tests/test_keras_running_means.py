"""Keras's training logs are running means: the loss and metrics of a batch in ``fit`` are the means over the
epoch so far, reset as each epoch begins. The hook saves them as Keras gives them and records in the run where
the means restarted (``_meta.running_means``), so that the curve rules read each save as the mean of the batches
since the one before it: a heavy-tailed loss's running mean jumps at every epoch's start, and OscillatingLoss,
which measures noise within blocks of saves, read those jumps as swings on healthy runs."""

import numpy as np

import keras
from keras import layers

import smdebug.tensorflow as smd
from smdebug.core.running_means import resets_of, steps_mean
from smdebug.rules import run_rules

BATCH, BATCHES, EPOCHS = 20, 5, 3


def _poisson_data(n, seed):
    """Counts whose rate grows with the first feature: a few rows of each epoch have counts of 20-60."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype("float32")
    return x, rng.poisson(np.exp(1.3 * x[:, :1])).astype("float32")


def _model():
    return keras.Sequential([keras.Input((4,)), layers.Dense(16, activation="relu"),
                             layers.Dense(1, activation="exponential")])


def test_fit_records_where_its_running_means_restart_and_the_batches_losses_are_recovered(tmp_path):
    keras.utils.set_random_seed(0)
    x, y = _poisson_data(BATCH * BATCHES, seed=1)
    model = _model()
    # a learning rate of 0: the weights stay put, so each batch's loss can be computed apart from the fit
    model.compile(optimizer=keras.optimizers.SGD(0.0), loss="poisson", metrics=["mae"])
    hook = smd.KerasHook.recommended(str(tmp_path))
    model.fit(x, y, batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0, callbacks=[hook])
    hook.close()

    trial = smd.create_trial(str(tmp_path))
    train = smd.modes.TRAIN
    restarts = resets_of(trial, "loss", "TRAIN")
    assert restarts.steps == [BATCHES * e for e in range(EPOCHS)] and restarts.upto == BATCHES * EPOCHS - 1
    assert resets_of(trial, "mae", "TRAIN") == restarts
    assert resets_of(trial, "loss", "EVAL") is None

    saved = trial.tensor("loss")
    steps = saved.steps(mode=train)
    assert steps == list(range(BATCHES * EPOCHS))
    loss_fn = keras.losses.Poisson()
    expected = [float(loss_fn(y[i * BATCH:(i + 1) * BATCH], model(x[i * BATCH:(i + 1) * BATCH])))
                for i in range(BATCHES)] * EPOCHS
    resets, previous, recovered = resets_of(trial, "loss", "TRAIN"), None, []
    for s in steps:
        value = float(saved.value(s, mode=train))
        recovered.append(steps_mean(resets, s, value, previous))
        previous = {"step": s, "value": value}
    np.testing.assert_allclose(recovered, expected, rtol=1e-4, atol=1e-5)
    # (the saved values themselves are the running means: not the batches' losses after an epoch's first batch)
    assert not np.allclose([float(saved.value(s, mode=train)) for s in steps[1:BATCHES]], expected[1:BATCHES])


def test_a_train_step_of_the_scripts_own_is_not_recorded_as_running_means(tmp_path):
    class OwnStep(keras.Model):
        def train_step(self, data):  # returns the batch's own loss, as many custom steps do
            x, y = data
            import tensorflow as tf

            with tf.GradientTape() as tape:
                loss = keras.losses.poisson(y, self(x, training=True))
                loss = tf.reduce_mean(loss)
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
            return {"loss": loss}

    keras.utils.set_random_seed(0)
    x, y = _poisson_data(BATCH * BATCHES, seed=1)
    inputs = keras.Input((4,))
    model = OwnStep(inputs, _model()(inputs))
    model.compile(optimizer="adam", loss="poisson")
    hook = smd.KerasHook.recommended(str(tmp_path))
    model.fit(x, y, batch_size=BATCH, epochs=2, verbose=0, callbacks=[hook])
    hook.close()
    trial = smd.create_trial(str(tmp_path))
    assert trial.tensor("loss").steps(mode=smd.modes.TRAIN)
    assert resets_of(trial, "loss", "TRAIN") is None


def test_a_healthy_poisson_regression_is_no_oscillating_loss(tmp_path):
    """A heavy-tailed loss (counts up to ~60): its running mean jumps as each epoch begins. Judged on the
    running means as saved, OscillatingLoss fired on such runs (the jumps, against the tiny spread of a smooth
    mean within a block, counted as swings)."""
    keras.utils.set_random_seed(0)
    x, y = _poisson_data(2000, seed=2)
    xv, yv = _poisson_data(200, seed=3)
    model = _model()
    model.compile(optimizer=keras.optimizers.Adam(2e-3), loss="poisson")
    hook = smd.KerasHook.recommended(str(tmp_path))
    history = model.fit(x, y, batch_size=32, epochs=12, validation_data=(xv, yv), verbose=0, callbacks=[hook])
    hook.close()
    loss = history.history["loss"]
    assert loss[-1] < loss[0] - 0.2 and history.history["val_loss"][-1] < history.history["val_loss"][0]  # learns

    result = run_rules(str(tmp_path), ["OscillatingLoss", "LossNotDecreasing", "Divergence"])
    for r in result.rules:
        assert r.status == "NoIssuesFound", (r.name, r.detail, [f.reason for f in r.findings])
