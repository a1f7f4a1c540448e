"""Loss-curve verdicts from probe 5 (PyTorch, XGBoost): SlowConvergence on runs that start near their floor, on
boosting's training metrics whose validation stopped improving and on counted metrics (error rates); Divergence on
a training loss that learned and then gave most of it back; the curve rules' verdict on a loss that is NaN."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn as nn

from smdebug.core.modes import ModeKeys
from smdebug.rules import run_rules
from smdebug.rules.generic import Divergence, LossNotDecreasing, SlowConvergence
from smdebug.rules.results import ISSUES, NO_ISSUES, NOT_EVALUATED
from smdebug.rules.rule_invoker import invoke_rule

from _torch_runs import classification_data, mlp, train_torch
from test_progress_rules import run as _run


def run(path, steps):
    return _run(path, steps, include_regex=[".*"])


def verdict(path, rule, **params):
    result = run_rules(str(path), [(rule, {k: str(v) for k, v in params.items()})])
    r = result.rules[0]
    assert r.error is None, r.error
    return r


def losses(values, name="loss"):
    return [{name: float(v)} for v in values]


# --------------------------------------------------------------------------------------------------------
# SlowConvergence: a run that starts near its floor (resumed, fine-tuned) is not "far from converged"
# --------------------------------------------------------------------------------------------------------
def test_slow_convergence_quiet_on_a_resumed_converged_classifier(tmp_path):
    x, y = classification_data(n=256, seed=1)
    xv, yv = classification_data(n=256, seed=2)
    model = mlp(hidden=32)
    opt = torch.optim.Adam(model.parameters(), 0.03)
    for _ in range(100):  # trained before the run: a checkpoint that already fits its training data
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    # resumed at a small learning rate: the training loss drifts from 0.004 to 0.0024 nats ("only 39% gone"),
    # the validation loss does not improve
    path = train_torch(tmp_path / "resumed", model, (x, y), steps=200, lr=0.0003, optimizer="adam",
                       eval_data=(xv, yv), eval_every=20, include_collections=("losses",))
    r = verdict(path, "SlowConvergence")
    assert r.status == NO_ISSUES, [f.reason for f in r.findings]


def test_slow_convergence_judges_a_cross_entropy_against_an_untrained_classifier(tmp_path):
    rng = np.random.default_rng(0)
    name = "CrossEntropyLoss_output_0"
    # a cross-entropy drifting from 0.008 to 0.005 nats (no validation): "only 34% gone" of a loss that began
    # 99% below what an untrained classifier scores (ln 2 at best)
    drift = np.linspace(0.008, 0.0053, 300) * rng.uniform(0.9, 1.1, 300)
    rule = SlowConvergence(run(tmp_path / "drift", losses(drift, name)))
    assert invoke_rule(rule) == [] and rule.evaluation.steps == 1
    # the same relative shape on another loss (unknown floor) still fires; and a classifier far from converged too
    assert invoke_rule(SlowConvergence(run(tmp_path / "mse", losses(drift, "MSELoss_output_0")))) == [299]
    fresh = np.linspace(2.3, 1.7, 300) * rng.uniform(0.98, 1.02, 300)
    assert invoke_rule(SlowConvergence(run(tmp_path / "fresh", losses(fresh, name)))) == [299]


def test_slow_convergence_counts_progress_to_where_a_decelerating_curve_heads(tmp_path):
    # a regression loss with a noise floor of 0.5: 1.5 -> 0.55, still falling a little at the end: most of the
    # way to its floor is covered, though only 63% of the loss is gone
    t = np.arange(300)
    near_floor = 0.5 + 1.0 * np.exp(-t / 80)
    rule = SlowConvergence(run(tmp_path / "floor", losses(near_floor)))
    assert invoke_rule(rule) == [] and rule.evaluation.steps == 1
    # the same curve ten times slower has covered little of its way: fires, and says where it heads
    slow = 0.5 + 1.0 * np.exp(-t / 800)
    rule = SlowConvergence(run(tmp_path / "slow", losses(slow)))
    assert invoke_rule(rule) == [299]
    assert "of the way to" in rule.last_reason or "fell" in rule.last_reason


# --------------------------------------------------------------------------------------------------------
# SlowConvergence: XGBoost training metrics and counted metrics
# --------------------------------------------------------------------------------------------------------
def _xgb_two_sets(path, params, rounds, seed=0, n=400):
    xgb = pytest.importorskip("xgboost")
    import smdebug.xgboost as smd

    rng = np.random.default_rng(seed)
    x = rng.normal(size=(2 * n, 6))
    y = x[:, 0] + 0.5 * x[:, 1] + rng.normal(scale=1.0, size=2 * n)  # noisy: rmse cannot go below ~1
    dtrain, dval = xgb.DMatrix(x[:n], label=y[:n]), xgb.DMatrix(x[n:], label=y[n:])
    hook = smd.Hook(out_dir=str(path), save_config=smd.SaveConfig(save_interval=1), include_collections=["metrics"])
    xgb.train({"nthread": 1, "objective": "reg:squarederror", **params}, dtrain, num_boost_round=rounds,
              evals=[(dtrain, "train"), (dval, "validation")], callbacks=[hook], verbose_eval=False)
    hook.close()
    return str(path)


def test_slow_convergence_quiet_on_boosting_whose_validation_stopped_improving(tmp_path):
    # deep trees on noisy data: train-rmse falls round after round, validation-rmse flattened long ago
    # (train-rmse 1.50 -> 0.80: "only 36% gone"; validation-rmse best at round 84 of 200)
    path = _xgb_two_sets(tmp_path / "plateau", {"eta": 0.05, "max_depth": 2}, rounds=200)
    r = verdict(path, "SlowConvergence")
    assert r.status == NO_ISSUES, [f.reason for f in r.findings]
    # too small an eta: validation still falls with the training metric, and the budget was too small
    path = _xgb_two_sets(tmp_path / "tiny_eta", {"eta": 0.003, "max_depth": 3}, rounds=150)
    r = verdict(path, "SlowConvergence")
    assert r.status == ISSUES, (r.status, r.detail)


def test_slow_convergence_quiet_on_a_counted_error_rate(tmp_path):
    # a validation error on 119 rows: 47 misclassified at round 0, 9 after a few rounds, then 8, 7, 6, 5 one
    # sample at a time; an exactly flat stretch has no spread, yet a change of a sample or two is no trend
    counts = [47, 30, 15] + [9] * 40 + [8] * 40 + [7] * 25 + [6] * 20 + [5] * 22
    steps = [{"validation-error": c / 119, "validation-logloss": 0.2 + 0.3 * np.exp(-i / 10)}
             for i, c in enumerate(counts)]
    rule = SlowConvergence(run(tmp_path / "error", steps), tensor_regex="validation-error")
    assert invoke_rule(rule) == [] and rule.evaluation.steps == 1
    # a counted metric that still falls by many samples at the end fires
    falling = [{"validation-error": (100 - i // 2) / 119} for i in range(150)]
    assert invoke_rule(SlowConvergence(run(tmp_path / "falling", falling))) == [149]


# --------------------------------------------------------------------------------------------------------
# Divergence: a training loss that learned, then gave most of its progress back
# --------------------------------------------------------------------------------------------------------
def test_divergence_fires_when_labels_are_corrupted_mid_run(tmp_path):
    x, y = classification_data(n=512, seed=3)
    y = y.clone()
    g = torch.Generator().manual_seed(4)
    corrupt = torch.rand(len(y), generator=g) < 0.3
    random_labels = torch.randint(0, 3, (len(y),), generator=g)

    def before_step(step):
        if step == 150:  # from here on 30% of the training labels are random
            y[corrupt] = random_labels[corrupt]

    path = train_torch(tmp_path / "corrupted", mlp(hidden=32), (x, y), steps=300, lr=0.01, optimizer="adam",
                       batch_size=32, before_step=before_step, include_collections=("losses",))
    r = verdict(path, "Divergence")
    assert r.status == ISSUES, (r.status, r.detail)
    assert "gave back" in r.findings[0].reason and r.findings[0].step > 150
    # the same run without the corruption is quiet
    x, y = classification_data(n=512, seed=3)
    path = train_torch(tmp_path / "clean", mlp(hidden=32), (x, y), steps=300, lr=0.01, optimizer="adam",
                       batch_size=32, include_collections=("losses",))
    assert verdict(path, "Divergence").status == NO_ISSUES


def test_divergence_gave_back_is_pinned_and_sustained(tmp_path):
    # 1.0 (first 10 saves) -> 0.25 -> back to 0.625 for the last 60 of 200 saves: exactly half of the progress
    values = [1.0] * 10 + list(np.linspace(1.0, 0.25, 30)) + [0.25] * 100 + [0.625] * 60
    trial = run(tmp_path / "back", losses(values))
    fired = invoke_rule(Divergence(trial))
    assert fired and fired[0] > 140
    rule = Divergence(trial)
    invoke_rule(rule)
    assert rule.last_reason.startswith("loss gave back 50% of the progress it had made: median 1 over its first "
                                       "10 saves -> 0.25 at best")
    assert invoke_rule(Divergence(trial, give_back_percent="50.01")) == []
    assert invoke_rule(Divergence(trial, give_back_percent="0")) == []
    # a bump of a few saves (a warm restart, an odd batch) is no sustained loss of progress
    bump = [1.0] * 10 + list(np.linspace(1.0, 0.25, 30)) + [0.25] * 100 + [0.9] * 8 + [0.25] * 52
    assert invoke_rule(Divergence(run(tmp_path / "bump", losses(bump)))) == []
    _quiet_on_healthy_bumps_and_validation_curves(tmp_path)


def _quiet_on_healthy_bumps_and_validation_curves(tmp_path):
    rng = np.random.default_rng(5)
    t = np.arange(600)
    # SGDR: the loss jumps back at each restart of the cosine schedule, then falls below where it was
    restarts = (0.05 + 2.0 * np.exp(-t / 60) + 0.3 * np.exp(-(t % 100) / 10) * (t >= 100)) * rng.uniform(0.8, 1.2, 600)
    assert invoke_rule(Divergence(run(tmp_path / "sgdr", losses(restarts)))) == []
    # a noisy loss at its floor after learning (a batch of one sample)
    noisy = (0.1 + 0.5 * np.exp(-t / 50)) * rng.exponential(1.0, 600)
    assert invoke_rule(Divergence(run(tmp_path / "noisy", losses(noisy)))) == []
    # an annealed KL term raising a VAE's total loss by a fraction of what it learned
    vae = 40 - 15 * (1 - np.exp(-t / 40)) + 4 * np.clip(t / 360, 0, 1)
    assert invoke_rule(Divergence(run(tmp_path / "vae", losses(vae)))) == []
    # a validation loss rising after its best (overfitting, early stopping) is Overfit's, not a training loss
    val = 0.7 - 0.4 * np.minimum(t, 150) / 150 + 0.4 * np.maximum(t - 150, 0) / 450
    steps = [(ModeKeys.EVAL, {"loss": v}) for v in val]
    rule = Divergence(run(tmp_path / "val", steps))
    assert invoke_rule(rule) == []


# --------------------------------------------------------------------------------------------------------
# A loss that is NaN: the curve rules say so, not "needs N saves"
# --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("rule", ["LossNotDecreasing", "OscillatingLoss", "SlowConvergence"])
def test_curve_rules_say_the_loss_is_not_finite(tmp_path, rule):
    values = [2.0, 1.5, 3.0, 50.0] + [float("nan")] * 196
    run(tmp_path / "nan", losses(values))
    r = verdict(tmp_path / "nan", rule)
    assert r.status == NOT_EVALUATED
    assert "loss is not finite (NaN or infinity) from step 4 on (196 of its 200 saves)" in r.detail, r.detail
    assert "needs" not in r.detail.split(";")[0]
