"""What the second held-out batch of the rule-accuracy benchmark (benchmarks/rule_accuracy, rows h2_/b2_) taught
the rules, one behaviour per test, on runs written with the real writer (hand-made values): a plateau a finished run left is no stalled loss (but one it never left is, and live it is reported
when met), a noisy loss is no oscillation (an overshooting optimiser still is), the
micro-batch losses of one step are one curve, a layer unfrozen mid-run was frozen before, and labels all of one
class are the extreme of imbalance, and a sigmoid output that cannot reach its regression targets is an
improper output. (One unit does not decide a layer's death: test_data_rules.py.)"""

import numpy as np

from smdebug.core.modes import ModeKeys
from smdebug.rules.generic import (
    ClassImbalance,
    ImproperOutput,
    LossNotDecreasing,
    OscillatingLoss,
    UnchangedTensor,
    WeightUpdateRatio,
)
from smdebug.rules.rule_invoker import invoke_rule
from smdebug.trials import create_trial

from test_progress_rules import run, write

TRAIN = ModeKeys.TRAIN


def losses(values, name="loss"):
    return [{name: float(v)} for v in values]


# --- LossNotDecreasing: a plateau the run left ----------------------------------------------------------------
def plateau_then(n_flat, after, seed=0):
    """A loss flat at 3.6 (minibatch noise 1%) for ``n_flat`` steps, then ``after`` (a list of values)."""
    rng = np.random.default_rng(seed)
    return list(3.6 * (1 + 0.01 * rng.standard_normal(n_flat))) + list(after)


def test_a_plateau_the_finished_run_left_is_not_reported(tmp_path):
    # 100 flat steps (an LSTM language model at the unigram entropy), then the loss falls to 2.9 and stays
    learned = plateau_then(100, np.linspace(3.6, 2.9, 200)) + [2.9] * 300
    rule = LossNotDecreasing(run(tmp_path / "left", losses(learned)))
    assert invoke_rule(rule) == [] and rule.evaluation.steps > 0
    # the same plateau with no way out is reported, from the first steps the rule judges
    stuck = plateau_then(600, [])
    assert invoke_rule(LossNotDecreasing(run(tmp_path / "stuck", losses(stuck))))[:1] == [49]
    # live (no end marker yet) the future is unknown: the plateau is reported once it has held over half of the run
    # so far (from the first judgeable checks, ~step 40: by step 80), not at the first checks (a slow start that
    # would be forgiven afterwards cannot be live: probe 12c F1)
    write(tmp_path / "live", losses(learned[:80]), close=False)
    live = invoke_rule(LossNotDecreasing(create_trial(str(tmp_path / "live"))), end_step=80)
    assert live and 49 < live[0] <= 2 * 40, live


def test_a_loss_back_at_its_first_value_made_no_progress(tmp_path):
    # blown up within the first steps (lr far too high), back at the chance level at the end: the first
    # window's median is huge, the first save is not -- no progress, reported
    blown = [1.1, 50.0, 1e3, 1e5, 1e7] + [1e8] * 60 + list(np.geomspace(1e8, 1.1, 40)) + [1.1] * 300
    assert invoke_rule(LossNotDecreasing(run(tmp_path, losses(blown)))) != []


# --- OscillatingLoss: noise of two kinds of batches, micro-batches ------------------------------------------
def converging_noise(kind, seed, n=800):
    """A loss converging from 2.3 to 0.6, times per-batch noise of ``kind``."""
    rng = np.random.default_rng(seed)
    level = 0.6 + 1.7 * np.exp(-np.arange(n) / 80)
    if kind == "mixup":  # one mixing weight per batch (Beta(0.4, 0.4)): low when mixed little, high half and half
        return level * (0.4 + 1.2 * (1 - np.abs(2 * rng.beta(0.4, 0.4, n) - 1)))
    if kind == "two groups":  # batches of two kinds, half of each
        return level * np.where(rng.random(n) < 0.5, 0.5, 1.5)
    if kind == "odd batches":  # 3% of the batches 6 times the loss
        return level * np.where(rng.random(n) < 0.03, 6.0, 1.0) * (1 + 0.2 * rng.standard_normal(n))
    return level * rng.gamma(1.2, 1 / 1.2, n)  # a loss of a few rows


