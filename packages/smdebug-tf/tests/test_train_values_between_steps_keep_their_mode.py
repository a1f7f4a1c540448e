"""Probe 15c F4: in a custom loop whose training step marks no hook step (a ``tf.function`` step, no
``wrap_tape``), ``hook.save_scalar("train_loss", ...)`` after every batch in TRAIN mode was kept for "the next
step". That step was the next EVAL one (after ``set_mode(EVAL)``), so each epoch's last training loss became a
validation value and the epoch's other training losses were dropped. Each value saved between steps must stay
in a step of the mode it was saved in, and none may be lost.
"""

import numpy as np

import keras
import tensorflow as tf
from keras import layers

import smdebug.tensorflow as smd

from _separable_classes import CLASSES, separable_classes as _data


def test_train_scalars_saved_between_steps_are_train_steps_not_the_next_eval_step(tmp_path):
    out = str(tmp_path / "run")
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((8,)), layers.Dense(16, activation="relu"), layers.Dense(CLASSES)])
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    hook = smd.KerasHook(out, save_config=smd.SaveConfig(save_interval=1), include_collections=["losses"])
    hook.register_model(model)
    opt = hook.wrap_optimizer(keras.optimizers.Adam(1e-2))
    loss_fn = hook.register_loss(loss_fn)

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    x, y = _data(160, seed=1)
    xv, yv = _data(64, seed=2)
    train_losses, val_losses = [], []
    for _ in range(3):
        hook.set_mode(smd.modes.TRAIN)
        for xb, yb in tf.data.Dataset.from_tensor_slices((x, y)).batch(32):
            train_losses.append(float(train_step(xb, yb)))
            hook.save_scalar("train_loss", train_losses[-1])
        hook.set_mode(smd.modes.EVAL)
        val_losses.append(float(loss_fn(yv, model(xv, training=False))))
        hook.save_tensor("loss", np.float32(val_losses[-1]), "losses")
    hook.close()

    trial = smd.create_trial(out)
    train_loss = trial.tensor("scalar/train_loss")
    # every training loss, in order, each in a TRAIN step of its own: none dropped, none under EVAL
    assert train_loss.steps(mode=smd.modes.EVAL) == []
    train_steps = train_loss.steps(mode=smd.modes.TRAIN)
    assert len(train_steps) == len(train_losses) == 15
    assert [train_loss.value(s, mode=smd.modes.TRAIN).item() for s in train_steps] == \
        np.float32(train_losses).tolist()
    # the validation losses are the EVAL steps, one each, untouched
    assert trial.steps(mode=smd.modes.EVAL) == [0, 1, 2]
    assert [trial.tensor("loss").value(s, mode=smd.modes.EVAL).item() for s in range(3)] == \
        np.float32(val_losses).tolist()

