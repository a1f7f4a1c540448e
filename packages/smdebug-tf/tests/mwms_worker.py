"""One worker of a two-process MultiWorkerMirroredStrategy job (TF_CONFIG set by the test).

Keras 3.15's own ``fit`` fails under MultiWorkerMirroredStrategy on this CPU setup, hook or not
("Attempt to convert a value (PerReplica...)" while building the model), so the workers train with an
eager GradientTape loop on their shard; the cluster is still formed by the strategy.
"""

import sys

import tensorflow as tf

import models
import smdebug.tensorflow as smd

out_dir = sys.argv[1]
strategy = tf.distribute.MultiWorkerMirroredStrategy()
task = strategy.cluster_resolver.task_id
x, y = models.data()
model = models.dense(compile=False)
optimizer = tf.keras.optimizers.SGD(0.1)
hook = smd.KerasHook(out_dir, save_config=smd.SaveConfig(save_interval=2), include_workers="all",
                     include_collections=["weights", "gradients", "losses"])
hook.register_model(model)
for step in range(3):
    xb, yb = x[task * 16 + step * 4: task * 16 + (step + 1) * 4], y[task * 16 + step * 4: task * 16 + (step + 1) * 4]
    with hook.wrap_tape(tf.GradientTape()) as tape:
        loss = tf.reduce_mean(tf.square(model(xb) - yb))
    grads = tape.gradient(loss, model.trainable_variables)
    # the workers agree on the update: the mean of their gradients
    grads = [strategy.reduce("MEAN", strategy.run(lambda g=g: tf.identity(g)), axis=None) for g in grads]
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
hook.close()
print("worker done", hook.worker, hook.num_workers)
