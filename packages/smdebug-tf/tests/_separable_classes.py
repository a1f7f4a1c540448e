"""A small learnable classification set shared by the Keras loss tests (tape loops, custom train_step)."""

import numpy as np

CLASSES = 4


def separable_classes(n, seed):
    """Four separable classes: the class sets the mean of 8 features."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, CLASSES, n)
    centres = np.random.default_rng(0).normal(scale=2.0, size=(CLASSES, 8))
    return (centres[y] + rng.normal(scale=0.5, size=(n, 8))).astype("float32"), y.astype("int64")
