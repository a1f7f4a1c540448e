"""Data for the held-out runs (rows ``hh_``/``bh_`` of scenarios.py): more tasks than data.py, still nothing
downloaded -- scikit-learn's bundled sets and its generators, or numpy.

Each loader returns ``(x_train, y_train, x_valid, y_valid)`` like data.py's (which these reuse where they
can), so the held-out trainers take a data spec the same way: ``{"loader": "multilabel", ...}``.
"""

from __future__ import annotations

from typing import Tuple

import numpy as np

from . import data as base

Split = Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def multilabel(n: int = 2000, features: int = 16, labels: int = 5, seed: int = 0,
               valid_fraction: float = 0.25) -> Split:
    """Multi-label classification: each of ``labels`` binary targets is a noisy threshold of its own random
    projection of the features (several labels can be on at once; each is on in 20-50% of the rows)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, features)).astype(np.float32)
    w = rng.normal(size=(features, labels))
    scores = x @ w / np.sqrt(features) + 0.3 * rng.normal(size=(n, labels))
    cut = np.quantile(scores, rng.uniform(0.5, 0.8, size=labels), axis=0).diagonal()
    y = (scores > cut).astype(np.float32)
    return base._split(x, y, valid_fraction, seed)


def friedman(n: int = 1500, noise: float = 0.5, seed: int = 0, valid_fraction: float = 0.25,
             standardise_target: bool = True) -> Split:
    """scikit-learn's Friedman #1 regression (generated: 10 features in [0, 1], 5 of them informative)."""
    from sklearn.datasets import make_friedman1

    x, y = make_friedman1(n_samples=n, noise=noise, random_state=seed)
    x, y = x.astype(np.float32), y.astype(np.float32)
    if standardise_target:
        y = (y - y.mean()) / y.std()
    return base._split(x, y, valid_fraction, seed)


def wine(standardise: bool = True, seed: int = 0, minority_keep: float = 1.0, valid_fraction: float = 0.25) -> Split:
    """scikit-learn's wine (13 features, 3 classes; raw proline values are in the hundreds to ~1700).
    ``minority_keep`` < 1 keeps that share of the training rows of classes 1 and 2."""
    x_train, y_train, x_valid, y_valid = base.tabular("wine", standardise=False, seed=seed,
                                                      valid_fraction=valid_fraction)
    if minority_keep < 1.0:
        rng = np.random.default_rng(seed + 1)
        kept = (y_train == 0) | (rng.random(len(y_train)) < minority_keep)
        x_train, y_train = x_train[kept], y_train[kept]
    if standardise:
        x_train, x_valid = base._standardise(x_train, x_valid)
    return x_train.astype(np.float32), y_train, x_valid.astype(np.float32), y_valid


def ranking(queries: int = 200, per_query: int = 10, features: int = 12, seed: int = 0,
            valid_fraction: float = 0.25) -> Split:
    """Learning to rank: ``queries`` groups of ``per_query`` documents with graded relevance 0-3 from a noisy
    linear score. ``y`` holds the relevance; the group of row ``i`` is ``i // per_query`` (train and
    validation keep whole groups)."""
    rng = np.random.default_rng(seed)
    n = queries * per_query
    x = rng.normal(size=(n, features)).astype(np.float32)
    w = rng.normal(size=features)
    score = x @ w / np.sqrt(features) + 0.5 * rng.normal(size=n)
    y = np.digitize(score, np.quantile(score, [0.5, 0.8, 0.95])).astype(np.float32)
    n_valid = int(round(queries * valid_fraction)) * per_query
    return x[n_valid:], y[n_valid:], x[:n_valid], y[:n_valid]


def counts(n: int = 2000, features: int = 8, seed: int = 0, valid_fraction: float = 0.25) -> Split:
    """Event counts: Poisson draws whose rate is a smooth function of the features (mostly 0-2, up to ~20),
    as integer-valued float targets (a count regression, not classes)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, features)).astype(np.float32)
    w = rng.normal(size=features) / np.sqrt(features)
    y = rng.poisson(np.exp(0.2 + 0.9 * (x @ w))).astype(np.float32)
    return base._split(x, y, valid_fraction, seed)


def sequences(length: int = 20, **kwargs) -> Split:
    """data.sequences, with another length (longer sequences for the recurrent bugs)."""
    return base.sequences(length=length, **kwargs)


LOADERS = {**base.LOADERS, "multilabel": multilabel, "friedman": friedman, "wine": wine, "ranking": ranking,
           "sequences": sequences, "counts": counts}


def load(spec: dict) -> Split:
    args = dict(spec)
    return LOADERS[args.pop("loader")](**args)
