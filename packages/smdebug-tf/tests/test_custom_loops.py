"""Custom training loops: wrap_tape, wrap_optimizer, register_model, save_scalar/save_tensor; and
SessionHook with tf.compat.v1.train.MonitoredSession."""

import numpy as np
import pytest

import keras
import tensorflow as tf

import models
import smdebug.tensorflow as smd
from smdebug.core.stop_signal import write_stop_signal
from smdebug.exceptions import TrainingStopRequested

MLP_VARS = ["mlp/dense/kernel", "mlp/dense/bias", "mlp/out/kernel", "mlp/out/bias"]


def tape_loop(hook, model, opt, x, y, steps, register=True):
    if register:
        hook.register_model(model)
    losses = []
    for i in range(steps):
        xb, yb = x[i * 8:(i + 1) * 8], y[i * 8:(i + 1) * 8]
        with hook.wrap_tape(tf.GradientTape()) as tape:
            loss = tf.reduce_mean(tf.square(model(xb, training=True) - yb))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        hook.save_scalar("lr", 0.1)
        losses.append(float(loss))
    return losses


def test_gradient_tape_loop(out_dir):
    x, y = models.data()
    model = models.dense(compile=False)
    initial = model.get_weights()
    hook = smd.KerasHook(out_dir, save_config=smd.SaveConfig(save_interval=2),
                         include_collections=["weights", "biases", "gradients", "losses", "layers",
                                              "optimizer_variables", "predictions"])
    opt = hook.wrap_optimizer(keras.optimizers.SGD(0.1))
    hook.get_collection("custom").include("^my_")
    hook.save_tensor("my_tensor", np.arange(3), "custom")
    losses = tape_loop(hook, model, opt, x, y, 4)
    hook.close()

    trial = smd.create_trial(out_dir)
    assert trial.steps() == [0, 1, 2, 3]  # scalars are saved at every step
    assert trial.steps(mode=smd.modes.TRAIN) == [0, 1, 2, 3]
    for name in ["gradients/" + v for v in MLP_VARS] + MLP_VARS + ["loss", "mlp/dense/outputs", "predictions"]:
        assert trial.tensor(name).steps() == [0, 2], name
    assert trial.tensor("scalar/lr").steps() == [0, 1, 2, 3]
    assert trial.tensor("my_tensor").steps() == [0]
    np.testing.assert_array_equal(trial.tensor("my_tensor").value(0), [0, 1, 2])
    assert [n.split("/", 1)[1] for n in trial.tensor_names(collection="optimizer_variables")] == \
        ["iteration", "learning_rate"]
    np.testing.assert_allclose(trial.tensor("loss").value(0), losses[0], rtol=1e-6)
    for name, w in zip(MLP_VARS, initial):
        np.testing.assert_array_equal(trial.tensor(name).value(0), w)
    # the saved gradient is the one the optimizer applied: w1 = w0 - 0.1 * g0
    w1 = initial[2] - 0.1 * trial.tensor("gradients/mlp/out/kernel").value(0)
    w2_saved = trial.tensor("mlp/out/kernel").value(2)
    assert not np.allclose(w1, initial[2])
    # step 1's update is not saved, but step 2's weights follow from step 1's gradient
    model_check = models.dense(compile=False)
    model_check.set_weights(initial)
    opt2 = keras.optimizers.SGD(0.1)
    for i in range(2):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model_check(x[i * 8:(i + 1) * 8]) - y[i * 8:(i + 1) * 8]))
        opt2.apply_gradients(zip(tape.gradient(loss, model_check.trainable_variables), model_check.trainable_variables))
    np.testing.assert_allclose(w2_saved, model_check.get_weights()[2], rtol=1e-5, atol=1e-6)