def test_a_noisy_loss_is_no_oscillation(tmp_path):
    # block means zigzag by chance when the batches are noisy enough; a move must be 4 standard errors of a
    # block's mean (by the 20% share alone, most of these runs fired)
    for kind in ("mixup", "two groups", "odd batches", "few rows"):
        for seed in range(3):
            rule = OscillatingLoss(run(tmp_path / f"{kind}-{seed}", losses(converging_noise(kind, seed))))
            assert invoke_rule(rule) == [] and rule.evaluation.steps > 0, (kind, seed)
    # an optimiser that overshoots moves whole blocks: blocks of 10 saves alternating high and low, with noise
    rng = np.random.default_rng(0)
    swinging = [(1.0 if (i // 10) % 2 == 0 else 0.5) + 0.05 * rng.standard_normal() for i in range(100)]
    rule = OscillatingLoss(run(tmp_path / "swings", losses(swinging)))
    assert invoke_rule(rule) == [99]
    assert rule.last_reason.startswith("loss swings up and down: 4 moves larger than 0.2")


def test_the_micro_batch_losses_of_a_step_are_one_curve(tmp_path):
    # gradient accumulation over 8 micro-batches of 8 rows: each call's loss is noisy (0.05 to 0.5 around a
    # converging 0.2), their mean per step is not; judged one by one, a call zigzagged by chance
    rng = np.random.default_rng(5)
    steps = []
    for i in range(200):
        level = 0.15 + 0.55 * np.exp(-i / 30)
        steps.append({f"CrossEntropyLoss_output_{k}": level * rng.gamma(1.2, 1 / 1.2) for k in range(8)})
    trial = run(tmp_path, steps, include_regex=["CrossEntropyLoss"])
    rule = OscillatingLoss(trial)
    assert invoke_rule(rule) == [] and rule.evaluation.steps > 0
    # the mean per step swings when every call does
    swing = [{f"CrossEntropyLoss_output_{k}": 1.0 if (i // 10) % 2 == 0 else 0.5 for k in range(3)}
             for i in range(100)]
    rule = OscillatingLoss(run(tmp_path / "swing", swing, include_regex=["CrossEntropyLoss"]))
    assert invoke_rule(rule) == [99]
    assert rule.last_reason.startswith("CrossEntropyLoss_output_0-2 (the mean of the calls of one step) swings")


# --- WeightUpdateRatio, UnchangedTensor: gradual unfreezing ---------------------------------------------------
def test_a_layer_unfrozen_mid_run_was_frozen_before(tmp_path):
    # body frozen for steps 0-4 (no gradient saved while the head has one), then unfrozen: its gradient is
    # saved and it changes
    steps = []
    for i in range(10):
        tensors = {"w/head": np.full((2, 2), 1.0 + i), "gradient/w/head": np.full((2, 2), 0.1),
                   "w/body": np.full((2, 2), 1.0 + max(0, i - 5))}
        if i >= 5:
            tensors["gradient/w/body"] = np.full((2, 2), 0.1)
        steps.append(tensors)
    trial = run(tmp_path / "unfreeze", steps)
    assert invoke_rule(WeightUpdateRatio(trial)) == []
    assert invoke_rule(UnchangedTensor(trial)) == []
    # a layer that gets its gradient at every step and does not change is the fault, frozen or not before
    stuck = [dict(t, **{"gradient/w/body": np.full((2, 2), 0.1)}) for t in steps[:5]]
    trial = run(tmp_path / "stuck", stuck)
    assert invoke_rule(WeightUpdateRatio(trial)) == [1, 2, 3, 4]
    assert invoke_rule(UnchangedTensor(trial)) == [2, 3, 4]


# --- ClassImbalance: one class --------------------------------------------------------------------------------
def test_labels_all_of_one_class_are_the_extreme_of_imbalance(tmp_path):
    # a binary task whose labels a threshold in the wrong units made all 0: the model scores 2 classes
    scores = np.tile([[2.0, -2.0]], (32, 1))
    steps = [(TRAIN, {"labels": np.zeros(32), "predictions": scores}) for _ in range(4)]
    rule = ClassImbalance(run(tmp_path / "one", steps, include_regex=["labels", "predictions"]))
    # 32 and 64 labels: a class at the threshold ratio (1 in 11) could still have been missed by chance
    assert invoke_rule(rule) == [2, 3]
    assert rule.last_reason.startswith("all 128 labels seen so far are class 0, of the 2 classes the model scores")
    # two classes present: the usual ratio test (9:1 is under threshold_imbalance 10)
    labels = np.array([0] * 29 + [1] * 3, dtype=np.float64)
    steps = [(TRAIN, {"labels": labels, "predictions": scores}) for _ in range(20)]
    assert invoke_rule(ClassImbalance(run(tmp_path / "two", steps, include_regex=["labels", "predictions"]))) == []


# --- ImproperOutput: a bounded output against targets out of its range ---------------------------------------
def regression_steps(outputs_at, n_steps=12, rows=32, seed=0):
    """A regression loss's saved inputs: outputs ``outputs_at(step, targets)`` against standardised targets."""
    rng = np.random.default_rng(seed)
    steps = []
    for i in range(n_steps):
        y = rng.standard_normal(rows)
        steps.append({"MSELoss_input_0": outputs_at(i, y).reshape(rows, 1), "MSELoss_input_1": y,
                      "MSELoss_output_0": 1.0})
    return steps


def test_a_sigmoid_output_that_cannot_reach_the_targets(tmp_path):
    # a sigmoid output on standardised targets: the negative half pushes it against 0, values above 1 against 1
    sigmoid = regression_steps(lambda i, y: 1 / (1 + np.exp(-4 * y)))
    rule = ImproperOutput(run(tmp_path / "sigmoid", sigmoid, include_regex=["MSELoss"]))
    assert invoke_rule(rule) == [11]  # judged once the run has ended, at the loss's last save
    assert "never left [0, 1] over the run" in rule.last_reason and "bounded output activation" in rule.last_reason
    # a linear output starts small (all within [-1, 1] at first) and then reaches the targets: no bound
    linear = regression_steps(lambda i, y: 0.05 * (i + 1) * y)
    rule = ImproperOutput(run(tmp_path / "linear", linear, include_regex=["MSELoss"]))
    assert invoke_rule(rule) == [] and rule.evaluation.steps > 0
    # an underfit model predicting near the mean never leaves [-1, 1] either, but it is not pressed against
    # its ends: no bound
    underfit = regression_steps(lambda i, y: 0.3 * y + 0.01 * i)
    assert invoke_rule(ImproperOutput(run(tmp_path / "underfit", underfit, include_regex=["MSELoss"]))) == []
    # live, the run is not over: the outputs may still leave the range
    write(tmp_path / "live", sigmoid, include_regex=["MSELoss"], close=False)
    assert invoke_rule(ImproperOutput(create_trial(str(tmp_path / "live"))), end_step=12) == []
