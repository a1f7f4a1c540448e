"""The data the benchmark's runs train on: scikit-learn's bundled data sets (no download) and synthetic sets.

Every loader returns numpy arrays ``(x_train, y_train, x_valid, y_valid)`` split with a fixed seed, plus
nothing else; scenarios choose a loader by name and pass its keyword arguments, so the scenario table (not
the code) says what data a run sees. Preprocessing that a *bug* leaves out (standardising tabular features,
scaling images) is a keyword argument, so healthy and buggy runs share the loader.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Tuple

import numpy as np

Split = Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _split(x: np.ndarray, y: np.ndarray, valid_fraction: float, seed: int) -> Split:
    order = np.random.default_rng(seed).permutation(len(x))
    n_valid = int(round(len(x) * valid_fraction))
    valid, train = order[:n_valid], order[n_valid:]
    return x[train], y[train], x[valid], y[valid]


def _standardise(x_train: np.ndarray, *others: np.ndarray):
    mean, std = x_train.mean(axis=0), x_train.std(axis=0) + 1e-8
    return [(a - mean) / std for a in (x_train, *others)]


@lru_cache(maxsize=None)
def _sklearn(name: str):
    import sklearn.datasets as ds

    bunch = getattr(ds, f"load_{name}")()
    return bunch.data.astype(np.float32), bunch.target


def tabular(name: str, standardise: bool = True, seed: int = 0, valid_fraction: float = 0.25,
            train_size: int = 0, standardise_target: bool = True, as_float_target: bool = False) -> Split:
    """``breast_cancer``, ``wine``, ``iris`` (classification) or ``diabetes`` (regression; the target is
    standardised unless told otherwise). ``standardise=False`` feeds the raw features (the breast-cancer
    areas and the wine proline values are in the hundreds to thousands). ``train_size`` keeps only that
    many training rows (for runs that must overfit)."""
    x, y = _sklearn(name)
    x_train, y_train, x_valid, y_valid = _split(x, y, valid_fraction, seed)
    if train_size:
        x_train, y_train = x_train[:train_size], y_train[:train_size]
    if standardise:
        x_train, x_valid = _standardise(x_train, x_valid)
    if name == "diabetes":
        y_train, y_valid = y_train.astype(np.float32), y_valid.astype(np.float32)
        if standardise_target:
            mean, std = y_train.mean(), y_train.std()
            y_train, y_valid = (y_train - mean) / std, (y_valid - mean) / std
    elif as_float_target:
        y_train, y_valid = y_train.astype(np.float32), y_valid.astype(np.float32)
    else:
        y_train, y_valid = y_train.astype(np.int64), y_valid.astype(np.int64)
    return x_train.astype(np.float32), y_train, x_valid.astype(np.float32), y_valid


def digits(scaling: str = "standard", seed: int = 0, valid_fraction: float = 0.25, train_size: int = 0,
           flat: bool = False, classes: int = 10, minority_keep: float = 1.0) -> Split:
    """scikit-learn's 8x8 digits (pixel values 0-16) as (N, 1, 8, 8) images, or (N, 64) with ``flat``.

    ``scaling``: ``standard`` (mean 0, std 1 over the training pixels), ``minus_one_one`` (x / 8 - 1, the
    common Normalize(0.5, 0.5): mostly -1 background, legitimately not zero-mean), ``unit`` (x / 16),
    ``raw`` (0-16, forgotten scaling) or ``bytes`` (0-255, 8-bit pixels never scaled).
    ``minority_keep`` < 1 keeps only that share of the training images of every class but 0 (a class
    imbalance)."""
    x, y = _sklearn("digits")
    keep = y < classes
    x, y = x[keep], y[keep]
    x_train, y_train, x_valid, y_valid = _split(x, y, valid_fraction, seed)
    if minority_keep < 1.0:
        rng = np.random.default_rng(seed + 1)
        kept = (y_train == 0) | (rng.random(len(y_train)) < minority_keep)
        x_train, y_train = x_train[kept], y_train[kept]
    if train_size:
        x_train, y_train = x_train[:train_size], y_train[:train_size]
    if scaling == "standard":
        mean, std = x_train.mean(), x_train.std()
        x_train, x_valid = (x_train - mean) / std, (x_valid - mean) / std
    elif scaling == "minus_one_one":
        x_train, x_valid = x_train / 8 - 1, x_valid / 8 - 1
    elif scaling == "unit":
        x_train, x_valid = x_train / 16, x_valid / 16
    elif scaling == "bytes":
        x_train, x_valid = np.round(x_train * 255 / 16), np.round(x_valid * 255 / 16)
    elif scaling != "raw":
        raise ValueError(f"unknown scaling {scaling!r}")
    shape = (-1, 64) if flat else (-1, 1, 8, 8)
    return (x_train.reshape(shape).astype(np.float32), y_train.astype(np.int64),
            x_valid.reshape(shape).astype(np.float32), y_valid.astype(np.int64))


def blobs(n: int = 2000, features: int = 20, classes: int = 4, seed: int = 0, label_noise: float = 0.0,
          imbalance: float = 1.0, feature_scale: float = 1.0, informative: int = 6,
          valid_fraction: float = 0.25) -> Split:
    """A synthetic classification set: the class is the arg-max of random projections of the first
    ``informative`` features plus a smaller nonlinear term (learnable to a small loss by an MLP). ``imbalance`` < 1 keeps that share of every
    class but 0; ``label_noise`` relabels that share of the rows at random; ``feature_scale`` multiplies
    every feature by a per-feature scale drawn log-uniformly in [1, feature_scale] (unnormalised tabular
    data, e.g. incomes next to ages)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, features)).astype(np.float32)
    w = rng.normal(size=(informative, classes))
    w2 = rng.normal(size=(informative, classes))
    proj = x[:, :informative] @ w
    logits = 2.0 * proj + 0.5 * np.sin(2.0 * (x[:, :informative] @ w2))
    y = logits.argmax(axis=1)
    if imbalance < 1.0:
        keep = (y == 0) | (rng.random(n) < imbalance)
        x, y = x[keep], y[keep]
    if label_noise:
        flip = rng.random(len(y)) < label_noise
        y = np.where(flip, rng.integers(0, classes, len(y)), y)
    if feature_scale != 1.0:
        scales = np.exp(rng.uniform(0, np.log(feature_scale), size=features)).astype(np.float32)
        offsets = (scales * rng.uniform(0.5, 2.0, size=features)).astype(np.float32)
        x = x * scales + offsets  # positive-valued, like amounts and counts
    return _split(x.astype(np.float32), y.astype(np.int64), valid_fraction, seed)


