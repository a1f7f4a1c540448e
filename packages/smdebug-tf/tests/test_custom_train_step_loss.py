"""A subclassed Keras model whose custom ``train_step``/``test_step`` computes its loss by hand
(``self.loss_fn(y, pred)``) under ``model.fit``/``evaluate``: the hook records that loss (class, ``from_logits``)
and saves what it was given as ``predictions``/``labels``, as it does for a compiled loss.

Probe 8 (F5): such a run recorded no loss, so ImproperOutput was NotEvaluated ("no loss module is registered")
on a healthy run (exit 3) and missed raw logits fed to ``SparseCategoricalCrossentropy(from_logits=False)``.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf
from keras import layers

import smdebug.tensorflow as smd
from smdebug.core.loss_inputs import recorded_losses
from smdebug.rules import run_rules

from _separable_classes import CLASSES, separable_classes as _data


class HandLossModel(keras.Model):
    """Logits out; ``train_step``/``test_step`` compute ``self.loss_fn`` themselves.

    ``feed``: what the loss gets: ``"logits"`` (the model's output), ``"softmax"`` (``tf.nn.softmax`` of it,
    taken inside the step), ``"aux_first"`` (an auxiliary MSE on hidden features against zeros is called
    before the main loss), ``"compute_loss"`` (Keras' ``compute_loss``: the compiled loss).
    """

    def __init__(self, from_logits=True, feed="logits"):
        super().__init__()
        self.hidden = layers.Dense(16, activation="relu")
        self.head = layers.Dense(CLASSES)
        self.feed = feed
        self.loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=from_logits)
        self.aux_fn = keras.losses.MeanSquaredError()
        self.tracker = keras.metrics.Mean(name="loss")

    def call(self, x, training=False):
        return self.head(self.hidden(x))

    def _loss(self, x, y, training):
        if self.feed == "compute_loss":
            pred = self(x, training=training)
            return self.compute_loss(x, y, pred, training=training)
        if self.feed == "aux_first":
            h = self.hidden(x)
            aux = self.aux_fn(tf.zeros_like(h), h)
            pred = self.head(h)
            return self.loss_fn(y, pred) + 1e-4 * aux
        pred = self(x, training=training)
        return self.loss_fn(y, tf.nn.softmax(pred) if self.feed == "softmax" else pred)

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            loss = self._loss(x, y, True)
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        self.tracker.update_state(loss)
        return {"loss": self.tracker.result()}

    def test_step(self, data):
        x, y = data
        self.tracker.update_state(self._loss(x, y, False))
        return {"loss": self.tracker.result()}

    @property
    def metrics(self):
        return [self.tracker]


def _fit(out, epochs=6, register=False, compile_loss=None, **model_kwargs):
    keras.utils.set_random_seed(0)
    model = HandLossModel(**model_kwargs)
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss=compile_loss)
    hook = smd.KerasHook.recommended(out)
    if register:
        model.loss_fn = hook.register_loss(model.loss_fn)
    x, y = _data(640, seed=1)
    xv, yv = _data(256, seed=2)
    history = model.fit(x, y, validation_data=(xv, yv), epochs=epochs, batch_size=32, verbose=0, callbacks=[hook])
    hook.close()
    return model, history.history


def test_a_healthy_custom_train_step_is_judged_by_improper_output(tmp_path):
    out = str(tmp_path / "run")
    _, history = _fit(out)
    assert history["val_loss"][-1] < 0.3 * history["val_loss"][0]  # a healthy run
    assert keras.losses.Loss.__call__ is keras.losses.Loss.__dict__["__call__"]
    assert "smdebug" not in keras.losses.Loss.__call__.__module__  # put back after the trace

    trial = smd.create_trial(out)
    [loss] = recorded_losses(trial)
    assert (loss.name, loss.type, loss.expects) == ("loss", "SparseCategoricalCrossentropy", "logits")
    for mode in (smd.modes.TRAIN, smd.modes.EVAL):  # train_step and test_step
        step = trial.steps(mode=mode)[0]
        assert trial.tensor("predictions").value(step, mode=mode).shape[1:] == (CLASSES,)
        assert trial.tensor("labels").value(step, mode=mode).dtype.kind in "iu"
    result = run_rules(out)
    by_name = {r.name: r for r in result.rules}
    assert by_name["ImproperOutput"].status == "NoIssuesFound", by_name["ImproperOutput"].detail
    # the healthy run: no rule fires and none lacks data (it was NotEvaluated, exit 3)
    assert not [r.name for r in result.rules if r.status in ("NotEvaluated", "IssuesFound")], \
        {r.name: (r.status, r.detail) for r in result.rules if r.status in ("NotEvaluated", "IssuesFound")}


def test_raw_logits_into_a_probability_loss_in_a_custom_train_step_are_caught(tmp_path):
    out = str(tmp_path / "run")
    _fit(out, epochs=3, from_logits=False)
    [loss] = recorded_losses(smd.create_trial(out))
    assert loss.expects == "probabilities"
    [r] = run_rules(out, ["ImproperOutput"]).rules
    assert r.status == "IssuesFound", r.detail
    reason = r.first_finding.reason
    assert "expects probabilities" in reason and "its input predictions" in reason, reason


def test_what_the_loss_is_given_is_judged_not_the_model_output(tmp_path):
    """The step applies softmax to the logits before a from_logits=False loss (healthy): the saved predictions
    are the loss's input (rows summing to 1), not the model's logits, which would read as raw scores."""
    out = str(tmp_path / "run")
    _fit(out, epochs=3, from_logits=False, feed="softmax")
    trial = smd.create_trial(out)
    p = trial.tensor("predictions").value(trial.steps(mode=smd.modes.TRAIN)[0], mode=smd.modes.TRAIN)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-5)
    [r] = run_rules(out, ["ImproperOutput"]).rules
    assert r.status == "NoIssuesFound", r.detail


def test_a_loss_on_neither_the_labels_nor_the_model_output_is_not_taken_for_the_model_loss(tmp_path):
    """An auxiliary MSE on hidden features (against zeros) is called first: the recorded loss is the one on the
    batch's labels."""
    out = str(tmp_path / "run")
    _fit(out, epochs=2, feed="aux_first")
    trial = smd.create_trial(out)
    [loss] = recorded_losses(trial)
    assert (loss.type, loss.expects) == ("SparseCategoricalCrossentropy", "logits")
    step = trial.steps(mode=smd.modes.TRAIN)[0]
    assert trial.tensor("predictions").value(step, mode=smd.modes.TRAIN).shape[1:] == (CLASSES,)


@pytest.mark.parametrize("how", ["compiled", "registered"])
def test_a_compiled_or_registered_loss_is_recorded_once(tmp_path, how):
    out = str(tmp_path / "run")
    if how == "compiled":
        _fit(out, epochs=2, feed="compute_loss",
             compile_loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    else:
        _fit(out, epochs=2, register=True)
    [loss] = recorded_losses(smd.create_trial(out))
    assert (loss.name, loss.type, loss.expects) == ("loss", "SparseCategoricalCrossentropy", "logits")
    [r] = run_rules(out, ["ImproperOutput"]).rules
    assert r.status == "NoIssuesFound", r.detail


def test_evaluate_alone_records_the_loss_of_a_custom_test_step(tmp_path):
    out = str(tmp_path / "run")
    keras.utils.set_random_seed(0)
    model = HandLossModel()
    model.compile(optimizer="adam")
    xv, yv = _data(256, seed=2)
    hook = smd.KerasHook(out, save_config=smd.SaveConfig(save_interval=1),
                         include_collections=["predictions", "labels", "loss_inputs", "losses"])
    model.evaluate(xv, yv, batch_size=64, verbose=0, callbacks=[hook])
    hook.close()
    trial = smd.create_trial(out)
    [loss] = recorded_losses(trial)
    assert loss.type == "SparseCategoricalCrossentropy"
    np.testing.assert_array_equal(trial.tensor("labels").value(0, mode=smd.modes.EVAL), yv[:64])
