"""Data for the second held-out batch (rows ``h2_``/``b2_`` of scenarios.py): tasks neither earlier batch has,
still nothing downloaded -- scikit-learn's bundled sets and generators, or numpy.

Loaders return ``(x_train, y_train, x_valid, y_valid)`` like data.py's, so a spec names one by ``loader``.
"""

from __future__ import annotations

from typing import Tuple

import numpy as np

from . import data as base
from . import heldout_data

Split = Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def markov_text(n: int = 1200, length: int = 32, vocab: int = 40, seed: int = 0,
                valid_fraction: float = 0.2) -> Split:
    """Next-token prediction on text-like sequences: a random first-order Markov chain whose transition rows
    are sparse and whose token frequencies are skewed the way words are (a Zipf-like unigram prior: the
    commonest token is ~30x more frequent than the rarest). ``x`` is the sequence, ``y`` the same shifted by
    one (the next token at each position)."""
    rng = np.random.default_rng(seed)
    prior = 1.0 / np.arange(1, vocab + 1) ** 0.9
    trans = rng.dirichlet(np.full(vocab, 0.15), size=vocab) * 0.7 + 0.3 * prior / prior.sum()
    trans /= trans.sum(1, keepdims=True)
    seqs = np.zeros((n, length + 1), dtype=np.int64)
    seqs[:, 0] = rng.choice(vocab, size=n, p=prior / prior.sum())
    cum = trans.cumsum(1)
    for t in range(1, length + 1):
        u = rng.random(n)[:, None]
        seqs[:, t] = np.minimum((u > cum[seqs[:, t - 1]]).sum(1), vocab - 1)
    return base._split(seqs[:, :-1], seqs[:, 1:], valid_fraction, seed)


def reverse_task(n: int = 2000, length: int = 8, vocab: int = 12, seed: int = 0,
                 valid_fraction: float = 0.2) -> Split:
    """Sequence-to-sequence: reverse a sequence of tokens 1..vocab-1 (0 is the start token of the decoder)."""
    rng = np.random.default_rng(seed)
    x = rng.integers(1, vocab, size=(n, length)).astype(np.int64)
    return base._split(x, x[:, ::-1].copy(), valid_fraction, seed)


def heteroscedastic(n: int = 3000, features: int = 6, seed: int = 0, valid_fraction: float = 0.25) -> Split:
    """Regression whose noise grows with the inputs (std 0.05 to ~1.5): a Gaussian likelihood with a learnt
    variance, or quantiles, fit it better than a constant-noise model."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2, 2, size=(n, features)).astype(np.float32)
    w = rng.normal(size=features) / np.sqrt(features)
    mean = np.sin(x @ w * 1.5) + 0.3 * x[:, 0]
    std = 0.05 + 0.35 * np.abs(x[:, 1]) ** 1.5
    y = (mean + std * rng.normal(size=n)).astype(np.float32)
    return base._split(x, y, valid_fraction, seed)


def imbalanced_binary(n: int = 4000, features: int = 12, positive: float = 0.15, seed: int = 0,
                      valid_fraction: float = 0.25, flip: float = 0.02) -> Split:
    """Binary classification with ``positive`` of the rows in class 1 (scikit-learn's make_classification)."""
    from sklearn.datasets import make_classification

    x, y = make_classification(n_samples=n, n_features=features, n_informative=6, n_redundant=2,
                               weights=[1 - positive], flip_y=flip, class_sep=1.0, random_state=seed)
    return base._split(x.astype(np.float32), y.astype(np.int64), valid_fraction, seed)


def multiclass_skewed(n: int = 4000, features: int = 16, classes: int = 5, seed: int = 0,
                      valid_fraction: float = 0.25, weights=None) -> Split:
    """Multi-class with skewed class shares (``weights``, default a 6:1 spread), make_classification."""
    from sklearn.datasets import make_classification

    weights = weights or [0.45, 0.2, 0.15, 0.12, 0.08][:classes]
    x, y = make_classification(n_samples=n, n_features=features, n_informative=8, n_classes=classes,
                               n_clusters_per_class=1, weights=weights, class_sep=1.2, random_state=seed)
    return base._split(x.astype(np.float32), y.astype(np.int64), valid_fraction, seed)


def curriculum_blobs(n: int = 4000, seed: int = 0, valid_fraction: float = 0.25) -> Split:
    """Synthetic 4-class data whose training rows come ordered from easy to hard (by the margin of the
    generating model, largest first), for curriculum learning; the validation rows are a plain random
    sample of all difficulties."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 16)).astype(np.float32)
    w = rng.normal(size=(16, 4))
    logits = x @ w + 0.8 * rng.normal(size=(n, 4))
    y = logits.argmax(1)
    top2 = np.sort(logits, 1)[:, -2:]
    margin = top2[:, 1] - top2[:, 0]
    x_train, y_train, x_valid, y_valid = base._split(x, y.astype(np.int64), valid_fraction, seed)
    m_train = base._split(x, margin, valid_fraction, seed)[1]
    order = np.argsort(-m_train, kind="stable")
    return x_train[order], y_train[order], x_valid, y_valid


def survival(n: int = 2000, features: int = 8, seed: int = 0, valid_fraction: float = 0.25,
             censored: float = 0.3) -> Split:
    """Survival times with right censoring, for XGBoost's accelerated-failure-time objective: ``y`` holds
    (lower, upper) bounds per row (upper = inf for a censored row)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, features)).astype(np.float32)
    w = rng.normal(size=features) / np.sqrt(features)
    t = np.exp(1.0 + 0.8 * (x @ w) + 0.5 * rng.normal(size=n))
    cens = rng.random(n) < censored
    lower = np.where(cens, t * rng.uniform(0.3, 1.0, size=n), t)
    upper = np.where(cens, np.inf, t)
    return base._split(x, np.column_stack([lower, upper]).astype(np.float32), valid_fraction, seed)


