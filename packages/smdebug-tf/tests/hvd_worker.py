"""One Horovod worker (started by horovodrun) for test_horovod.py: a small Keras 3 MLP trained data-parallel
with horovod.tensorflow and the smdebug KerasHook in a custom GradientTape loop; prints what it computed as
JSON.

Keras 3 notes, with Horovod 0.28.1's Python side as published: horovod.tensorflow calls ``.ref()`` and
``.assign()`` on what it is given, which Keras 3 variables (not tf.Variable subclasses) do not have, so it
gets their backing tf.Variables (``v.value``); horovod's Keras wrappers (``hvd.DistributedOptimizer`` etc.)
do not work with Keras 3, so the gradients are averaged by ``hvd.DistributedGradientTape``.
"""

import argparse
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import horovod.tensorflow as hvd  # noqa: E402
import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import smdebug.tensorflow as smd  # noqa: E402
from smdebug.tensorflow.plugin import smdebug_detect_worker  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("out_dir")
parser.add_argument("--include-workers", default="all")
parser.add_argument("--steps", type=int, default=5)
args = parser.parse_args()

hvd.init()
rank = hvd.rank()
# What this plugin answers (Horovod's API, not the launcher's HOROVOD_RANK variable, which the core
# would fall back to): the test checks it is Horovod's rank.
detected = smdebug_detect_worker("tensorflow")

# A different seed per rank: the weights start equal only because rank 0's are broadcast.
keras.utils.set_random_seed(rank)
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu", name="hidden"),
                          keras.layers.Dense(1, name="out")], name="mlp")
hvd.broadcast_variables([v.value for v in model.variables], root_rank=0)
optimizer = keras.optimizers.SGD(0.1)
hook = smd.KerasHook(args.out_dir, save_config=smd.SaveConfig(save_interval=1), include_workers=args.include_workers,
                     include_collections=["weights", "biases", "gradients", "losses"])
hook.register_model(model)

rng = np.random.default_rng(100 + rank)  # each worker its own shard of data
x = rng.normal(size=(16, 4)).astype("float32")
y = rng.normal(size=(16, 1)).astype("float32")
losses, local_grads = [], []
for step in range(args.steps):
    # Horovod's tape goes inside the hook's wrapper (wrapped before it is entered): tape.gradient then
    # returns, and the hook saves, the gradients averaged over the workers.
    with hook.wrap_tape(hvd.DistributedGradientTape(tf.GradientTape())) as tape:
        loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
    grads = tape.gradient(loss, [v.value for v in model.trainable_variables])
    # This worker's own gradient of the output kernel, for the test to average.
    with tf.GradientTape() as plain:
        own_loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
    local_grads.append(plain.gradient(own_loss, model.get_layer("out").kernel.value).numpy().tolist())
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    losses.append(float(loss))
hook.close()
print(json.dumps({"rank": rank, "size": hvd.size(), "worker": hook.worker, "num_workers": hook.num_workers,
                  "detected": [detected.rank, detected.size] if detected else None,
                  "losses": losses, "local_grads": local_grads}), flush=True)
