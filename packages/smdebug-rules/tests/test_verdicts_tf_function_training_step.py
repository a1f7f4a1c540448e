"""A TensorFlow custom loop whose training step is a ``tf.function`` (the TF guide's way) with a wrapped
optimizer saves none of its training steps' gradients or weights: the hook sees the optimizer only while the
function is traced, says so while it trains and records it (``_meta.traced_only``). The rules that found
nothing to judge say why, with what to do, instead of only "looked for collection 'gradients' -> none"
(probe 15c F3)."""

import numpy as np

from smdebug.rules.runner import run_rules

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
    hook = smd.KerasHook(out, save_config=smd.SaveConfig(save_interval=1),
                         include_collections=["gradients", "weights", "losses"])
    hook.register_model(model)
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
            hook.save_scalar("train_loss", float(train_step(xb, yb)))  # (what the README says can be saved)
        hook.set_mode(smd.modes.EVAL)
        hook.save_tensor("loss", loss_fn(y, model(x, training=False)), "losses")
    hook.close()


def test_rules_that_found_no_gradients_say_the_step_ran_in_a_tf_function(tmp_path):
    _tf_function_loop(str(tmp_path / "run"))
    result = run_rules(str(tmp_path / "run"), ["VanishingGradient", "WeightUpdateRatio"])
    for rule in result.rules:
        assert rule.status == "NotEvaluated", (rule.name, rule.status, rule.detail)
        assert ("the optimizer given to wrap_optimizer() ran inside a tf.function, seen by the hook only while it "
                "was traced" in rule.detail and "model.fit(" in rule.detail), rule.detail
