"""Attach the XGBoost hook to an unmodified script (``smdebug run``; see smdebug.zero_code).

``xgboost.train`` (also as the scikit-learn estimators call it) is wrapped so that the hook built from the JSON
configuration (``SMDEBUG_CONFIG_FILE_PATH``) joins its callbacks, unless the script already passes an smdebug
hook. One hook records one training run, so only the first ``xgboost.train`` call of the script is recorded.
``smdebug run`` with --out-dir alone asks for the recommended preset (smdebug.zero_code.preset).
"""

from __future__ import annotations

import functools

import xgboost

from smdebug.core.hook import logger


def attach() -> None:
    from smdebug.xgboost.hook import Hook
    from smdebug.zero_code.preset import configured_hook

    original = xgboost.train
    used = {"done": False}

    @functools.wraps(original)
    def train(*args, **kwargs):
        callbacks = list(kwargs.get("callbacks") or [])
        if not used["done"] and not any(isinstance(c, Hook) for c in callbacks):
            hook = configured_hook(Hook)
            if hook is not None:
                used["done"] = True
                kwargs["callbacks"] = [hook, *callbacks]  # first: it must see every iteration
        return original(*args, **kwargs)

    xgboost.train = train
    # The scikit-learn estimators (XGBClassifier.fit, XGBRegressor.fit, XGBRanker.fit) call the `train`
    # their module imported by name, which rebinding xgboost.train does not reach: rebind it there too.
    sklearn_api = getattr(xgboost, "sklearn", None)
    if sklearn_api is not None and getattr(sklearn_api, "train", None) is original:
        sklearn_api.train = train
    logger.info("smdebug: xgboost.train (and the scikit-learn estimators' fit) will run with the smdebug hook")
