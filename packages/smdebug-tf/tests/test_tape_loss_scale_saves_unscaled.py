"""Probe 15c F2: a ``wrap_tape`` loop under mixed precision, written the Keras 3 way (``LossScaleOptimizer``,
``scaled = opt.scale_loss(loss)`` inside the tape, ``tape.gradient(scaled, ...)``, ``apply_gradients``), saved the
tape's target and gradients as they were: the loss and gradients multiplied by the loss scale (32768 at first,
then changing as the scale grows or halves). The run must hold them unscaled, as ``fit`` saves them.
"""

import numpy as np

import keras
import tensorflow as tf
from keras import layers

import smdebug.tensorflow as smd

from _separable_classes import CLASSES, separable_classes as _data


def _run(out, dtype, loss_scale):
    """Three steps of the same model from the same weights, in float32 or mixed_float16 (with a wrapped
    LossScaleOptimizer); returns the trial."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((8,)), layers.Dense(16, activation="relu", dtype=dtype, name="hidden"),
                              layers.Dense(CLASSES, dtype=dtype, name="logits"),
                              layers.Activation("linear", dtype="float32", name="to_float32")], name="net")
    hook = smd.KerasHook(out, save_config=smd.SaveConfig(save_interval=1),
                         include_collections=["losses", "gradients"])
    hook.register_model(model)
    opt = keras.optimizers.SGD(1e-2)
    if loss_scale:
        opt = keras.optimizers.LossScaleOptimizer(opt, dynamic_growth_steps=2)  # (the scale changes: x2 every 2)
    opt = hook.wrap_optimizer(opt)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    x, y = _data(96, seed=1)
    hook.set_mode(smd.modes.TRAIN)
    for xb, yb in tf.data.Dataset.from_tensor_slices((x, y)).batch(32):
        with hook.wrap_tape(tf.GradientTape()) as tape:
            loss = loss_fn(yb, model(xb, training=True))
            target = opt.scale_loss(loss) if loss_scale else loss
        grads = tape.gradient(target, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
    hook.close()
    return smd.create_trial(out)


def test_a_loss_scaled_tape_step_saves_the_loss_and_gradients_unscaled(tmp_path):
    plain = _run(str(tmp_path / "float32"), "float32", loss_scale=False)
    mixed = _run(str(tmp_path / "mixed"), "mixed_float16", loss_scale=True)
    steps = plain.steps(mode=smd.modes.TRAIN)
    assert steps == mixed.steps(mode=smd.modes.TRAIN) == [0, 1, 2]
    names = plain.tensor_names(collection="gradients")
    assert len(names) == 4 and sorted(names) == sorted(mixed.tensor_names(collection="gradients"))
    for step in steps:  # (the float16 forward pass differs from float32 by ~1e-3: a scale would be x32768)
        want = plain.tensor("loss").value(step, mode=smd.modes.TRAIN)
        got = mixed.tensor("loss").value(step, mode=smd.modes.TRAIN)
        np.testing.assert_allclose(got, want, rtol=2e-2)
        for name in names:
            want = plain.tensor(name).value(step, mode=smd.modes.TRAIN)
            got = mixed.tensor(name).value(step, mode=smd.modes.TRAIN)
            assert got.dtype == np.float32
            np.testing.assert_allclose(got, want, rtol=5e-2, atol=2e-3 * np.abs(want).max())
