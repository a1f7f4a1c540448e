"""Legacy module (smdebug 1.0.x's ``smdebug.xgboost.utils``): the trees of one boosting iteration as
columns, and XGBoost version checks. See docs/compatibility.md."""

from __future__ import annotations

import re
from typing import Dict

import numpy as np
import xgboost as xgb


def _version_at_least(major: int, minor: int) -> bool:
    numbers = [int(n) for n in re.findall(r"\d+", xgb.__version__)[:2]]
    return tuple(numbers) >= (major, minor)


def is_xgb_1_3_and_later() -> bool:
    return _version_at_least(1, 3)


def is_xgb_1_5_and_later() -> bool:
    return _version_at_least(1, 5)


def is_xgb_1_7_and_later() -> bool:
    return _version_at_least(1, 7)


def parse_tree_model(booster: xgb.Booster, iteration: int) -> Dict[str, np.ndarray]:
    """The trees built in boosting iteration ``iteration``: each column of
    ``booster.trees_to_dataframe()`` (Tree, Node, ID, Feature, Split, Yes, No, Missing, Gain, Cover,
    Category) as an array, for those trees' rows, numbered as in the whole model. (The hook's ``trees``
    collection saves the same columns, with missing links as empty strings and a ``Depth`` column.)"""
    df = booster.trees_to_dataframe()
    rounds = booster.num_boosted_rounds()
    per_round = int(df["Tree"].nunique()) // rounds if rounds else 0
    first = int(iteration) * per_round
    rows = df[(df["Tree"] >= first) & (df["Tree"] < first + per_round)].reset_index(drop=True)
    return {column: rows[column].to_numpy() for column in rows.columns}