def multi_target(n: int = 2000, features: int = 10, targets: int = 3, seed: int = 0,
                 valid_fraction: float = 0.25) -> Split:
    """Regression with several targets at once (make_regression, standardised per target)."""
    from sklearn.datasets import make_regression

    x, y = make_regression(n_samples=n, n_features=features, n_informative=6, n_targets=targets, noise=10.0,
                           random_state=seed)
    y = (y - y.mean(0)) / y.std(0)
    return base._split(x.astype(np.float32), y.astype(np.float32), valid_fraction, seed)


def mixed_inputs(n: int = 3000, numeric: int = 6, categories: int = 30, seed: int = 0,
                 valid_fraction: float = 0.25) -> Split:
    """Tabular rows with numeric features and one categorical id (a store, a product), for a two-input
    model: ``x`` packs the id into the last column (split again by the trainer); the target is binary."""
    rng = np.random.default_rng(seed)
    num = rng.normal(size=(n, numeric)).astype(np.float32)
    cat = rng.integers(0, categories, n)
    effect = rng.normal(size=categories)
    score = num @ rng.normal(size=numeric) / np.sqrt(numeric) + effect[cat] + 0.5 * rng.normal(size=n)
    y = (score > np.median(score)).astype(np.int64)
    return base._split(np.column_stack([num, cat.astype(np.float32)]), y, valid_fraction, seed)


def house_prices(n: int = 2000, seed: int = 0, valid_fraction: float = 0.25, in_thousands: bool = False) -> Split:
    """Friedman #1 regression, standardised, or (``in_thousands``) reported the way a price table gives it:
    thousands of dollars, mean 250 and std 50."""
    x_train, y_train, x_valid, y_valid = heldout_data.friedman(n=n, seed=seed, valid_fraction=valid_fraction)
    if in_thousands:
        y_train, y_valid = (250.0 + 50.0 * y for y in (y_train, y_valid))
    return x_train, y_train.astype(np.float32), x_valid, y_valid.astype(np.float32)


def clicks(queries: int = 200, per_query: int = 10, seed: int = 0, valid_fraction: float = 0.25) -> Split:
    """Learning to rank with binary relevance (clicked or not): heldout_data.ranking's grades, 2 and up
    counting as relevant."""
    x_train, y_train, x_valid, y_valid = heldout_data.ranking(queries=queries, per_query=per_query, seed=seed,
                                                              valid_fraction=valid_fraction)
    return x_train, (y_train >= 2).astype(np.float32), x_valid, (y_valid >= 2).astype(np.float32)


LOADERS = {**heldout_data.LOADERS, "clicks": clicks, "markov_text": markov_text, "reverse_task": reverse_task,
           "heteroscedastic": heteroscedastic, "imbalanced_binary": imbalanced_binary,
           "multiclass_skewed": multiclass_skewed, "curriculum_blobs": curriculum_blobs, "survival": survival,
           "multi_target": multi_target, "mixed_inputs": mixed_inputs, "house_prices": house_prices}


def load(spec: dict) -> Split:
    args = dict(spec)
    return LOADERS[args.pop("loader")](**args)
