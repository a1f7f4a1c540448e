"""TensorFlow for the rules' Keras tests: imported (or the test skipped), on one thread where that can still be set."""

from __future__ import annotations

import pytest


def tensorflow_one_thread():
    """TensorFlow, its thread pools set to one thread each unless an earlier test of this process already started
    its runtime (then they cannot be changed, and TensorFlow raises: the tests share a pytest-xdist worker)."""
    tf = pytest.importorskip("tensorflow")
    try:
        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    except RuntimeError:
        pass  # (already initialised by an earlier test in this process)
    return tf
