"""An XGBoost run that continues a model trained before (``xgboost.train(..., xgb_model=booster)``): its first round
is not its model's first. The held-out metric had gained most of what it would before the run began, so measured
from the run's first round a healthy continuation read as "no generalisation" (Overfit) and a drift of 3% at its
plateau as "rose past its best" (LossNotDecreasing) (probe 18a F2). The hook records the rounds the model had and,
when the hook's validation_data is one of the evals, which metrics are of its rows; a continued model that is
driven off by a learning rate far too high still fires."""

from __future__ import annotations

import pytest

from smdebug.rules import run_rules
from smdebug.rules.results import ISSUES, NOT_APPLICABLE, NO_ISSUES
from smdebug.trials import create_trial

xgb = pytest.importorskip("xgboost")
pytest.importorskip("smdebug.xgboost")

import smdebug.xgboost as smd  # noqa: E402

from _xgboost_runs import xgboost_data  # noqa: E402


def _continued(path, eta: float, before: int = 30, rounds: int = 50) -> str:
    x, y = xgboost_data(n=1200, seed=3)
    dtrain, dval = xgb.DMatrix(x[:900], label=y[:900]), xgb.DMatrix(x[900:], label=y[900:])
    params = {"objective": "binary:logistic", "max_depth": 3, "eta": 0.1, "eval_metric": "logloss", "nthread": 1}
    start = xgb.train(params, dtrain, before)
    hook = smd.Hook.recommended(str(path), validation_data=dval)
    xgb.train({**params, "eta": eta}, dtrain, rounds, evals=[(dtrain, "train"), (dval, "validation")],
              callbacks=[hook], xgb_model=start, verbose_eval=False)
    hook.close()
    return str(path)


def _verdicts(path):
    return {r.name: r for r in run_rules(path).rules}


def test_a_healthy_continuation_is_judged_from_the_models_start(tmp_path):
    path = _continued(tmp_path / "run", eta=0.1)
    meta = create_trial(path).collection_manager.meta
    assert meta["xgboost_booster"]["initial_rounds"] == 30 and meta["xgboost_labels_from"] == "validation"
    verdicts = _verdicts(path)
    assert verdicts["Overfit"].status == NOT_APPLICABLE and "continues a model trained for 30 rounds" in (
        verdicts["Overfit"].detail), verdicts["Overfit"]
    for name, result in verdicts.items():
        assert result.status != ISSUES, (name, result.findings)


def test_a_continuation_at_a_rate_far_too_high_still_fires(tmp_path):
    verdicts = _verdicts(_continued(tmp_path / "run", eta=3.0))
    fired = {name for name, result in verdicts.items() if result.status == ISSUES}
    assert fired & {"LossNotDecreasing", "Divergence"}, {n: (r.status, r.detail) for n, r in verdicts.items()}
