"""Step-time overhead of KerasHook under model.fit() (compiled, the Keras default) for a small CNN.

    .nox/tf/bin/python packages/smdebug-tf/benchmarks/keras_overhead.py [--rounds 9] [--steps 500]

Configurations, each with its own model (same initial weights) and its own hook for the whole run:
no hook (twice: the second copy shows how far two identical runs differ on this machine); the
default config (losses and metrics every 500 steps); weights, gradients and layer
outputs included but never due (the cost of a step that saves nothing); weights+gradients every 10 steps; weights+gradients every step. Each round runs
one ``fit`` of ``--steps`` batches per configuration, in rotating order, after one warm-up fit each
(tracing); the best round is reported (the machine is shared: rounds are noisy), with the
median; a hooked block includes ``hook.flush()`` (waiting for its files). Prints a Markdown table.
"""

import argparse
import os
import shutil
import statistics
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)

import keras  # noqa: E402

import smdebug.tensorflow as smd  # noqa: E402


def cnn():
    keras.utils.set_random_seed(0)
    model = keras.Sequential([
        keras.Input((28, 28, 1)),
        keras.layers.Conv2D(8, 3, activation="relu", name="conv1"),
        keras.layers.MaxPooling2D(name="pool1"),
        keras.layers.Conv2D(16, 3, activation="relu", name="conv2"),
        keras.layers.MaxPooling2D(name="pool2"),
        keras.layers.Flatten(name="flat"),
        keras.layers.Dense(32, activation="relu", name="fc1"),
        keras.layers.Dense(10, name="fc2"),
    ], name="cnn")
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    return model


CONFIGS = {
    "no hook": None,
    "no hook, a second model (noise control)": None,
    "default (losses+metrics every 500 steps)": dict(),
    "weights+gradients+layers included, never due": dict(
        save_config=smd.SaveConfig(save_interval=10 ** 9, start_step=1),
        include_collections=["weights", "gradients", "layers"]),
    "weights+gradients every 10 steps": dict(
        save_config=smd.SaveConfig(save_interval=10), include_collections=["weights", "gradients"]),
    "weights+gradients every step": dict(
        save_config=smd.SaveConfig(save_interval=1), include_collections=["weights", "gradients"]),
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    x = rng.normal(size=(args.steps * args.batch, 28, 28, 1)).astype("float32")
    y = rng.integers(0, 10, size=(args.steps * args.batch,))
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(args.batch).cache()
    root = tempfile.mkdtemp(prefix="smdebug-tf-bench-")
    runs = {}
    for i, (name, kwargs) in enumerate(CONFIGS.items()):
        model = cnn()
        hook = None if kwargs is None else smd.KerasHook(os.path.join(root, str(i)), **kwargs)
        callbacks = [] if hook is None else [hook]
        model.fit(dataset, epochs=1, verbose=0, callbacks=callbacks)  # warm-up: tracing
        runs[name] = (model, hook, callbacks)
    times = {name: [] for name in CONFIGS}
    names = list(CONFIGS)
    for r in range(args.rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            model, hook, callbacks = runs[name]
            start = time.perf_counter()
            model.fit(dataset, epochs=1, verbose=0, callbacks=callbacks)
            if hook is not None:
                hook.flush()
            times[name].append((time.perf_counter() - start) / args.steps * 1000)
    sizes = {}
    for i, (name, (model, hook, _)) in enumerate(runs.items()):
        if hook is not None:
            hook.close()
            path = os.path.join(root, str(i))
            sizes[name] = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs) / 1e6
    shutil.rmtree(root, ignore_errors=True)
    base = min(times["no hook"])
    print(f"TensorFlow {tf.__version__}, Keras {keras.__version__}, CNN 28x28x1 batch {args.batch}, "
          f"{args.rounds} rounds x {args.steps} steps, 1 intra-op thread")
    print()
    print("| configuration | ms/step, best round | vs no hook | median round | output MB |")
    print("|---|---:|---:|---:|---:|")
    for name in CONFIGS:
        best, median = min(times[name]), statistics.median(times[name])
        rel = "-" if name == "no hook" else f"{(best / base - 1) * 100:+.1f}%"
        print(f"| {name} | {best:.3f} | {rel} | {median:.3f} | {sizes.get(name, 0):.1f} |")
    print()
    print(f"Hook work on a step that is not due (batch-begin callback + step-function wrapper, measured "
          f"alone over 20,000 steps): {not_due_us():.1f} us/step")


def not_due_us(steps=20_000):
    """The Python the hook adds to a step that saves nothing, without the model's own step."""
    root = tempfile.mkdtemp(prefix="smdebug-tf-bench-")
    model = cnn()
    hook = smd.KerasHook(os.path.join(root, "x"), save_config=smd.SaveConfig(save_interval=10 ** 9, start_step=1),
                         include_collections=["weights", "gradients", "layers"])
    model.train_function = lambda iterator: None  # Keras' step replaced by nothing: only the hook is timed
    hook.set_model(model)
    hook.on_train_begin()
    hook.on_train_batch_begin(0)
    model.train_function(None)
    start = time.perf_counter()
    for i in range(1, steps + 1):
        hook.on_train_batch_begin(i)
        model.train_function(None)
    elapsed = time.perf_counter() - start
    hook.on_train_end()
    hook.close()
    shutil.rmtree(root, ignore_errors=True)
    return elapsed / steps * 1e6


if __name__ == "__main__":
    main()
