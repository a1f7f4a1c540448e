"""Probe 15c F3: a GradientTape loop whose training step is a ``tf.function`` (the TF guide's way) with a wrapped
optimizer saved nothing of its training steps (the wrapper's Python code runs only while the function is traced)
and said nothing: the run's rules were NotEvaluated with no hint why. The hook now says it once, as training
starts, with what to do, and records it in the run (``_meta.traced_only``). A registered model whose weights
change while the hook begins no training step (trained where the hook does not look) is said too.
"""

import logging

import keras
import tensorflow as tf
from keras import layers

import smdebug.tensorflow as smd
from smdebug.tensorflow.keras import TRACED_ONLY_META_KEY

from _separable_classes import CLASSES, separable_classes as _data

_SAID = "inside a tf.function"
_UNSEEN = "trained where the hook does not look"


def _train(out, compiled, wrapped=True):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((8,)), layers.Dense(16, activation="relu"), layers.Dense(CLASSES)])
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    hook = smd.KerasHook(out, save_config=smd.SaveConfig(save_interval=1), include_collections=["gradients"])
    hook.register_model(model)
    opt = keras.optimizers.Adam(1e-2)
    if wrapped:
        opt = hook.wrap_optimizer(opt)

    def train_step(x, y, tape):
        with tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))

    if compiled:
        step = tf.function(lambda x, y: train_step(x, y, tf.GradientTape()))
    else:
        step = lambda x, y: train_step(x, y, hook.wrap_tape(tf.GradientTape()) if wrapped  # noqa: E731
                                       else tf.GradientTape())
    x, y = _data(128, seed=1)
    xv, yv = _data(64, seed=2)
    for _ in range(2):
        hook.set_mode(smd.modes.TRAIN)
        for xb, yb in tf.data.Dataset.from_tensor_slices((x, y)).batch(32):
            step(xb, yb)
        hook.set_mode(smd.modes.EVAL)  # (the validation loss, saved as the README says: the run has EVAL steps)
        hook.save_tensor("loss", loss_fn(yv, model(xv, training=False)), "losses")
    hook.close()
    return smd.create_trial(out)


def test_a_wrapped_optimizer_in_a_tf_function_step_is_said_once_and_recorded(tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        trial = _train(str(tmp_path / "run"), compiled=True)
    said = [r.getMessage() for r in caplog.records if _SAID in r.getMessage()]
    assert len(said) == 1, said  # once, not at each of the 8 steps
    assert "wrap_optimizer" in said[0] and "fit" in said[0] and "wrap_tape" in said[0]
    assert not [r for r in caplog.records if _UNSEEN in r.getMessage()]  # (the cause is said already)
    assert trial.collection_manager.meta.get(TRACED_ONLY_META_KEY) == ["wrap_optimizer"]


def test_an_eager_step_is_not_said(tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        trial = _train(str(tmp_path / "run"), compiled=False)
    assert not [r for r in caplog.records if _SAID in r.getMessage() or _UNSEEN in r.getMessage()]
    assert TRACED_ONLY_META_KEY not in trial.collection_manager.meta
    assert len(trial.steps(mode=smd.modes.TRAIN)) == 8 and trial.tensor_names(collection="gradients")


def test_a_model_trained_by_a_loop_the_hook_does_not_see_is_said_once(tmp_path, caplog):
    """An eager loop with neither the tape nor the optimizer given to the hook: only the weights tell."""
    with caplog.at_level(logging.WARNING):
        trial = _train(str(tmp_path / "run"), compiled=False, wrapped=False)
    said = [r.getMessage() for r in caplog.records if _UNSEEN in r.getMessage()]
    assert len(said) == 1, said
    assert "wrap_tape" in said[0] and "fit" in said[0] and "save_scalar" in said[0]
    assert trial.steps(mode=smd.modes.TRAIN) == [] and len(trial.steps(mode=smd.modes.EVAL)) == 2
