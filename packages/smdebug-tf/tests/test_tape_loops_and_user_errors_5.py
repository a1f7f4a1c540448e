"""Probe 5b's faults of the TensorFlow hook, each for its class:

* D4: in a custom GradientTape loop, validation after ``hook.set_mode(smd.modes.EVAL)`` never became an EVAL
  step (only ``wrap_tape`` began steps, and the open TRAIN step took whatever was saved), so Overfit and
  Overtraining said "no validation" to a script that had set the mode.
* D3: the README's tape loop with ``KerasHook.recommended`` saved no inputs, labels or loss record, so the
  recommended rules could only say NotEvaluated: ``register_loss`` and the tape's model inputs fix that.
* H2: an error of the user's own training step (one-hot labels given to a sparse loss) was logged as
  smdebug's internal error and disabled the hook before Keras raised it.
"""

import logging

import numpy as np
import pytest

import keras
import tensorflow as tf
from keras import layers

import smdebug.tensorflow as smd
from smdebug.core.loss_inputs import recorded_losses
from smdebug.rules import run_rules

from _separable_classes import CLASSES, separable_classes as _data


def _model(output_activation=None):
    keras.utils.set_random_seed(0)
    return keras.Sequential([keras.Input((8,)), layers.Dense(16, activation="relu"),
                             layers.Dense(CLASSES, activation=output_activation)])


def _tape_loop(hook, model, loss_fn, epochs=6, eval_step=None, per_batch_eval=False):
    """The README's custom loop, with validation after set_mode(EVAL) saved by save_tensor. Returns the
    validation losses in the order they were saved."""
    x, y = _data(640, seed=1)
    xv, yv = _data(256, seed=2)
    opt = hook.wrap_optimizer(keras.optimizers.Adam(1e-2))
    eval_step = eval_step or (lambda a, b: loss_fn(b, model(a, training=False)))
    train = tf.data.Dataset.from_tensor_slices((x, y)).batch(32)
    val = tf.data.Dataset.from_tensor_slices((xv, yv)).batch(64 if per_batch_eval else 256)
    saved = []
    for _ in range(epochs):
        hook.set_mode(smd.modes.TRAIN)
        for xb, yb in train:
            with hook.wrap_tape(tf.GradientTape()) as tape:
                loss = loss_fn(yb, model(xb, training=True))
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
        hook.set_mode(smd.modes.EVAL)
        for xb, yb in val:
            val_loss = eval_step(xb, yb)
            hook.save_tensor("loss", val_loss, "losses")
            saved.append(float(val_loss))
    hook.close()
    return saved


@pytest.mark.parametrize("compiled", [True, False], ids=["tf_function_eval", "eager_eval"])
def test_validation_after_set_mode_eval_is_eval_steps_in_a_tape_loop(tmp_path, compiled):
    out = str(tmp_path / "run")
    model = _model()
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    hook = smd.KerasHook(out, save_config=smd.SaveConfig(save_interval=1), include_collections=["losses"])
    hook.register_model(model)
    eval_step = tf.function(lambda a, b: loss_fn(b, model(a, training=False))) if compiled else None
    saved = _tape_loop(hook, model, loss_fn, epochs=3, eval_step=eval_step)

    trial = smd.create_trial(out)
    assert trial.steps(mode=smd.modes.EVAL) == [0, 1, 2]  # one EVAL step per evaluation
    assert len(trial.steps(mode=smd.modes.TRAIN)) == 3 * 20  # the training steps are untouched
    loss = trial.tensor("loss")
    assert [float(loss.value(s, mode=smd.modes.EVAL)) for s in range(3)] == pytest.approx(saved, rel=1e-6)
    # the last training step of each epoch keeps its own (training) loss: the EVAL value did not land there
    last_train = trial.steps(mode=smd.modes.TRAIN)[19]
    assert float(loss.value(last_train, mode=smd.modes.TRAIN)) != pytest.approx(saved[0], rel=1e-6)


def test_per_batch_validation_is_one_eval_step_per_saved_loss(tmp_path):
    out = str(tmp_path / "run")
    model = _model()
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    hook = smd.KerasHook(out, save_config=smd.SaveConfig(save_interval=1), include_collections=["losses"])
    hook.register_model(model)
    saved = _tape_loop(hook, model, loss_fn, epochs=2, per_batch_eval=True)
    trial = smd.create_trial(out)
    assert trial.steps(mode=smd.modes.EVAL) == list(range(8))  # 2 passes x 4 batches
    got = [float(trial.tensor("loss").value(s, mode=smd.modes.EVAL)) for s in range(8)]
    assert got == pytest.approx(saved, rel=1e-6)


