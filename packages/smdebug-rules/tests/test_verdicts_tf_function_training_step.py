"""A TensorFlow custom loop whose training step is a ``tf.function`` (the TF guide's way) with a wrapped
optimizer saves none of its training steps' gradients, weights or loss inputs: the hook sees the optimizer and
the loss only while the function is traced, says so while it trains and records it (``_meta.traced_only``).
The rules that found nothing to judge say why, with what to do, instead of only "looked for collection
'gradients' -> none" (probe 15c F3); ImproperOutput speaks of how the Keras hook saves a loss's inputs, not of
a Hugging Face Trainer or smdebug-torch (probe 15c F9: a Keras loss is recorded under the name "loss", as a
PyTorch model's own loss is)."""

import numpy as np

from smdebug.rules.results import NOT_EVALUATED

from _judging import judged
from _tensorflow import tensorflow_one_thread


def _tf_function_loop(out):
    tf = tensorflow_one_thread()
    import keras

    import smdebug.tensorflow as smd

    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(128, 8)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(2)])
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    hook = smd.KerasHook.recommended(out)
    hook.register_model(model)
    hook.register_loss(loss_fn)
    opt = hook.wrap_optimizer(keras.optimizers.Adam(1e-2))

    @tf.function
    def train_step(xb, yb):
        with tf.GradientTape() as tape:
            loss = loss_fn(yb, model(xb, training=True))
        opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        return loss

    for _ in range(2):
        hook.set_mode(smd.modes.TRAIN)
        for xb, yb in tf.data.Dataset.from_tensor_slices((x, y)).batch(32):
            hook.save_scalar("train_loss", float(train_step(xb, yb)))
        hook.set_mode(smd.modes.EVAL)
        hook.save_tensor("loss", loss_fn(y, model(x, training=False)), "losses")
    hook.close()


def test_the_unsaved_loss_inputs_of_a_tensorflow_loop_are_said_in_tensorflow_terms(tmp_path):
    _tf_function_loop(str(tmp_path / "run"))
    r = judged(tmp_path / "run", "ImproperOutput")
    assert r.status == NOT_EVALUATED, (r.status, r.detail)
    assert "Hugging Face" not in r.detail and "smdebug-torch" not in r.detail, r.detail
    assert "hook.wrap_tape(tf.GradientTape())" in r.detail and "@tf.function" in r.detail, r.detail


def test_rules_that_found_no_gradients_say_the_step_ran_in_a_tf_function(tmp_path):
    _tf_function_loop(str(tmp_path / "run"))
    for name in ("VanishingGradient", "WeightUpdateRatio"):
        r = judged(tmp_path / "run", name)
        assert r.status == NOT_EVALUATED, (name, r.status, r.detail)
        assert ("the optimizer given to wrap_optimizer() ran inside a tf.function, seen by the hook only while it "
                "was traced" in r.detail and "model.fit(" in r.detail), r.detail
