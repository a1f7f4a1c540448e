"""The evaluation metrics of a boosting run: which are the training data's, which a held-out set's, and whether a
held-out one rose past its best.

XGBoost saves each round's metric of every data set of ``xgboost.train(evals=...)`` as ``<set>-<metric>``
(``train-rmse``, ``validation_1-logloss``); a run without modes. Shared by the rules that compare sets
(:mod:`.booster_generalisation`) and those that ask whether the model got worse on held-out rows (TreeDepth).
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

#: metrics whose relative gain means something: lower is better, 0 is a perfect fit and a model that learned
#: nothing sits well above 0 (left out: scores such as auc/ndcg/map, where one tree already ranks well; the
#: negative log-likelihoods -- poisson-, gamma-, tweedie-, cox-, aft-nloglik -- whose constant offset no model
#: removes; a custom metric, whose scale is unknown)
JUDGED_METRIC = re.compile(r"^(rmse|rmsle|mae|mape|mphe|logloss|mlogloss|error(@[0-9.]+)?|merror|quantile)$")

#: a data set named as the training data (``xgboost.train(evals=[(dtrain, "train"), ...])``)
TRAINING_NAME = re.compile(r"(?i)^d?train(ing)?([_-]?(set|data))?$")

#: a rise past the best smaller than this share of the best is no worse model a user would stop for (early
#: stopping's usual patience lets such drifts pass), whatever the curve's round-to-round smoothness
MIN_RISE_SHARE = 0.01


def metric_sets(trial) -> Dict[str, List[str]]:
    """Per metric, the tensors ``<set>-<metric>`` of the run (a run without modes), for metrics in two sets or
    more."""
    by_metric: Dict[str, List[str]] = {}
    for name in trial.tensor_names():
        if "/" in name or "-" not in name:
            continue
        by_metric.setdefault(name.split("-", 1)[1], []).append(name)
    return {m: sorted(names) for m, names in by_metric.items() if len(names) >= 2}


def held_out_metrics(trial, labels_source: Optional[str]) -> List[str]:
    """The judged metrics (:data:`JUDGED_METRIC`) of the run's held-out sets: every set not named as the training
    data when one is; else, of several sets, the one the hook saved the labels of (``labels_source``), which is
    held out by construction. [] when the run does not tell (sets named ``validation_0``, ``validation_1``: the
    scikit-learn API names the training set so too)."""
    names = [n for n in trial.tensor_names() if "/" not in n and "-" in n
             and JUDGED_METRIC.match(n.split("-", 1)[1])]
    sets = {n.split("-", 1)[0] for n in names}
    if any(TRAINING_NAME.match(s) for s in sets):
        return sorted(n for n in names if not TRAINING_NAME.match(n.split("-", 1)[0]))
    if labels_source is not None:
        return sorted(n for n in names if n.split("-", 1)[0] == labels_source)
    return []


def rise_past_best(values: Sequence[float]) -> Optional[Tuple[float, int, float]]:
    """``(best, its index, last)`` of a lower-is-better metric's rounds when the last lies above the best by more
    than its round-to-round noise (three times a robust standard deviation of the differences of consecutive
    rounds) and by :data:`MIN_RISE_SHARE` of the best: the model got worse on those rows after its best round.
    None otherwise (the best is the last round, too few rounds, values not finite)."""
    v = np.asarray(values, dtype=np.float64)
    if v.size < 5 or not np.all(np.isfinite(v)):
        return None
    i = int(np.argmin(v))
    if i >= v.size - 1:
        return None
    noise = 1.4826 * float(np.median(np.abs(np.diff(v))))
    rise = float(v[-1] - v[i])
    if rise > 3 * noise and rise > MIN_RISE_SHARE * abs(float(v[i])):
        return float(v[i]), i, float(v[-1])
    return None
