"""The XGBoost collections and their default regexes.

Names saved by the hook (see the package README for shapes):

==================  ==============================================  ============================
collection          tensors                                         default regex
==================  ==============================================  ============================
hyperparameters     ``hyperparameters/<name>``                      ``^hyperparameters/``
metrics             ``<evals name>-<metric>`` (``train-rmse``)      ``^[^-/]+-[^/]+$``
losses              the metrics that are losses (not auc, aucpr,    see ``LOSSES_REGEX``
                    pre, ndcg, map, interval-regression-accuracy)
predictions         ``predictions``                                 ``^predictions$``
labels              ``labels``                                      ``^labels$``
feature_importance  ``feature_importance/<type>/<feature>``         ``^feature_importance/``
average_shap        ``average_shap/<feature>``, ``shap_bias``       ``^average_shap/``, ``^shap_bias$``
full_shap           ``full_shap/<feature>``                         ``^full_shap/``
trees               ``trees/<column>``                              ``^trees/``
==================  ==============================================  ============================

Fixed on purpose (the original's regexes): ``[a-zA-z]`` (which also matched ``[\\]^_```, and no digit,
so ``validation_0-rmse`` from the scikit-learn API was no metric) and ``[^/bias]$`` (which dropped every
feature whose name ended in ``/``, ``b``, ``i``, ``a`` or ``s``). XGBoost forbids ``-`` in evaluation
set names, so ``<evals name>-<metric>`` splits unambiguously at the first ``-``.
"""

from __future__ import annotations

from typing import List

from smdebug.core.collection import Collection, CollectionKeys

__all__ = ["Collection", "CollectionKeys", "default_collections", "METRICS_REGEX", "LOSSES_REGEX",
           "HIGHER_IS_BETTER_METRICS", "SHAP_BIAS"]

#: ``<evals name>-<metric>``: no ``/`` anywhere, at least one ``-``
METRICS_REGEX = r"^[^-/]+-[^/]+$"
#: XGBoost's built-in metrics where a larger value is better: they are metrics, not losses
HIGHER_IS_BETTER_METRICS = ("auc", "aucpr", "pre", "ndcg", "map")
#: a metric whose name is not a higher-is-better metric (with its optional ``@n`` and ``-`` suffixes)
LOSSES_REGEX = (
    r"^[^-/]+-(?!(?:" + "|".join(HIGHER_IS_BETTER_METRICS) + r")(?:@[^-/]*)?-?$"
    r"|interval-regression-accuracy$)[^/]+$"
)
#: the bias (expected value) column of the SHAP matrix, saved apart from the features
SHAP_BIAS = "shap_bias"


def default_collections() -> List[Collection]:
    return [
        Collection(CollectionKeys.HYPERPARAMETERS, include_regex=["^hyperparameters/"]),
        Collection(CollectionKeys.METRICS, include_regex=[METRICS_REGEX]),
        Collection(CollectionKeys.LOSSES, include_regex=[LOSSES_REGEX]),
        Collection(CollectionKeys.PREDICTIONS, include_regex=["^predictions$"]),
        Collection(CollectionKeys.LABELS, include_regex=["^labels$"]),
        Collection(CollectionKeys.FEATURE_IMPORTANCE, include_regex=["^feature_importance/"]),
        Collection(CollectionKeys.AVERAGE_SHAP, include_regex=["^average_shap/", "^" + SHAP_BIAS + "$"]),
        Collection(CollectionKeys.FULL_SHAP, include_regex=["^full_shap/"]),
        Collection(CollectionKeys.TREES, include_regex=["^trees/"]),
    ]
