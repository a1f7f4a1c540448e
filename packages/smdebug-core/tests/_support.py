"""Shared pieces of the core tests: a minimal framework-neutral hook, as a plugin author would write one."""

from __future__ import annotations

import os

import numpy as np

from smdebug.core.collection import Collection
from smdebug.core.hook import BaseHook


class WorkerInfo:
    def __init__(self, rank, size):
        self.rank, self.size, self.name = rank, size, f"worker_{rank}"


class NumpyHook(BaseHook):
    """A hook for hand-written numpy training loops (what smdebug-core alone supports)."""

    framework_name = "numpy-test"
    default_include_collections = ("losses",)

    def default_collections(self):
        return [
            Collection("weights", include_regex=["^weights/"]),
            Collection("biases", include_regex=["^biases/"]),
            Collection("gradients", include_regex=["^gradient/"]),
            Collection("losses", include_regex=["loss"]),
        ]

    def _detect_worker(self):
        # Tests run real multi-process jobs; rank and size come from the launcher's environment.
        if "SMDEBUG_TEST_RANK" in os.environ:
            return WorkerInfo(int(os.environ["SMDEBUG_TEST_RANK"]), int(os.environ["SMDEBUG_TEST_WORLD_SIZE"]))
        return WorkerInfo(0, 1)


def train_logistic_regression(hook, steps=10, seed=0, mode=None, lr=0.5, on_step=None):
    """Train a real logistic regression on synthetic data, recording weights, gradients and loss.

    Returns the list of (step, weights, gradient, loss) actually computed, for comparison.
    """
    from smdebug.core.modes import ModeKeys

    rng = np.random.default_rng(seed)
    x = rng.normal(size=(64, 4)).astype(np.float32)
    true_w = np.array([1.5, -2.0, 0.5, 0.0], dtype=np.float32)
    y = (x @ true_w + 0.1 * rng.normal(size=64) > 0).astype(np.float32)
    w = np.zeros(4, dtype=np.float32)
    b = np.zeros(1, dtype=np.float32)
    history = []
    if mode is not None:
        hook.set_mode(mode)
    for step in range(steps):
        hook.begin_step()
        hook.record("weights/w", w)
        hook.record("biases/b", b)
        p = 1 / (1 + np.exp(-(x @ w + b)))
        loss = np.float32(-np.mean(y * np.log(p + 1e-7) + (1 - y) * np.log(1 - p + 1e-7)))
        gw = (x.T @ (p - y) / len(y)).astype(np.float32)
        gb = np.array([np.mean(p - y)], dtype=np.float32)
        hook.record("gradient/weights/w", gw)
        hook.record("gradient/biases/b", gb)
        hook.record("loss", np.array([loss], dtype=np.float32))
        history.append((step, w.copy(), gw.copy(), loss))
        if mode is None or mode == ModeKeys.TRAIN or mode == ModeKeys.GLOBAL:
            w -= lr * gw  # in place: the hook must have taken a snapshot
            b -= lr * gb
        if on_step is not None:
            on_step(step)
        hook.end_step()
    return history


def write_run(root, steps, workers=("worker_0",), num_workers=None, mode_of=None, tensors=None, end=True,
              skip=None):
    """Write a run with the real writers, step by step, for reader scenarios (local or S3).

    ``mode_of(step) -> (mode, mode_step)``; ``tensors(step, worker) -> {name: array}``;
    ``skip(step, worker) -> bool`` leaves a step out for a worker.
    """
    from smdebug.core.collection import Collection
    from smdebug.core.collection_manager import CollectionManager
    from smdebug.core.locations import END_OF_JOB_FILE, collections_file_name
    from smdebug.core.modes import ModeKeys
    from smdebug.core.storage.base import Storage
    from smdebug.core.storage.factory import get_storage
    from smdebug.core.tfevent.step_writer import StepWriter

    # ``root``: a local path, an s3:// path, a Storage, or a test RunLocation (has .storage)
    storage = getattr(root, "storage", root)
    if not isinstance(storage, Storage):
        storage = get_storage(str(root))
    cm = CollectionManager()
    cm.add(Collection("weights", include_regex=["^w"]))
    cm.set_num_workers(num_workers or len(workers))
    for w in workers:
        storage.write_atomic(collections_file_name(w), cm.dumps().encode())
    for step in steps:
        mode, mode_step = mode_of(step) if mode_of else (ModeKeys.GLOBAL, step)
        for w in workers:
            if skip and skip(step, w):
                continue
            sw = StepWriter(storage, step, w, mode, mode_step)
            values = tensors(step, w) if tensors else {"w": np.full(3, step, np.float32)}
            for name, arr in values.items():
                sw.write_tensor(name, arr, mode, mode_step)
            sw.close()
    if end:
        storage.write_atomic(END_OF_JOB_FILE, b"")
    return storage