RECOMMENDED_ON_TAPE = ["UnnormalizedInput", "ImproperOutput", "ClassImbalance", "Overfit", "Overtraining"]


def test_the_readme_tape_loop_is_judged_by_the_recommended_rules(tmp_path):
    """Hook.recommended + register_loss + set_mode(EVAL) validation: every recommended rule judges the run
    (none NotEvaluated), the loss is recorded, and a healthy run has no issue."""
    out = str(tmp_path / "run")
    model = _model()
    hook = smd.KerasHook.recommended(out)
    hook.register_model(model)
    loss_fn = hook.register_loss(keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    saved = _tape_loop(hook, model, loss_fn)
    assert saved[-1] < 0.5 * saved[0]  # a healthy run

    trial = smd.create_trial(out)
    [loss] = recorded_losses(trial)
    assert (loss.type, loss.expects) == ("SparseCategoricalCrossentropy", "logits")
    step0 = trial.steps(mode=smd.modes.TRAIN)[0]
    x0 = trial.tensor("inputs").value(step0, mode=smd.modes.TRAIN)
    np.testing.assert_array_equal(x0, _data(640, seed=1)[0][:32])
    np.testing.assert_array_equal(trial.tensor("labels").value(step0, mode=smd.modes.TRAIN), _data(640, seed=1)[1][:32])
    assert trial.tensor("predictions").value(step0, mode=smd.modes.TRAIN).shape == (32, CLASSES)

    result = run_rules(out)
    by_name = {r.name: r for r in result.rules}
    assert not [r.name for r in result.rules if r.status in ("NotEvaluated", "Error")], \
        {r.name: r.detail for r in result.rules if r.status in ("NotEvaluated", "Error")}
    for name in RECOMMENDED_ON_TAPE:
        assert by_name[name].status == "NoIssuesFound", (name, by_name[name].detail)
    assert result.status == "NoIssuesFound"


def test_improper_output_judges_a_tape_loop_that_feeds_probabilities_to_a_from_logits_loss(tmp_path):
    out = str(tmp_path / "run")
    model = _model(output_activation="softmax")
    hook = smd.KerasHook.recommended(out)
    hook.register_model(model)
    loss_fn = hook.register_loss(keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    _tape_loop(hook, model, loss_fn, epochs=2)
    [r] = run_rules(out, ["ImproperOutput"]).rules
    assert r.status == "IssuesFound", r.detail


def test_register_loss_with_a_function_and_labels_saved_by_the_user(tmp_path):
    out = str(tmp_path / "run")
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((8,)), layers.Dense(1)])
    hook = smd.KerasHook(out, save_config=smd.SaveConfig(save_interval=1),
                         include_collections=["inputs", "labels", "predictions", "loss_inputs", "losses"])
    hook.register_model(model)
    mse = hook.register_loss(lambda y, p: tf.reduce_mean(tf.square(y - p)))
    assert recorded_losses(hook.collection_manager)[0].expects == "other"
    hook.register_loss("mse")  # a Keras loss name: replaces the record of the same name
    x, _ = _data(16, seed=3)
    y = x[:, :1] * 2.0
    with hook.wrap_tape(tf.GradientTape()) as tape:
        hook.save_tensor("labels", y, "labels")
        loss = mse(y, model(x))
    tape.gradient(loss, model.trainable_variables)
    hook.close()
    trial = smd.create_trial(out)
    [record] = recorded_losses(trial)
    assert (record.type, record.expects) == ("mse", "regression")
    np.testing.assert_array_equal(trial.tensor("labels").value(0), y)
    np.testing.assert_array_equal(trial.tensor("inputs").value(0), x)
    assert set(trial.tensor_names(collection="loss_inputs")) == {"labels", "predictions"}


def _one_hot_fit(model, hook, x, y):
    return model.fit(x, np.eye(CLASSES, dtype="float32")[y], batch_size=32, epochs=1, verbose=0, callbacks=[hook])


