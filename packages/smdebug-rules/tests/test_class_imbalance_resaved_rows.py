"""ClassImbalance's message counts the rows of one save when every save holds the same rows: the XGBoost hook
saves the held-out set's labels at every round, and the sums read "2414 samples" at round 1 and "3621" at round 2
for a set of 1250 rows (probe 14b F7). Saves of different rows (training batches) are summed, and said to be."""

from __future__ import annotations

import re

import numpy as np
import pytest

from smdebug.rules.results import ISSUES

pytest.importorskip("xgboost")

from _xgboost_runs import train_xgboost  # noqa: E402
from _judging import judged  # noqa: E402


def test_the_same_held_out_rows_saved_every_round_are_counted_once_in_the_message(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(600, 4))
    y = (rng.random(600) < 0.03).astype(int)  # 3 % positives, no weights: imbalanced
    train_xgboost(tmp_path, {"objective": "binary:logistic", "max_depth": 2}, x, y, rounds=4,
                  collections=("labels", "predictions"))
    r = judged(tmp_path, "ClassImbalance", max_findings=10)
    assert r.status == ISSUES, (r.status, r.detail)
    negatives, positives = int((y == 0).sum()), int((y == 1).sum())
    for finding in r.findings:
        said = re.search(r"class 0 has (\d+) samples, class 1 (\d+)", finding.reason)
        assert said and (int(said[1]), int(said[2])) == (negatives, positives), finding.reason
    later = [f.reason for f in r.findings if f.step >= 2]
    assert later and all("600 labels, the same rows saved at each of" in reason for reason in later), later
