"""The loss-curve rules added for problem classes the original did not cover (OscillatingLoss, SlowConvergence,
Divergence) on hand-made runs written with the real hook: each fires where it should, its thresholds are pinned
on both sides, noise alone never makes it fire, and too little data is said, not guessed."""

import numpy as np
import pytest

from smdebug.exceptions import SMDebugValueError
from smdebug.rules.generic import Divergence, OscillatingLoss, SlowConvergence
from smdebug.rules.rule_invoker import invoke_rule
from smdebug.trials import create_trial

from test_progress_rules import run, write


def losses(values):
    return [{"loss": float(v)} for v in values]


def square_wave(n, high=1.0, low=0.5, block=10):
    """``high`` for saves 0-9, ``low`` for 10-19, ... (a loss swinging every ``block`` saves)."""
    return [high if (i // block) % 2 == 0 else low for i in range(n)]


# --- OscillatingLoss ---------------------------------------------------------------------------------------
def test_oscillating_loss_counts_swings_of_block_medians(tmp_path):
    # 100 saves: the second half's blocks of 10 are 0.5, 1, 0.5, 1, 0.5: 4 moves of 0.5 (50 % of the initial 1)
    trial = run(tmp_path, losses(square_wave(100)))
    assert invoke_rule(OscillatingLoss(trial)) == [99]
    rule = OscillatingLoss(trial)
    invoke_rule(rule)
    assert rule.last_reason.startswith("loss swings up and down: 4 moves larger than 0.2 (20% of the initial 1)")
    assert invoke_rule(OscillatingLoss(trial, swing_percent="49.99")) == [99]
    assert invoke_rule(OscillatingLoss(trial, swing_percent="50")) == []  # a move must exceed the threshold
    assert invoke_rule(OscillatingLoss(trial, min_swings="5")) == []
    # judged every window saves once 2 * window * (min_swings + 1) are there: too short a run says so
    short = run(tmp_path / "short", losses(square_wave(99)))
    rule = OscillatingLoss(short, window="10")
    assert invoke_rule(rule) == [] and rule.evaluation.steps == 0


def test_oscillating_loss_fits_its_default_blocks_to_a_sparsely_saved_loss(tmp_path):
    # 60 saves (a loss saved every 10th of 600 steps): blocks of 6 saves, and the swings of 6-save periods count
    rule = OscillatingLoss(run(tmp_path / "a", losses(square_wave(60, block=6))))
    assert invoke_rule(rule) == [59], rule.evaluation
    assert "in means of blocks of 6 saves" in rule.last_reason, rule.last_reason
    # the same saves of a noisy converging loss are judged and quiet
    rng = np.random.default_rng(3)
    steps = np.arange(60)
    noisy = (0.05 + 2.0 * np.exp(-steps / 8)) * rng.uniform(0.5, 1.5, size=60)
    rule = OscillatingLoss(run(tmp_path / "b", losses(noisy)))
    assert invoke_rule(rule) == [] and rule.evaluation.steps > 0
    # never blocks under 5 saves: 49 saves are too few; a window given is kept
    rule = OscillatingLoss(run(tmp_path / "c", losses(square_wave(49, block=5))))
    assert invoke_rule(rule) == [] and rule.evaluation.steps == 0
    rule = OscillatingLoss(run(tmp_path / "d", losses(square_wave(60, block=6))), window="10")
    assert invoke_rule(rule) == [] and rule.evaluation.steps == 0


def test_oscillating_loss_quiet_on_noisy_converging_losses(tmp_path):
    rng = np.random.default_rng(1)
    steps = np.arange(400)
    noisy = (0.05 + 2.0 * np.exp(-steps / 50)) * rng.uniform(0.5, 1.5, size=400)
    rule = OscillatingLoss(run(tmp_path / "a", losses(noisy)))
    assert invoke_rule(rule) == [] and rule.evaluation.steps > 0
    # a converged loss wobbling by 10 % of its value: far below 20 % of the initial loss
    wobble = 1.0 * np.exp(-steps / 20) + 0.1 + 0.01 * np.array(square_wave(400, 1, -1))
    assert invoke_rule(OscillatingLoss(run(tmp_path / "b", losses(wobble)))) == []


def test_oscillating_loss_parameters(tmp_path):
    trial = run(tmp_path, losses([1.0]))
    rule = OscillatingLoss(trial, window="5", swing_percent="10", min_swings="3")
    assert (rule.window, rule.swing_percent, rule.min_swings) == (5, 10.0, 3)
    for kwargs, message in [({"window": "0"}, "window must be >= 1"), ({"swing_percent": "0"}, "swing_percent"),
                            ({"swing_percent": "nan"}, "swing_percent"), ({"min_swings": "1"}, "min_swings must be >= 2")]:
        with pytest.raises(SMDebugValueError, match=message):
            OscillatingLoss(trial, **kwargs)


# --- SlowConvergence ---------------------------------------------------------------------------------------
def test_slow_convergence_fires_on_a_steadily_falling_loss_at_the_end(tmp_path):
    linear = 1.0 - 0.002 * np.arange(100)  # 1.0 -> 0.8: still falling as fast as at the start
    trial = run(tmp_path, losses(linear))
    assert invoke_rule(SlowConvergence(trial)) == [99]  # judged once, at the end
    rule = SlowConvergence(trial)
    invoke_rule(rule)
    assert rule.last_reason.startswith("loss was still falling when training ended: 0.991 (first 10 saves)")
    # the last third fell 0.058, the first 0.056: decelerating by a factor 1.04
    assert invoke_rule(SlowConvergence(trial, progress_percent="0", deceleration="1.0")) == [99]
    assert invoke_rule(SlowConvergence(trial, progress_percent="0", deceleration="1.1")) == []
    # still falling means by min_decrease_percent of the initial loss: 0.058 / 0.991 = 5.9 %
    assert invoke_rule(SlowConvergence(trial, min_decrease_percent="5.8")) == [99]
    assert invoke_rule(SlowConvergence(trial, min_decrease_percent="5.9")) == []


def test_slow_convergence_quiet_on_converged_and_unfinished_runs(tmp_path):
    steps = np.arange(300)
    rng = np.random.default_rng(2)
    converged = (0.05 + 2.0 * np.exp(-steps / 40)) * rng.uniform(0.7, 1.3, size=300)
    rule = SlowConvergence(run(tmp_path / "converged", losses(converged)))
    assert invoke_rule(rule) == [] and rule.evaluation.steps == 1
    # whether the budget was too small is known at the end only: a run still training is not judged
    write(tmp_path / "open", losses(1.0 - 0.002 * np.arange(100)), close=False)
    rule = SlowConvergence(create_trial(str(tmp_path / "open")))
    assert invoke_rule(rule, end_step=100) == [] and rule.evaluation.steps == 0


def test_slow_convergence_quiet_on_a_plateau_then_drop_that_ends_near_zero(tmp_path):
    # an attention model on an algorithmic task: flat near ln 2 for two thirds of the run, then it learns; the
    # last third falls far faster than the first, but the loss ended at 3% of where it started
    steps = np.arange(150)
    curve = np.where(steps < 100, 0.697 - 0.0001 * steps, 0.687 * np.exp(-(steps - 100) / 12.0) + 0.004)
    trial = run(tmp_path, losses(curve))
    assert invoke_rule(SlowConvergence(trial)) == []
    rule = SlowConvergence(trial, converged_percent="100")  # only a curve at its floor is let off
    assert invoke_rule(rule) == [149] and "as much in the last third as in the first" in rule.last_reason


def test_slow_convergence_never_extrapolates_a_loss_below_zero(tmp_path):
    # a curve that decelerates only a little heads far below 0 if extrapolated; a loss that never went below 0
    # is measured on its way to 0
    steps = np.arange(90)
    curve = np.concatenate([2.7 - 0.01 * steps[:30], 2.4 - 0.015 * steps[:30], 1.95 - 0.0149 * steps[:30]])
    rule = SlowConvergence(run(tmp_path, losses(curve)), deceleration="10")
    invoke_rule(rule)
    assert "of the way to 0 (its last two thirds head below it)" in rule.last_reason


def test_slow_convergence_parameters(tmp_path):
    trial = run(tmp_path, losses([1.0]))
    rule = SlowConvergence(trial, window="4", progress_percent="30", deceleration="0.3", min_decrease_percent="1")
    assert (rule.window, rule.progress_percent, rule.deceleration, rule.min_decrease_percent) == (4, 30.0, 0.3, 1.0)
    for kwargs, message in [({"window": "1"}, "window must be >= 2"), ({"progress_percent": "101"}, "progress_percent"),
                            ({"deceleration": "0"}, "deceleration"), ({"min_decrease_percent": "-1"},
                                                                       "min_decrease_percent"),
                            ({"converged_percent": "101"}, "converged_percent")]:
        with pytest.raises(SMDebugValueError, match=message):
            SlowConvergence(trial, **kwargs)


# --- Divergence --------------------------------------------------------------------------------------------
def test_divergence_loss_growth_is_pinned(tmp_path):
    trial = run(tmp_path, losses([1.0] * 10 + [100.0] * 10))
    assert invoke_rule(Divergence(trial)) == [19]  # median of the last 10 saves is 100x the first 10's
    assert invoke_rule(Divergence(trial, growth_factor="100.01")) == []
    assert invoke_rule(Divergence(trial, growth_factor="50")) == [19]  # 20 saves needed
    # window 4: the last 4 saves at step 11 are 1, 1, 100, 100 (median 50.5)
    assert invoke_rule(Divergence(trial, growth_factor="50", window="4")) == list(range(11, 20))
    rule = Divergence(trial)
    invoke_rule(rule)
    assert "loss grew 100-fold" in rule.last_reason and "all finite" in rule.last_reason


def test_divergence_weight_norm_growth(tmp_path):
    # a 2-D weight from norm 5 to 500; the 1-D bias (may start at 0) is not counted
    steps = [{"w/a": [[3.0, 4.0]], "w/bias": [0.0]}, {"w/a": [[30.0, 40.0]], "w/bias": [1.0]},
             {"w/a": [[300.0, 400.0]], "w/bias": [5.0]}]
    trial = run(tmp_path, steps)
    assert invoke_rule(Divergence(trial)) == [2]
    assert invoke_rule(Divergence(trial, growth_factor="9.99")) == [1, 2]
    assert invoke_rule(Divergence(trial, weight_collections="")) == []
    rule = Divergence(trial)
    invoke_rule(rule)
    assert rule.last_reason.startswith("the norm of the weights (1 tensors) grew 100-fold")


def test_divergence_quiet_on_healthy_curves_and_noise(tmp_path):
    rng = np.random.default_rng(3)
    noisy = (0.01 + 2.0 * np.exp(-np.arange(200) / 30)) * rng.uniform(0.2, 5, size=200)
    rule = Divergence(run(tmp_path, losses(noisy)))
    assert invoke_rule(rule) == [] and rule.evaluation.steps > 0


def test_divergence_parameters(tmp_path):
    trial = run(tmp_path, losses([1.0]))
    rule = Divergence(trial, growth_factor="10", window="3", weight_collections="weights,biases")
    assert (rule.growth_factor, rule.window, rule.weight_collections) == (10.0, 3, ["weights", "biases"])
    for kwargs, message in [({"growth_factor": "1"}, "growth_factor must be a number > 1"),
                            ({"growth_factor": "inf"}, "growth_factor"), ({"window": "0"}, "window must be >= 1")]:
        with pytest.raises(SMDebugValueError, match=message):
            Divergence(trial, **kwargs)


def test_slow_convergence_leaves_a_loss_saved_at_evaluation_steps_only_to_the_training_loss(tmp_path):
    """A converged model's per-batch validation losses, six passes at the noise floor (a Lightning ``val_loss``):
    the first pass came after a whole epoch of training, and batch-to-batch spread is no pass-to-pass noise; the
    budget shows in the training loss, which converged (probe 11 F4)."""
    from smdebug.core.modes import ModeKeys

    rng = np.random.default_rng(0)
    batch_offsets = rng.normal(0, 0.001, 8)  # (the same validation batches at every pass)
    steps = []
    for epoch, level in enumerate([0.0276, 0.0232, 0.0227, 0.0260, 0.0249, 0.0218]):
        for i in range(40):
            t = epoch * 40 + i
            steps.append((ModeKeys.TRAIN, {"loss": 0.025 + 0.12 * np.exp(-t / 15) + rng.normal(0, 0.002)}))
        steps += [(ModeKeys.EVAL, {"val_loss": level + offset}) for offset in batch_offsets]
    trial = run(tmp_path, steps)
    rule = SlowConvergence(trial)
    assert invoke_rule(rule) == [], rule.last_reason
    assert rule.evaluation.steps == 1  # (the training loss was judged)


def test_slow_convergence_says_nothing_of_a_loss_above_where_it_started(tmp_path):
    """A diverged loss (26 at the start, up to 92, then down a little to 87) is not converging slowly but not at
    all: "still falling ... only -36% of the initial loss is gone" misread it (probe 11 W1); LossNotDecreasing and
    Divergence judge it."""
    rng = np.random.default_rng(3)
    values = np.concatenate([np.linspace(26, 92, 60), np.linspace(92, 87, 60)]) + rng.normal(0, 0.3, 120)
    rule = SlowConvergence(run(tmp_path, losses(values)))
    assert invoke_rule(rule) == [], rule.last_reason
    assert rule.evaluation.steps == 1


def test_slow_convergence_says_a_loss_that_barely_moved_is_held_back_not_short_of_training(tmp_path):
    """A loss near where it started all run, up and down, then a last dip (an untrained classifier's ln 2 under a
    learning rate far too high): "still falling when training ended" read as "train longer" (probe 15a F5)."""
    rng = np.random.default_rng(0)
    thirds = (0.695, 0.682, 0.693, 0.663)
    values = np.concatenate([np.linspace(a, b, 40) for a, b in zip(thirds, thirds[1:])]) + rng.normal(0, 0.002, 120)
    rule = SlowConvergence(run(tmp_path, losses(values)))
    assert invoke_rule(rule) == [119]
    assert "loss barely moved over the run" in rule.last_reason and "not falling steadily" in rule.last_reason
    assert "a learning rate far too high or too low" in rule.last_reason, rule.last_reason
    assert "still falling" not in rule.last_reason
