"""Two healthy curves the curve rules misread on finished runs (probe 9, F1 and F4), judged on real training.

* A loss that falls steadily, its progress spread evenly over the whole run (a logistic regression at a modest
  learning rate: 0.75 -> 0.62, the same drop in every quarter), meets LossNotDecreasing's "too slowly to matter"
  pace test at half-way. On a finished run the stall test lets off a loss that later left its plateau, but it asked
  this one for a second full ``min_progress_percent`` after the judged step: "barely decreased" on a run that kept
  learning. A model at chance level still fires (the shuffled-label tests of test_curve_rules.py).
* An evaluation metric that made its progress within its first rounds and then sat on a plateau (XGBoost rank:map,
  its validation MAP@5 flat from round 2 of 80) "was still falling" for SlowConvergence by a hair of its plateau,
  which has no spread to count as noise: the last third must now make a tenth of what the run achieved."""

from __future__ import annotations

import numpy as np
import pytest

from smdebug.rules.results import NO_ISSUES
from _judging import judged  # noqa: E402

torch = pytest.importorskip("torch")


def test_a_loss_falling_steadily_over_the_whole_run_is_decreasing(tmp_path):
    from _torch_runs import train_torch

    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(512, 64, generator=g)
    y = ((x @ torch.randn(64, generator=g)) + 2.0 * torch.randn(512, generator=g) > 0).long()
    path = train_torch(tmp_path / "run", torch.nn.Linear(64, 2), (x, y), steps=200, lr=0.0016, batch_size=64)
    from smdebug.trials import create_trial

    loss = create_trial(path).tensor("CrossEntropyLoss_output_0")
    values = [loss.value(s).item() for s in loss.steps()]
    marks = [np.median(values[i:i + 10]) for i in (0, 45, 95, 145, 190)]
    drops = -np.diff(marks)[1:]  # (after the first quarter, whose first steps fall fastest)
    assert marks[-1] < 0.85 * marks[0] and drops.min() > 0.6 * drops.max(), marks  # steady, 10%+ overall
    r = judged(path, "LossNotDecreasing")
    assert r.status == NO_ISSUES, [f.reason for f in r.findings]


def test_a_metric_on_a_plateau_since_its_first_rounds_is_not_still_falling(tmp_path):
    xgb = pytest.importorskip("xgboost")
    import smdebug.xgboost as smd

    g = np.random.default_rng(0)
    queries, per = 300, 12
    x = g.standard_normal((queries * per, 8))
    relevant = (x[:, 0] + 0.5 * x[:, 1] + 0.5 * g.standard_normal(queries * per) > 1).astype(int)
    qid = np.repeat(np.arange(queries), per)
    cut = 240 * per
    dtrain = xgb.DMatrix(x[:cut], relevant[:cut], qid=qid[:cut])
    dvalid = xgb.DMatrix(x[cut:], relevant[cut:], qid=qid[cut:])
    params = {"objective": "rank:map", "eval_metric": ["map@5", "ndcg@5"], "eta": 0.1, "max_depth": 4,
              "nthread": 1, "seed": 0}
    hook = smd.Hook.recommended(str(tmp_path / "run"), validation_data=dvalid, hyperparameters=params)
    history = {}
    xgb.train(params, dtrain, 80, evals=[(dtrain, "train"), (dvalid, "validation")], evals_result=history,
              callbacks=[hook], verbose_eval=False)
    hook.close()
    curve = history["validation"]["map@5"]
    assert max(curve[:3]) >= max(curve) - 0.01  # its best within 0.01 by round 2 of 80: a plateau since
    r = judged(tmp_path / "run", "SlowConvergence")
    assert r.status == NO_ISSUES, [f.reason for f in r.findings]