def test_tape_without_registered_model_and_optimizer_gradients(out_dir):
    x, y = models.data()
    model = models.dense(compile=False)
    hook = smd.KerasHook(out_dir, save_config=smd.SaveConfig(save_interval=1),
                         include_collections=["weights", "gradients", "layers"])
    opt = hook.wrap_optimizer(keras.optimizers.SGD(0.1))
    # gradients reach the optimizer without wrap_tape: the wrapped optimizer saves them
    hook.set_mode(smd.modes.TRAIN)
    for i in range(2):
        hook.begin_step()
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x[:8]) - y[:8]))
        opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        hook.end_step()
    with hook.wrap_tape(tf.GradientTape()) as tape:  # no register_model: layers named by their path
        loss = tf.reduce_mean(tf.square(model(x[:8]) - y[:8]))
    tape.gradient(loss, model.trainable_variables)
    hook.close()
    trial = smd.create_trial(out_dir)
    assert trial.tensor("gradients/mlp/out/kernel").steps() == [0, 1, 2]
    assert trial.tensor("mlp/out/kernel").steps() == [2]  # the tape's sources, as weights
    assert "mlp/dense/outputs" in trial.tensor_names(step=2)


def test_stop_signal_raises_out_of_a_tape_loop(out_dir, monkeypatch):
    monkeypatch.setenv("SMDEBUG_STOP_CHECK_INTERVAL", "0")
    x, y = models.data()
    model = models.dense(compile=False)
    hook = smd.KerasHook(out_dir, save_config=smd.SaveConfig(save_interval=1), include_collections=["losses"])
    opt = keras.optimizers.SGD(0.1)
    done = 0
    with pytest.raises(TrainingStopRequested):
        for i in range(4):
            if i == 2:
                write_stop_signal(out_dir, "ExplodingTensor", 1, "too big")
            with hook.wrap_tape(tf.GradientTape()) as tape:
                loss = tf.reduce_mean(tf.square(model(x[:8]) - y[:8]))
            opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
            done += 1
    assert done == 2 and hook.stop_requested
    trial = smd.create_trial(out_dir)
    assert trial.steps() == [0, 1] and trial.loaded_all_steps is not None


def _linear_graph(hook, x, y, optimizer):
    xp = tf.compat.v1.placeholder(tf.float32, [None, 4], name="x")
    yp = tf.compat.v1.placeholder(tf.float32, [None, 1], name="y")
    w = tf.compat.v1.get_variable("dense/kernel", initializer=np.full((4, 1), 0.5, np.float32))
    b = tf.compat.v1.get_variable("dense/bias", initializer=np.zeros(1, np.float32))
    pred = tf.identity(tf.matmul(xp, w) + b, name="prediction")
    loss = tf.compat.v1.losses.mean_squared_error(yp, pred)
    opt = hook.wrap_optimizer(optimizer)
    train_op = opt.minimize(loss, global_step=tf.compat.v1.train.get_or_create_global_step())
    return xp, yp, train_op