def regression(n: int = 2000, features: int = 8, seed: int = 0, noise: float = 0.1,
               valid_fraction: float = 0.25) -> Split:
    """y = a linear plus a smooth nonlinear function of x, plus noise; standardised."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, features)).astype(np.float32)
    w, w2 = rng.normal(size=features), rng.normal(size=features)
    y = x @ w / np.sqrt(features) + 0.5 * np.sin(x @ w2 / np.sqrt(features) * 2) + noise * rng.normal(size=n)
    y = ((y - y.mean()) / y.std()).astype(np.float32)
    return _split(x, y, valid_fraction, seed)


def sequences(n: int = 2000, length: int = 20, features: int = 4, seed: int = 0, input_scale: float = 1.0,
              valid_fraction: float = 0.25) -> Split:
    """Binary sequence classification: is the running sum of feature 0 ever above a level? (needs memory of
    the whole sequence). ``input_scale`` scales the inputs (unnormalised sensor readings)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, length, features)).astype(np.float32)
    y = (np.cumsum(x[:, :, 0], axis=1).max(axis=1) > 3.0).astype(np.int64)
    return _split(x * np.float32(input_scale), y, valid_fraction, seed)


def tokens(n: int = 2000, length: int = 24, vocab: int = 200, classes: int = 3, seed: int = 0,
           valid_fraction: float = 0.25) -> Split:
    """Bag-of-words text classification: each class has its own preferred words; sequences are padded
    with token 0 to ``length`` (variable lengths 8-24, so padding is common and legitimate)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, n)
    x = np.zeros((n, length), dtype=np.int64)
    for i in range(n):
        size = rng.integers(8, length + 1)
        topical = rng.random(size) < 0.4
        own = rng.integers(1 + y[i] * 20, 1 + (y[i] + 1) * 20, size)
        common = rng.integers(1 + classes * 20, vocab, size)
        x[i, :size] = np.where(topical, own, common)
    return _split(x, y.astype(np.int64), valid_fraction, seed)


LOADERS = {"tabular": tabular, "digits": digits, "blobs": blobs, "regression": regression,
           "sequences": sequences, "tokens": tokens}


def load(spec: dict) -> Split:
    """``{"loader": "digits", "scaling": "raw", ...}`` -> the split."""
    args = dict(spec)
    return LOADERS[args.pop("loader")](**args)
