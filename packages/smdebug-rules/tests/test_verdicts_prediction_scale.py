"""ClassImbalance and Confusion read one score per label by what the score is: an XGBoost ``binary:logitraw``
booster's raw margins are class 1 above 0 (rounded as probabilities, a sound model's margins of -7..8 became
"ids" 1..8 and negative ids, and ClassImbalance said it mispredicts class 0); probabilities are class 1 above
0.5; scores that are neither probabilities nor ids, with nothing recorded about them, are not guessed."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn as nn

from smdebug.rules import run_rules
from smdebug.rules.results import ISSUES, NO_ISSUES, NOT_EVALUATED

from _xgboost_runs import train_xgboost

xgb = pytest.importorskip("xgboost")


def verdicts(path, rules=("ClassImbalance", "Confusion")):
    found = {r.name: r for r in run_rules(str(path), list(rules)).rules}
    for r in found.values():
        assert r.error is None, r.error
    return found


def separable(n=600, seed=0):
    """A binary problem a few trees learn almost perfectly, classes balanced."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 5))
    return x, (x[:, 0] + 0.5 * x[:, 1] > 0).astype(int)


@pytest.mark.parametrize("objective", ["binary:logitraw", "binary:logistic", "binary:hinge", "reg:logistic"])
def test_a_sound_binary_booster_is_quiet_whatever_its_predictions_are(tmp_path, objective):
    x, y = separable()
    path = train_xgboost(tmp_path, {"objective": objective, "max_depth": 3, "eta": 0.3}, x, y, rounds=20,
                         collections=("labels", "predictions"))
    if objective == "binary:logitraw":  # (the run does hold margins of both signs, far beyond [0, 1])
        from smdebug.trials import create_trial

        trial = create_trial(str(path))
        margins = trial.tensor("predictions").value(trial.tensor("predictions").steps()[-1])
        assert margins.min() < -1 and margins.max() > 1
    for name, r in verdicts(path).items():
        assert r.status == NO_ISSUES, (objective, name, r.status, r.detail, [f.reason for f in r.findings])


def test_a_logitraw_booster_that_learned_nothing_still_fires(tmp_path):
    # eta 0: every margin stays at the base score's (XGBoost estimates it from the labels), one class for every
    # row: the other class is always mispredicted
    x, y = separable()
    path = train_xgboost(tmp_path, {"objective": "binary:logitraw", "max_depth": 3, "eta": 0.0}, x, y,
                         rounds=10, collections=("labels", "predictions"))
    found = verdicts(path)
    assert found["Confusion"].status == ISSUES, found["Confusion"].detail
    assert ": 0 of " in found["Confusion"].findings[0].reason
    assert found["ClassImbalance"].status == ISSUES
    assert "mispredicts class" in found["ClassImbalance"].findings[0].reason


def _torch_binary_run(path, save):
    """A PyTorch binary classifier trained with BCEWithLogitsLoss whose script saves its own ``labels`` and
    ``predictions`` (``save(logits)``: what it saves as predictions) at every step."""
    import smdebug.pytorch as smd

    g = torch.Generator().manual_seed(0)
    x = torch.randn(512, 6, generator=g)
    y = (x[:, 0] - x[:, 1] > 0).float()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))
    loss_fn = nn.BCEWithLogitsLoss()
    hook = smd.Hook(out_dir=str(path), save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["labels", "predictions", "losses"])
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    for step in range(60):
        xb, yb = x[(step * 64) % 512:][:64], y[(step * 64) % 512:][:64]
        opt.zero_grad()
        logits = model(xb).squeeze(1)
        loss = loss_fn(logits, yb)
        loss.backward()
        opt.step()
        hook.save_tensor("labels", yb.long(), "labels")
        hook.save_tensor("predictions", save(logits.detach()), "predictions")
    hook.close()
    assert loss.item() < 0.2  # (a sound classifier)
    return path


def test_logits_saved_as_predictions_are_not_rounded_as_classes(tmp_path):
    found = verdicts(_torch_binary_run(tmp_path, lambda logits: logits))
    confusion = found["Confusion"]
    assert confusion.status == NOT_EVALUATED, (confusion.status, confusion.detail)
    assert "predictions holds one score per label with fractions" in confusion.detail
    assert "no class is derived" in confusion.detail
    # the class counts are still judged: they need the labels only
    assert found["ClassImbalance"].status == NO_ISSUES, found["ClassImbalance"].findings


def test_probabilities_saved_as_predictions_are_judged(tmp_path):
    found = verdicts(_torch_binary_run(tmp_path, torch.sigmoid))
    for name, r in found.items():
        assert r.status == NO_ISSUES, (name, r.status, r.detail, [f.reason for f in r.findings])