def test_session_hook_with_monitored_session(out_dir):
    x, y = models.data()
    hook = smd.SessionHook(out_dir, save_config=smd.SaveConfig(save_interval=2), include_regex=["^prediction$"],
                           include_collections=["weights", "biases", "gradients", "losses", "optimizer_variables"])
    assert smd.EstimatorHook is smd.SessionHook
    with tf.Graph().as_default():
        xp, yp, train_op = _linear_graph(hook, x, y, tf.compat.v1.train.MomentumOptimizer(0.1, 0.9))
        with tf.compat.v1.train.MonitoredSession(hooks=[hook]) as sess:
            for i in range(4):
                sess.run(train_op, feed_dict={xp: x[i * 8:(i + 1) * 8], yp: y[i * 8:(i + 1) * 8]})
            sess.run(train_op, feed_dict={xp: x[:8], yp: y[:8]})
    hook.close()
    trial = smd.create_trial(out_dir)
    assert trial.steps() == [0, 2, 4]
    assert trial.tensor_names(collection="weights") == ["dense/kernel"]
    assert trial.tensor_names(collection="biases") == ["dense/bias"]
    assert trial.tensor_names(collection="gradients") == ["gradients/dense/bias", "gradients/dense/kernel"]
    assert trial.tensor_names(collection="optimizer_variables") == ["dense/bias/Momentum", "dense/kernel/Momentum"]
    assert trial.tensor_names(collection="losses") == ["mean_squared_error/value"]
    assert "prediction" in trial.tensor_names(step=0)
    # step 0: weights before the first update, the MSE gradient by hand
    w0 = trial.tensor("dense/kernel").value(0)
    np.testing.assert_array_equal(w0, np.full((4, 1), 0.5, np.float32))
    xb, yb = x[:8], y[:8]
    err = xb @ w0 - yb
    np.testing.assert_allclose(trial.tensor("gradients/dense/kernel").value(0), 2 * xb.T @ err / len(xb), rtol=1e-5)
    np.testing.assert_allclose(trial.tensor("mean_squared_error/value").value(0), np.mean(err ** 2), rtol=1e-5)
    np.testing.assert_allclose(trial.tensor("prediction").value(2), x[16:24] @ trial.tensor("dense/kernel").value(2)
                               + trial.tensor("dense/bias").value(2), rtol=1e-5)


def test_session_hook_stop_signal_requests_stop(out_dir, monkeypatch):
    monkeypatch.setenv("SMDEBUG_STOP_CHECK_INTERVAL", "0")
    x, y = models.data()
    hook = smd.SessionHook(out_dir, save_config=smd.SaveConfig(save_interval=1))
    runs = 0
    with tf.Graph().as_default():
        xp, yp, train_op = _linear_graph(hook, x, y, tf.compat.v1.train.GradientDescentOptimizer(0.1))
        with tf.compat.v1.train.MonitoredSession(hooks=[hook]) as sess:
            while not sess.should_stop():
                if runs == 3:
                    write_stop_signal(out_dir, "LossNotDecreasing", 2, "flat")
                sess.run(train_op, feed_dict={xp: x[:8], yp: y[:8]})
                runs += 1
                assert runs < 20
    assert runs == 4 and hook.stop_requested
    hook.close()
    assert smd.create_trial(out_dir).steps() == [0, 1, 2, 3]


def test_wrapped_tape_passes_for_a_tape_and_can_be_rebuilt_like_horovod_does(out_dir):
    """``hvd.DistributedGradientTape(tape)`` after the ``with`` block makes a subclass of ``tape.__class__``
    and builds it from ``tape._tape``, ``_persistent`` and ``_watch_accessed_variables``. A wrapped tape must
    allow that (it used to crash), and the optimizer wrapper still sees the gradients applied."""
    x, y = models.data()
    model = models.dense(compile=False)
    hook = smd.KerasHook(out_dir, save_config=smd.SaveConfig(save_interval=1),
                         include_collections=["gradients", "losses"])
    hook.register_model(model)
    opt = hook.wrap_optimizer(keras.optimizers.SGD(0.1))
    with hook.wrap_tape(tf.GradientTape()) as tape:
        loss = tf.reduce_mean(tf.square(model(x[:8], training=True) - y[:8]))
    assert isinstance(tape, tf.GradientTape)

    class Rebuilt(tape.__class__):  # what Horovod does, with its allreduce left out
        def __init__(self, inner, persistent, watch_accessed_variables):
            super().__init__(persistent, watch_accessed_variables)
            self._tape = inner

    rebuilt = Rebuilt(tape._tape, tape._persistent, tape._watch_accessed_variables)
    grads = rebuilt.gradient(loss, model.trainable_variables)
    assert all(g is not None for g in grads)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    hook.close()
    trial = smd.create_trial(out_dir)
    np.testing.assert_allclose(trial.tensor("gradients/mlp/out/kernel").value(0), grads[2].numpy(), rtol=1e-6)