@pytest.mark.parametrize("due", [True, False], ids=["due_step", "quiet_step"])
def test_a_users_error_in_the_keras_step_propagates_unchanged_and_is_not_ours(tmp_path, caplog, due):
    out = str(tmp_path / "run")
    x, y = _data(128, seed=1)
    model = _model(output_activation="softmax")
    model.compile(keras.optimizers.Adam(1e-2), "sparse_categorical_crossentropy")
    save_config = smd.SaveConfig(save_interval=1) if due else smd.SaveConfig(save_steps=[500])
    hook = smd.KerasHook(out, save_config=save_config, include_collections=["gradients", "losses"])
    with caplog.at_level(logging.WARNING):
        with pytest.raises(ValueError, match="target.ndim - 1") as raised:
            _one_hot_fit(model, hook, x, y)
    assert raised.value.__context__ is None and raised.value.__cause__ is None
    assert not hook.disabled
    assert not [r for r in caplog.records if "smdebug" in r.getMessage() or r.name.startswith("smdebug")]
    assert not hasattr(model.train_function, "_smdebug_hook")  # Keras' function is back

    # the user fixes the labels and trains again with the same hook: it follows that fit
    model.compile(keras.optimizers.Adam(1e-2), "sparse_categorical_crossentropy")
    model.fit(x, y, batch_size=32, epochs=1, verbose=0, callbacks=[hook])
    hook.close()
    assert not hook.disabled
    if due:
        trial = smd.create_trial(out)
        assert trial.steps() == [1, 2, 3, 4]  # step 0 (ended by the error) saved nothing; the second fit
        assert [n for n in trial.tensor_names(step=trial.steps()[-1]) if n.startswith("gradients/")]


def test_a_label_out_of_range_at_run_time_propagates_and_is_not_ours(tmp_path, caplog):
    """An error of a TensorFlow op while the step runs (not while it traces) is the training's too."""
    out = str(tmp_path / "run")
    x, y = _data(64, seed=1)
    y = y.copy()
    y[5] = 9  # class 9 of 4
    model = _model()
    model.compile(keras.optimizers.Adam(1e-2), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    hook = smd.KerasHook(out, save_config=smd.SaveConfig(save_interval=1), include_collections=["gradients"])
    with caplog.at_level(logging.WARNING):
        with pytest.raises(tf.errors.InvalidArgumentError, match="label value of 9"):
            model.fit(x, y, batch_size=32, epochs=1, verbose=0, callbacks=[hook])
    assert not hook.disabled
    assert not [r for r in caplog.records if "internal error" in r.getMessage()]
    hook.close()


def test_a_failure_of_the_capture_itself_still_disables_the_hook_not_training(tmp_path, caplog):
    """Keras' own function runs the batch when capturing fails: if it succeeds, the failure was smdebug's."""
    out = str(tmp_path / "run")
    x, y = _data(128, seed=1)
    model = _model()
    model.compile(keras.optimizers.Adam(1e-2), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    hook = smd.KerasHook(out, save_config=smd.SaveConfig(save_interval=1), include_collections=["gradients"])

    def broken(*args, **kwargs):
        raise RuntimeError("boom in the capture")

    hook._capture_function = broken
    with caplog.at_level(logging.ERROR):
        history = model.fit(x, y, batch_size=32, epochs=1, verbose=0, callbacks=[hook])
    assert len(history.history["loss"]) == 1 and int(model.optimizer.iterations.numpy()) == 4
    assert hook.disabled and "boom in the capture" in hook._failure
    assert sum("smdebug hook disabled" in r.getMessage() for r in caplog.records) == 1
    hook.close()


def test_eval_mode_with_nothing_saved_says_what_is_missing(tmp_path, caplog):
    """The probe's loop set EVAL mode and computed a validation loss it never gave the hook: say so (once)."""
    out = str(tmp_path / "run")
    model = _model()
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    hook = smd.KerasHook(out, save_config=smd.SaveConfig(save_interval=1), include_collections=["losses"])
    hook.register_model(model)
    x, y = _data(64, seed=1)
    opt = keras.optimizers.SGD(0.1)
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            hook.set_mode(smd.modes.TRAIN)
            with hook.wrap_tape(tf.GradientTape()) as tape:
                loss = loss_fn(y, model(x, training=True))
            opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
            hook.set_mode(smd.modes.EVAL)
            float(loss_fn(y, model(x, training=False)))  # computed, never saved
    hook.close()
    said = [r.getMessage() for r in caplog.records if "EVAL mode was set but nothing was saved" in r.getMessage()]
    assert len(said) == 1 and 'hook.save_tensor("loss", val_loss, "losses")' in said[0]
    assert smd.create_trial(out).steps(mode=smd.modes.EVAL) == []
