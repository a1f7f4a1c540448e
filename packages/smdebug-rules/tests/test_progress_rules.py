"""Training-progress rules (WeightUpdateRatio, LossNotDecreasing, Overfit, Overtraining, SimilarAcrossRuns,
StalledTrainingRule, PoorWeightInitialization) on hand-made runs: each fires exactly at the steps where it
should, thresholds are pinned on both sides, parameters arrive as strings and bad ones are refused."""

import os
import time

import numpy as np
import pytest

from smdebug import SaveConfig
from smdebug.core.modes import ModeKeys
from smdebug.exceptions import RuleEvaluationConditionMet, SMDebugValueError
from smdebug.rules.generic import (
    LossNotDecreasing,
    Overfit,
    Overtraining,
    PoorWeightInitialization,
    SimilarAcrossRuns,
    StalledTrainingRule,
    WeightUpdateRatio,
)
from smdebug.rules.rule_invoker import invoke_rule
from smdebug.trials import create_trial

from _hooks import NumpyHook

TRAIN, EVAL = ModeKeys.TRAIN, ModeKeys.EVAL


def write(path, steps, include_regex=None, close=True):
    """Write a run; ``steps`` holds one entry per global step: ``{name: value}`` (no mode) or
    ``(mode, {name: value})``. An empty dict leaves the step unsaved. Values are saved as float64."""
    hook = NumpyHook(out_dir=str(path), save_config=SaveConfig(save_interval=1),
                     include_collections=["weights", "gradients", "losses"], include_regex=include_regex)
    for item in steps:
        mode, tensors = item if isinstance(item, tuple) else (None, item)
        if mode is not None:
            hook.set_mode(mode)
        hook.begin_step()
        for name, value in tensors.items():
            hook.record(name, np.asarray(value, dtype=np.float64))
        hook.end_step()
    if close:
        hook.close()
    else:
        hook.flush()
    return hook


def run(path, steps, include_regex=None, **trial_kwargs):
    write(path, steps, include_regex)
    return create_trial(str(path), **trial_kwargs)


def reason_at(rule, step):
    with pytest.raises(RuleEvaluationConditionMet) as e:
        rule.invoke(step)
    return e.value.reason


# --- WeightUpdateRatio -------------------------------------------------------------------------------------
def test_weight_update_ratio_large_threshold_is_strict(tmp_path):
    # ||w1 - w0|| = ||(30, 40)|| = 50, ||w0|| = 5: ratio exactly 10 with epsilon 0.
    trial = run(tmp_path, [{"w/a": [3, 4]}, {"w/a": [33, 44]}])
    assert invoke_rule(WeightUpdateRatio(trial, epsilon="0")) == []
    assert invoke_rule(WeightUpdateRatio(trial, epsilon="0", large_threshold="9.999")) == [1]
    # epsilon is added to the older weight's norm: the ratio is then just below 10
    assert invoke_rule(WeightUpdateRatio(trial, large_threshold="9.9999999999")) == []
    assert reason_at(WeightUpdateRatio(trial, epsilon="0", large_threshold="9.999"), 1) == (
        "w/a: update/weight ratio 10 > large_threshold 9.999 between steps 0 and 1")


def test_weight_update_ratio_small_threshold_is_strict(tmp_path):
    # ||w1 - w0|| = ||(3, 4)|| = 5, ||w0|| = 5 * 2**30: ratio 2**-30 (about 9.3e-10), exactly
    w0, w1 = [3.0 * 2**30, 4.0 * 2**30], [3.0 * 2**30 + 3, 4.0 * 2**30 + 4]
    short = run(tmp_path / "short", [{"w/a": w0}, {"w/a": w1}])  # (the last save of a finished run)
    assert invoke_rule(WeightUpdateRatio(short)) == [1]  # 9.3e-10 < 1e-8
    assert invoke_rule(WeightUpdateRatio(short, small_threshold=repr(2.0**-30), epsilon="0")) == []
    assert invoke_rule(WeightUpdateRatio(short, small_threshold=repr(2.0**-30 * 1.0001), epsilon="0")) == [1]
    # before the last save, a tiny update is judged at the next one (a warm-up's would grow): unchanged, 0
    trial = run(tmp_path, [{"w/a": w0}, {"w/a": w1}, {"w/a": w1}])
    assert invoke_rule(WeightUpdateRatio(trial)) == [2]
    reason = reason_at(WeightUpdateRatio(trial), 2)
    assert reason == "w/a: update/weight ratio 0 < small_threshold 1e-08 between steps 1 and 2"


def test_weight_update_ratio_num_steps_compares_with_oldest_save_in_reach(tmp_path):
    steps = [{"w/a": [1.0]}, {"w/a": [1.0]}, {"w/a": [20.0]}, {"w/a": [30.0]}, {}, {}, {}, {"w/a": [300.0]}]
    trial = run(tmp_path, steps)
    # previous save: 1->1 (0), 1->20 (19), 20->30 (0.5), 30->300 at step 7 (9)
    assert invoke_rule(WeightUpdateRatio(trial, small_threshold="0")) == [2]
    # num_steps 2: step 2 vs 0 (19), step 3 vs 1 (29); step 7 has no save in [5, 7): skipped
    assert invoke_rule(WeightUpdateRatio(trial, small_threshold="0", num_steps="2")) == [2, 3]
    # num_steps 5: step 7 vs 2 (14)
    assert invoke_rule(WeightUpdateRatio(trial, small_threshold="0", num_steps="5")) == [2, 3, 7]
    assert invoke_rule(WeightUpdateRatio(trial, small_threshold="0", num_steps="")) == [2]  # empty: None


def test_weight_update_ratio_uses_train_steps_when_there_are_any(tmp_path):
    steps = [(TRAIN, {"w/a": [1.0]}), (EVAL, {"w/a": [100.0]}), (TRAIN, {"w/a": [1.5]}), (TRAIN, {"w/a": [1.6]})]
    trial = run(tmp_path, steps)
    # TRAIN steps 0 -> 1 (global 0 -> 2): 0.5; 1 -> 2: 0.0667; the EVAL save is not looked at
    assert invoke_rule(WeightUpdateRatio(trial, large_threshold="0.4")) == [2]
    assert reason_at(WeightUpdateRatio(trial, large_threshold="0.4"), 2) == (
        "w/a: update/weight ratio 0.5 > large_threshold 0.4 between TRAIN steps 0 and 1")
    # num_steps counts TRAIN steps: TRAIN step 2 (global 3) vs TRAIN step 0
    assert invoke_rule(WeightUpdateRatio(trial, large_threshold="0.55", num_steps="2")) == [3]


def test_weight_update_ratio_non_finite_ratio_fires(tmp_path):
    trial = run(tmp_path, [{"w/a": [1.0]}, {"w/a": [np.inf]}])
    assert "ratio is inf" in reason_at(WeightUpdateRatio(trial), 1)


def test_weight_update_ratio_parameters(tmp_path):
    trial = run(tmp_path, [{"w/a": [1.0]}])
    rule = WeightUpdateRatio(trial, num_steps="3", large_threshold="5", small_threshold="0.001", epsilon="0")
    assert (rule.num_steps, rule.large_threshold, rule.small_threshold, rule.epsilon) == (3, 5.0, 0.001, 0.0)
    with pytest.raises(SMDebugValueError, match="num_steps must be >= 1"):
        WeightUpdateRatio(trial, num_steps="0")
    with pytest.raises(SMDebugValueError, match="large_threshold must be a number"):
        WeightUpdateRatio(trial, large_threshold="big")
    with pytest.raises(SMDebugValueError, match="small_threshold .* must be below large_threshold"):
        WeightUpdateRatio(trial, small_threshold="20")
    with pytest.raises(SMDebugValueError, match="epsilon must be >= 0"):
        WeightUpdateRatio(trial, epsilon="-1")


# --- LossNotDecreasing -------------------------------------------------------------------------------------
# At saved step s (first save f = 0, every step saved): windows of w = max(num_steps, (s + 1) // 4) steps;
# now = median over (s - w, s], then = median over (m - w, m] with m = (s + 1) // 2 - 1, first = median of the
# first num_steps steps. Judged from s = 39 on with num_steps 10 (m - w = 9 >= num_steps - 1).
def test_loss_not_decreasing_flat_loss_fires_after_warm_up_and_patience(tmp_path):
    trial = run(tmp_path, [{"loss": 1.0}] * 60)
    assert invoke_rule(LossNotDecreasing(trial, patience="1")) == list(range(39, 60))
    # patience 2 (default): met at s and at the latest judged step <= s - 10
    assert invoke_rule(LossNotDecreasing(trial)) == list(range(49, 60))
    assert invoke_rule(LossNotDecreasing(trial, patience="3")) == list(range(59, 60))
    rule = LossNotDecreasing(trial)
    invoke_rule(rule, end_step=50)
    assert rule.last_reason.startswith(
        "loss did not decrease over the second half of the run so far (steps): median 1 over the 12 steps to "
        "step 24 -> 1 over the 12 steps to step 49 (+0%; tolerance 0%)")
    # a run too short to judge says so
    short = run(tmp_path / "short", [{"loss": 1.0}] * 39)
    rule = LossNotDecreasing(short)
    assert invoke_rule(rule) == [] and rule.evaluation.steps == 0


def test_loss_not_decreasing_tolerance_is_pinned_both_ways(tmp_path):
    # 1.0 for steps 0-19, 1.25 from step 20 on: at s = 39, then = 1.0 (steps 10-19), now = 1.25 (+25%)
    trial = run(tmp_path, [{"loss": 1.0}] * 20 + [{"loss": 1.25}] * 20)
    one = dict(patience="1")
    assert invoke_rule(LossNotDecreasing(trial, diff_percent="25", **one)) == [39]
    assert invoke_rule(LossNotDecreasing(trial, diff_percent="25.01", **one)) == []
    assert invoke_rule(LossNotDecreasing(trial, increase_threshold_percent="25.01", **one)) == []
    assert invoke_rule(LossNotDecreasing(trial, diff_percent="25", increase_threshold_percent="25", **one)) == [39]
    with pytest.raises(SMDebugValueError, match="diff_percent .* increase_threshold_percent"):
        LossNotDecreasing(trial, diff_percent="5", increase_threshold_percent="10")
    # a negative tolerance demands a decrease: 1.0 -> 0.9 is -10 %, and the start (1.0) is 10 % away
    falling = run(tmp_path / "falling", [{"loss": 1.0}] * 20 + [{"loss": 0.9}] * 20)
    assert invoke_rule(LossNotDecreasing(falling, diff_percent="-10", min_progress_percent="10", **one)) == [39]
    assert invoke_rule(LossNotDecreasing(falling, diff_percent="-9.99", min_progress_percent="10", **one)) == []
    assert invoke_rule(LossNotDecreasing(falling, diff_percent="-10", min_progress_percent="9.99", **one)) == []


def test_loss_not_decreasing_progress_since_the_start_keeps_a_converged_loss_quiet(tmp_path):
    # fell from 1.0 to 0.5 in the first steps, flat since: converged, not stuck
    trial = run(tmp_path, [{"loss": 1.0}] * 10 + [{"loss": 0.5}] * 50)
    assert invoke_rule(LossNotDecreasing(trial, patience="1")) == []
    assert invoke_rule(LossNotDecreasing(trial, patience="1", min_progress_percent="50")) == list(range(39, 60))
    assert invoke_rule(LossNotDecreasing(trial, patience="1", min_progress_percent="49.99")) == []


def test_loss_not_decreasing_a_creeping_loss_is_not_decreasing(tmp_path):
    # 2.0 falling by 0.05 % a step: 3 % of its value in 60 steps, far from min_progress_percent's 10 %
    trial = run(tmp_path, [{"loss": 2.0 * (1 - 0.0005 * i)} for i in range(60)])
    rule = LossNotDecreasing(trial, patience="1")
    assert invoke_rule(rule) == list(range(39, 60))
    assert rule.last_reason.startswith("loss barely decreased over the second half of the run so far (steps)")
    assert "at this pace min_progress_percent takes longer than the 60 steps so far" in rule.last_reason
    # the pace demanded follows min_progress_percent: 0 demands none, 2 % is met by this loss
    assert invoke_rule(LossNotDecreasing(trial, patience="1", min_progress_percent="0")) == []
    assert invoke_rule(LossNotDecreasing(trial, patience="1", min_progress_percent="2")) == []
    # a positive tolerance allows the loss even to rise a little: a slow decrease is allowed too
    assert invoke_rule(LossNotDecreasing(trial, patience="1", diff_percent="1")) == []
    # 0.3 % a step makes 10 % within the 40 steps of the first judged window: decreasing
    faster = run(tmp_path / "faster", [{"loss": 2.0 * (1 - 0.003 * i)} for i in range(60)])
    assert invoke_rule(LossNotDecreasing(faster, patience="1")) == []


def test_loss_not_decreasing_judges_the_pace_of_training_losses_only(tmp_path):
    creeping = [2.0 * (1 - 0.0005 * i) for i in range(60)]
    # an evaluation set's metric of a run without modes (XGBoost's validation-logloss): a validation curve
    # nearing a high floor is a hard problem, not a loss that fails to decrease
    hook = NumpyHook(out_dir=str(tmp_path / "boosted"), save_config=SaveConfig(save_interval=1),
                     include_collections=["losses", "metrics"])
    hook.get_collection("losses").include("validation-logloss")
    hook.get_collection("metrics").include("validation-logloss")
    for value in creeping:
        hook.begin_step()
        hook.record("validation-logloss", np.asarray(value))
        hook.end_step()
    hook.close()
    rule = LossNotDecreasing(create_trial(str(tmp_path / "boosted")), patience="1")
    assert invoke_rule(rule) == [] and rule.evaluation.steps > 0
    # a validation loss (EVAL mode) likewise; the same curve as a training loss is judged
    evaluated = run(tmp_path / "eval", [(TRAIN, {})] + [(EVAL, {"loss": v}) for v in creeping])
    assert invoke_rule(LossNotDecreasing(evaluated, patience="1", mode="EVAL")) == []
    trained = run(tmp_path / "train", [(TRAIN, {"loss": v}) for v in creeping])
    assert invoke_rule(LossNotDecreasing(trained, patience="1")) == list(range(39, 60))


def test_loss_not_decreasing_is_robust_to_minibatch_noise(tmp_path):
    rng = np.random.default_rng(0)
    steps = np.arange(200)
    noise = rng.uniform(0.5, 1.5, size=200)  # every batch up to 50 % off
    learning = run(tmp_path / "learning", [{"loss": v} for v in (0.1 + 2.0 * np.exp(-steps / 40)) * noise])
    assert invoke_rule(LossNotDecreasing(learning)) == []
    stuck = run(tmp_path / "stuck", [{"loss": v} for v in 2.0 * noise])
    assert 49 <= invoke_rule(LossNotDecreasing(stuck))[0] < 70
    rising = run(tmp_path / "rising", [{"loss": v} for v in (1.0 + steps / 50) * noise])
    assert 49 <= invoke_rule(LossNotDecreasing(rising))[0] < 70


def test_loss_not_decreasing_sparse_saves_are_not_judged(tmp_path):
    # saved every 25 steps: no window of w steps holds 3 saves until the run is long
    trial = run(tmp_path, [{"loss": 1.0} if i % 25 == 0 else {} for i in range(200)])
    rule = LossNotDecreasing(trial)
    assert invoke_rule(rule) == [] and rule.evaluation.steps == 0


def test_loss_not_decreasing_without_losses_inspects_every_scalar(tmp_path):
    steps = [{"metric": 1.0, "w/vector": [1.0, 2.0]}] * 50
    trial = run(tmp_path, steps, include_regex=["metric"])
    assert trial.tensor_names(collection="losses") == []
    assert invoke_rule(LossNotDecreasing(trial)) == list(range(49, 50))
    # an explicit selection that finds nothing is not widened to all scalars
    assert invoke_rule(LossNotDecreasing(trial, tensor_regex="no_such_loss")) == []


def test_loss_not_decreasing_negative_losses(tmp_path):
    # -1 then -1.25 from step 20: a decrease of 25 % of |loss|
    trial = run(tmp_path, [{"loss": -1.0}] * 20 + [{"loss": -1.25}] * 20)
    assert invoke_rule(LossNotDecreasing(trial, patience="1")) == []
    assert invoke_rule(LossNotDecreasing(trial, patience="1", diff_percent="-25", min_progress_percent="25")) == [39]
    assert invoke_rule(LossNotDecreasing(trial, patience="1", diff_percent="-24.99", min_progress_percent="25")) == []
    assert invoke_rule(LossNotDecreasing(trial, patience="1", diff_percent="-25", min_progress_percent="24.99")) == []


def test_loss_not_decreasing_modes(tmp_path):
    steps = []
    for i in range(50):
        steps.append((TRAIN, {"loss": 2.0 * 0.95 ** i}))
        steps.append((EVAL, {"loss": 2.0}))
    trial = run(tmp_path, steps)
    assert invoke_rule(LossNotDecreasing(trial)) == []  # automatic: TRAIN, which decreases
    assert invoke_rule(LossNotDecreasing(trial, mode="TRAIN")) == []
    # EVAL step 49 (global 99) is the first with patience 2
    assert invoke_rule(LossNotDecreasing(trial, mode="eval")) == [99]
    rule = LossNotDecreasing(trial, mode="eval")
    invoke_rule(rule)
    assert "(EVAL steps)" in rule.last_reason


def test_loss_not_decreasing_selection(tmp_path):
    steps = [{"loss": 2.0 * 0.95 ** i, "w/acc": 1.0} for i in range(50)]
    trial = run(tmp_path, steps, include_regex=["acc"])
    assert invoke_rule(LossNotDecreasing(trial)) == []
    assert invoke_rule(LossNotDecreasing(trial, tensor_regex="acc")) == [49]  # + losses
    assert invoke_rule(LossNotDecreasing(trial, tensor_regex="acc", use_losses_collection="false")) == [49]
    assert invoke_rule(LossNotDecreasing(trial, collection_names="gradients", use_losses_collection="0")) == []


def test_loss_not_decreasing_parameters(tmp_path):
    trial = run(tmp_path, [{"loss": 1.0}])
    rule = LossNotDecreasing(trial, collection_names="a,b", tensor_regex="x", use_losses_collection="false",
                             num_steps="3", diff_percent="0.5", mode="train", min_progress_percent="5",
                             patience="4")
    assert (rule.collection_names, rule.tensor_regex, rule.use_losses_collection) == (["a", "b"], ["x"], False)
    assert (rule.num_steps, rule.tolerance_percent, rule.mode) == (3, 0.5, TRAIN)
    assert (rule.min_progress_percent, rule.patience) == (5.0, 4)
    for kwargs, message in [({"num_steps": "0"}, "num_steps must be >= 1"),
                            ({"num_steps": "ten"}, "num_steps must be an integer"),
                            ({"diff_percent": "lots"}, "diff_percent must be a number"),
                            ({"diff_percent": "inf"}, "diff_percent must be a finite number"),
                            ({"use_losses_collection": "maybe"}, "use_losses_collection must be true or false"),
                            ({"mode": "testing"}, "mode must be one of"),
                            ({"min_progress_percent": "-1"}, "min_progress_percent"),
                            ({"patience": "0"}, "patience must be >= 1"),
                            ({"tensor_regex": "(["}, "tensor_regex")]:
        with pytest.raises(SMDebugValueError, match=message):
            LossNotDecreasing(trial, **kwargs)


# --- Overfit -----------------------------------------------------------------------------------------------
def evaluations(train, val):
    """Evaluation k: a TRAIN save of ``train[k]`` (global step 2k) then an EVAL save of ``val[k]`` (2k + 1)."""
    steps = []
    for t, v in zip(train, val):
        steps += [(TRAIN, {"loss": t}), (EVAL, {"loss": v})]
    return steps


def test_overfit_thresholds_are_pinned_both_ways(tmp_path):
    # window 1: best validation 0.5 at k=1; k=2: 0.75 (+50%), training 0.25 (gap 2.0); k=3: 1.0, 0.125 (gap 7)
    trial = run(tmp_path, evaluations([1.0, 0.5, 0.25, 0.125], [1.0, 0.5, 0.75, 1.0]))
    w1 = dict(window="1")
    assert invoke_rule(Overfit(trial, rise_percent="49.99", ratio_threshold="1.99", **w1)) == [5, 7]
    assert invoke_rule(Overfit(trial, rise_percent="50", ratio_threshold="1.99", **w1)) == [7]  # not above +50%
    assert invoke_rule(Overfit(trial, rise_percent="49.99", ratio_threshold="2", **w1)) == [7]  # gap 2 not above 2
    assert invoke_rule(Overfit(trial, rise_percent="49.99", ratio_threshold="7", **w1)) == []
    assert invoke_rule(Overfit(trial, rise_percent="49.99", ratio_threshold="1.99", patience="2", **w1)) == [7]
    assert invoke_rule(Overfit(trial, rise_percent="49.99", ratio_threshold="1.99", start_step="6", **w1)) == [7]
    rule = Overfit(trial, rise_percent="49.99", ratio_threshold="1.99", **w1)
    invoke_rule(rule)
    assert rule.last_reason.startswith("loss: overfitting: median validation loss 0.5 at its best (step 3) -> 1 "
                                       "(+100.0%, rise_percent 49.99) while the median training loss fell 0.5 -> 0.125")
    # the defaults need 2 * window = 6 evaluations; a run that ended after 4 is judged with medians of 2
    # (V .75 .625 .875: +40% but a gap of 3.7, and 4 evaluations are too few for the trend test; probe 14b F6)
    rule = Overfit(trial)
    assert invoke_rule(rule) == [] and rule.evaluation.steps == 1


def test_overfit_needs_the_training_loss_to_keep_falling(tmp_path):
    trial = run(tmp_path, evaluations([1.0, 0.5, 0.5, 0.5], [1.0, 0.5, 0.75, 1.0]))
    assert invoke_rule(Overfit(trial, window="1", rise_percent="0", ratio_threshold="0")) == []


def test_overfit_defaults_on_a_memorising_curve(tmp_path):
    train = [1.0, 0.5, 0.1, 0.05, 0.01, 0.005, 0.001, 0.0005]
    val = [1.0, 0.8, 0.6, 0.6, 0.7, 0.8, 0.9, 1.0]
    # medians of 3: V = .8 .6 .6 .6 .7 .8 from k = 2; best .6 (k = 3); k = 5: .7 > .66, T .01 < .1, gap 69
    assert invoke_rule(Overfit(run(tmp_path / "memorising", evaluations(train, val)))) == [11, 13, 15]
    # a healthy run: validation above training (even 5-fold) but still falling
    healthy_val = [1.2, 0.9, 0.7, 0.5, 0.45, 0.4, 0.38, 0.36]
    assert invoke_rule(Overfit(run(tmp_path / "healthy", evaluations(train, healthy_val)))) == []


def test_overfit_multi_step_eval_pass_uses_the_running_mean(tmp_path):
    steps = [(TRAIN, {"loss": 1.0}), (EVAL, {"loss": 0.5}), (TRAIN, {"loss": 0.5}), (EVAL, {"loss": 0.5}),
             (EVAL, {"loss": 1.5}), (TRAIN, {"loss": 0.25}), (EVAL, {"loss": 0.75})]
    trial = run(tmp_path, steps)
    # (validation, training): (0.5, 1) at 1, (0.5, 0.5) at 3, (running mean 1.0, 0.5) at 4, (0.75, 0.25) at 6
    # (a last evaluation back at 0.5, its best, would make the rise at 4 a transient the finished run left)
    assert invoke_rule(Overfit(trial, window="1", rise_percent="0", ratio_threshold="0")) == [4, 6]


def test_overfit_skips_evaluations_without_training_loss(tmp_path):
    steps = [(EVAL, {"loss": 5.0}), (TRAIN, {"loss": 1.0}), (EVAL, {"loss": 1.0}), (TRAIN, {"loss": 0.5}),
             (EVAL, {"loss": 5.0})]
    trial = run(tmp_path, steps)
    assert invoke_rule(Overfit(trial, window="1", rise_percent="0", ratio_threshold="0")) == [4]
    # runs without modes never have EVAL losses
    rule = Overfit(run(tmp_path / "plain", [{"loss": 1.0}, {"loss": 9.0}]))
    assert invoke_rule(rule) == [] and rule.evaluation.steps == 0


def test_overfit_tensor_regex(tmp_path):
    steps = evaluations([1.0, 0.5, 0.25], [1.0, 0.5, 0.75])
    steps = [(mode, {"w/other": v["loss"]}) for mode, v in steps]
    trial = run(tmp_path, steps, include_regex=["other"])
    assert invoke_rule(Overfit(trial, tensor_regex="w/other", window="1", rise_percent="0", ratio_threshold="0")) == [5]


def test_overfit_sustained_rise_is_judged_by_trend_significance(tmp_path):
    # window 1; best validation 0.5 at k = 1, then +0.05 at each evaluation while training falls in order:
    # validation never 21 times training (ratio_threshold); the evaluations from the best on are in perfect
    # order, n of them giving Kendall's one-sided p 0.014 (n = 5), 0.0043 (n = 6)
    train = [1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3]
    val = [1.0, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8]
    trial = run(tmp_path, evaluations(train, val))
    w1 = dict(window="1")
    assert invoke_rule(Overfit(trial, **w1)) == [13, 15]  # k = 6: n = 6
    assert invoke_rule(Overfit(trial, significance="0.015", **w1)) == [11, 13, 15]  # k = 5: n = 5
    assert invoke_rule(Overfit(trial, significance="0.004", **w1)) == [15]  # n = 7: p 0.0013
    assert invoke_rule(Overfit(trial, significance="0", **w1)) == []  # the gap condition alone: not met
    rule = Overfit(trial, **w1)
    invoke_rule(rule)
    assert rule.last_reason.startswith("loss: overfitting: median validation loss 0.5 at its best (step 3) -> 0.8 "
                                       "(+60.0%, rise_percent 10; no noise per evaluation) ")
    assert ("while the median training loss fell 0.9 -> 0.3: over the 7 evaluations from the best median's on, "
            "validation rose and training fell steadily (trend p-values 0.0013 and 0.0013 <= significance 0.01)"
            in rule.last_reason)
    # the same rise with a training loss that does not fall in order is not judged a trend of overfitting
    flat = [1.0, 0.5, 0.5, 0.49, 0.5, 0.49, 0.5, 0.49]
    assert invoke_rule(Overfit(run(tmp_path / "flat", evaluations(flat, val)), **w1)) == []


def test_overfit_sustained_rise_must_last_as_long_as_the_descent(tmp_path):
    # best at k = 3 (4 evaluations up to it); the rise after it is judged from k = 3 + 4 on
    train = [1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2]
    val = [1.0, 0.8, 0.6, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75]
    trial = run(tmp_path, evaluations(train, val))
    assert invoke_rule(Overfit(trial, window="1", significance="0.015")) == [15, 17]


def test_overfit_fires_when_validation_never_improved_while_training_converged(tmp_path):
    # window 1: validation flat (no noise: any improvement would count) at the level of the first training
    # loss, training falling to a tenth of it by k = 5
    train = [1.0, 0.8, 0.5, 0.3, 0.2, 0.09, 0.05]
    trial = run(tmp_path, evaluations(train, [1.0] * 7))
    w1 = dict(window="1")
    assert invoke_rule(Overfit(trial, **w1)) == [11, 13]
    assert invoke_rule(Overfit(trial, train_progress_percent="95", **w1)) == [13]
    assert invoke_rule(Overfit(trial, never_improved="false", **w1)) == []
    rule = Overfit(trial, **w1)
    invoke_rule(rule)
    assert rule.last_reason.startswith(
        "loss: no generalisation: the validation loss never improved: median 1 at the first evaluations (step 1), "
        "its lowest, and never below the training loss the model "
        "started from (1), while the median training loss fell to 0.05 (-95.0%, train_progress_percent 90)")
    # a validation loss below the loss the model started from: it learned something that carries over
    assert invoke_rule(Overfit(run(tmp_path / "below", evaluations(train, [0.99] * 7)), **w1)) == []
    # a validation loss that improved (beyond its noise: 0 here) did generalise
    improved = [1.0, 1.0, 1.0, 1.0, 1.0, 0.98, 0.98]
    assert invoke_rule(Overfit(run(tmp_path / "improved", evaluations(train, improved)), **w1)) == []
    # the loss the model started from is its first training save, or the mean before the first evaluation
    # if higher (2 saves before it: 1.0 then 3.0, mean 2.0 above a validation flat at 1.5)
    steps = [(TRAIN, {"loss": 1.0})] + evaluations([3.0] + train[1:], [1.5] * 7)
    assert invoke_rule(Overfit(run(tmp_path / "mean", steps), **w1)) == []


def test_overfit_parameters(tmp_path):
    trial = run(tmp_path, [{"loss": 1.0}])
    rule = Overfit(trial, tensor_regex="a,b", start_step="3", patience="2", ratio_threshold="0.5", window="4",
                   rise_percent="5")
    assert (rule.tensor_regex, rule.start_step, rule.patience, rule.ratio_threshold) == (["a", "b"], 3, 2, 0.5)
    assert (rule.window, rule.rise_percent) == (4, 5.0)
    assert (Overfit(trial).ratio_threshold, Overfit(trial).window, Overfit(trial).rise_percent) == (20.0, 3, 10.0)
    rule = Overfit(trial, significance="0.05", never_improved="false", train_progress_percent="50")
    assert (rule.significance, rule.never_improved, rule.train_progress_percent) == (0.05, False, 50.0)
    assert (Overfit(trial).significance, Overfit(trial).never_improved, Overfit(trial).train_progress_percent) == (
        0.01, True, 90.0)
    for kwargs, message in [({"patience": "0"}, "patience must be >= 1"), ({"start_step": "-1"}, "start_step must be >= 0"),
                            ({"ratio_threshold": "ten percent"}, "ratio_threshold must be a number"),
                            ({"window": "0"}, "window must be >= 1"), ({"rise_percent": "-1"}, "rise_percent"),
                            ({"significance": "0.6"}, "significance"), ({"significance": "-0.01"}, "significance"),
                            ({"never_improved": "maybe"}, "never_improved"),
                            ({"train_progress_percent": "101"}, "train_progress_percent")]:
        with pytest.raises(SMDebugValueError, match=message):
            Overfit(trial, **kwargs)


# --- Overtraining ------------------------------------------------------------------------------------------
TRAINING = [1.0, 0.5, 0.25, 0.2, 0.125, 0.05, 0.04, 0.03]
VALIDATION = [1.0, 0.5, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6]  # best at evaluation 1 (global step 3)


def test_overtraining_validation_plateau_while_training_goes_on(tmp_path):
    trial = run(tmp_path, evaluations(TRAINING, VALIDATION))
    w1 = dict(window_train="1", window_validation="1", patience_validation="3")
    # k = 4 (global 9): 3 evaluations without improvement; training 0.125 = 0.5 * (1 - 75 %)
    assert invoke_rule(Overtraining(trial, train_progress_percent="75", **w1)) == [9, 11, 13, 15]
    assert invoke_rule(Overtraining(trial, train_progress_percent="75.01", **w1)) == [11, 13, 15]
    assert invoke_rule(Overtraining(trial, **w1)) == [13, 15]  # default 90 %: 0.04 <= 0.05
    assert invoke_rule(Overtraining(trial, train_progress_percent="75", window_train="1", window_validation="1",
                                    patience_validation="4")) == [11, 13, 15]
    rule = Overtraining(trial, **w1)
    invoke_rule(rule)
    assert rule.last_reason == ("loss: validation loss has not improved by 1% for 6 evaluations (best median 0.5 at "
                                "EVAL step 1, after TRAIN step 1; now 0.6 (+20.0%); patience_validation 3) while the "
                                "training loss went on falling "
                                "(0.5 -> 0.03, medians of 1 saves)")
    # a validation loss still improving, by at least min_delta_percent of its best, never fires
    slow = [1.0 * 0.98 ** k for k in range(8)]
    assert invoke_rule(Overtraining(run(tmp_path / "slow", evaluations(TRAINING, slow)), **w1)) == []
    assert invoke_rule(Overtraining(run(tmp_path / "slow2", evaluations(TRAINING, slow)), min_delta_percent="50",
                                    **w1))


def test_overtraining_training_loss_alone_only_when_asked(tmp_path):
    values = [2.0, 1.75, 1.75, 1.625, 1.5, 1.5, 1.5, 1.5]
    trial = run(tmp_path, [{"loss": v} for v in values])  # no modes: training losses
    assert invoke_rule(Overtraining(trial, window_train="1", patience_train="2")) == []  # judge_training off
    on = dict(window_train="1", judge_training="true", min_delta_percent="0")
    # delta 0.25 (absolute): improvements at 1 (by exactly 0.25) and 4 (1.75 -> 1.5); 1.625 is not one
    assert invoke_rule(Overtraining(trial, patience_train="2", delta="0.25", **on)) == [3, 6, 7]
    assert invoke_rule(Overtraining(trial, patience_train="2", delta="0", **on)) == [6, 7]
    assert invoke_rule(Overtraining(trial, patience_train="3", delta="0.25", **on)) == [7]
    rule = Overtraining(trial, patience_train="2", delta="0.25", **on)
    invoke_rule(rule, end_step=4)
    assert rule.last_reason == ("loss: training loss has not improved by 0% for 2 blocks of 1 saves (best median 1.75 "
                                "at step 1; patience_train 2)")


def test_overtraining_parameters(tmp_path):
    trial = run(tmp_path, [{"loss": 1.0}])
    rule = Overtraining(trial, patience_train="2", patience_validation="4", delta="0.5", min_delta_percent="3",
                        window_train="5", window_validation="2", train_progress_percent="60", judge_training="1")
    assert (rule.patience_train, rule.patience_validation, rule.delta) == (2, 4, 0.5)
    assert (rule.min_delta_percent, rule.window_train, rule.window_validation) == (3.0, 5, 2)
    assert (rule.train_progress_percent, rule.judge_training) == (60.0, True)
    for kwargs, message in [({"patience_train": "0"}, "patience_train must be >= 1"),
                            ({"patience_validation": "1.5"}, "patience_validation must be an integer"),
                            ({"delta": "-0.1"}, "delta must be a finite number >= 0"),
                            ({"min_delta_percent": "-1"}, "min_delta_percent"),
                            ({"train_progress_percent": "101"}, "train_progress_percent"),
                            ({"window_train": "0"}, "window_train must be >= 1")]:
        with pytest.raises(SMDebugValueError, match=message):
            Overtraining(trial, **kwargs)


# --- SimilarAcrossRuns -------------------------------------------------------------------------------------
def test_similar_across_runs_exact_by_default(tmp_path):
    steps = [{"w/a": [1.0, 2.0], "gradient/w/a": [0.5, np.nan]} for _ in range(4)]
    base = run(tmp_path / "base", steps)
    same = run(tmp_path / "same", steps)
    changed = [dict(s) for s in steps]
    changed[2] = {"w/a": [1.0, 2.0 + 1e-12], "gradient/w/a": [0.5, np.nan]}
    other = run(tmp_path / "other", changed)
    assert invoke_rule(SimilarAcrossRuns(base, other_trials=[same])) == []  # NaN matches NaN
    assert invoke_rule(SimilarAcrossRuns(base, other_trials=[same, other])) == [2]
    assert invoke_rule(SimilarAcrossRuns(base, other_trials=str(tmp_path / "other"))) == [2]  # a path
    assert reason_at(SimilarAcrossRuns(base, other_trials=[other]), 2) == (
        "w/a at step 2 differs from run other: 1 of 2 values differ (largest difference 1e-12)")
    # only the chosen tensors are compared
    assert invoke_rule(SimilarAcrossRuns(base, collection_names="gradients", other_trials=[other])) == []
    assert invoke_rule(SimilarAcrossRuns(base, tensor_regex="^w/", other_trials=[other])) == [2]


def test_similar_across_runs_tolerances(tmp_path):
    base = run(tmp_path / "base", [{"w/a": [1.5]}])
    other = run(tmp_path / "other", [{"w/a": [1.0]}])
    # |a - b| <= atol + rtol * |b|, b being the other run's value
    assert invoke_rule(SimilarAcrossRuns(base, atol="0.5", other_trials=[other])) == []
    assert invoke_rule(SimilarAcrossRuns(base, atol="0.4999", other_trials=[other])) == [0]
    assert invoke_rule(SimilarAcrossRuns(base, rtol="0.5", other_trials=[other])) == []
    assert invoke_rule(SimilarAcrossRuns(base, rtol="0.4999", other_trials=[other])) == [0]
    assert invoke_rule(SimilarAcrossRuns(base, rtol="0.25", atol="0.25", other_trials=[other])) == []


def test_similar_across_runs_shapes_missing_tensors_and_shorter_runs(tmp_path):
    base = run(tmp_path / "base", [{"w/a": [1.0], "w/b": [1.0]}] * 4)
    other = run(tmp_path / "other", [{"w/a": [1.0]}, {"w/a": [1.0, 1.0]}, {"w/a": [1.0]}])
    # w/b is missing from the other run; it has no step 3; step 1 differs in shape
    assert invoke_rule(SimilarAcrossRuns(base, other_trials=[other])) == [1]
    assert reason_at(SimilarAcrossRuns(base, other_trials=[other]), 1) == (
        "w/a at step 1 differs from run other: shape (1,) vs (2,)")


def test_similar_across_runs_matches_steps_by_mode(tmp_path):
    steps = [(TRAIN, {"w/a": [1.0]}), (TRAIN, {"w/a": [2.0]}), (EVAL, {"w/a": [2.0]}), (TRAIN, {"w/a": [3.0]})]
    base = run(tmp_path / "base", steps)
    # the other run evaluated once more at the start: same mode steps, other global steps
    other = run(tmp_path / "other", [(EVAL, {"w/a": [0.0]})] + steps)
    assert invoke_rule(SimilarAcrossRuns(other, other_trials=[base])) == [0]  # EVAL step 0 differs
    assert invoke_rule(SimilarAcrossRuns(other, other_trials=[base]), start_step=1) == []
    assert reason_at(SimilarAcrossRuns(base, other_trials=[other]), 2) == (
        "w/a at EVAL step 0 differs from run other: 1 of 1 values differ (largest difference 2)")


def test_similar_across_runs_parameters(tmp_path):
    base = run(tmp_path, [{"w/a": [1.0]}])
    with pytest.raises(SMDebugValueError, match="other_trials is required"):
        SimilarAcrossRuns(base)
    with pytest.raises(SMDebugValueError, match="atol must be >= 0"):
        SimilarAcrossRuns(base, atol="-1", other_trials=[base])
    with pytest.raises(SMDebugValueError, match="rtol must be a number"):
        SimilarAcrossRuns(base, rtol="close", other_trials=[base])


# --- StalledTrainingRule -----------------------------------------------------------------------------------
def test_stalled_training_check_idle_fires_once_per_stall(tmp_path):
    hook = write(tmp_path, [{"w/a": [1.0]}] * 3, close=False)
    trial = create_trial(str(tmp_path))
    rule = StalledTrainingRule(trial, threshold="0.3")
    assert rule.check_idle() is None
    time.sleep(0.35)
    reason = rule.check_idle()
    assert reason.startswith("no new step for 0.") and reason.endswith("s after step 2 (threshold 0.3 s)")
    assert rule.check_idle() is None  # reported once
    hook.begin_step()
    hook.record("w/a", np.ones(1))
    hook.end_step()
    hook.flush()
    assert rule.check_idle() is None  # progress
    time.sleep(0.35)
    assert "after step 3" in rule.check_idle()
    hook.close()
    time.sleep(0.35)
    assert rule.check_idle() is None  # training ended


def test_stalled_training_uses_the_age_of_the_newest_index_file(tmp_path):
    write(tmp_path, [{"w/a": [1.0]}] * 2, close=False)
    hour_ago = time.time() - 3600
    for folder, _, files in os.walk(tmp_path / "index"):
        for name in files:
            os.utime(os.path.join(folder, name), (hour_ago, hour_ago))
    trial = create_trial(str(tmp_path))
    assert StalledTrainingRule(trial, threshold="3590").check_idle().startswith("no new step for 360")
    assert StalledTrainingRule(trial, threshold="3610").check_idle() is None


def test_stalled_training_never_fires_on_a_finished_run(tmp_path):
    trial = run(tmp_path, [{"w/a": [1.0]}] * 2)
    rule = StalledTrainingRule(trial, threshold="0.01")
    time.sleep(0.05)
    assert rule.check_idle() is None
    assert invoke_rule(rule) == []


def test_stalled_training_invoke_waits_at_most_threshold(tmp_path):
    write(tmp_path, [{"w/a": [1.0]}, {}, {"w/a": [1.0]}], close=False)  # step 1 not saved
    trial = create_trial(str(tmp_path), poll_interval=0.05)
    rule = StalledTrainingRule(trial, threshold="0.5")
    start = time.monotonic()
    assert invoke_rule(rule, end_step=4) == [3]
    assert 0.4 < time.monotonic() - start < 3
    assert rule.last_reason.endswith("after step 2 (threshold 0.5 s)")


def test_stalled_training_parameters(tmp_path):
    trial = run(tmp_path, [{"w/a": [1.0]}])
    rule = StalledTrainingRule(trial, threshold="60", stop_training_on_fire="true", training_job_name_prefix="job-1")
    assert (rule.threshold, rule.stop_training_on_fire, rule.training_job_name_prefix) == (60.0, True, "job-1")
    assert StalledTrainingRule(trial).threshold == 1800 and StalledTrainingRule(trial).stop_training_on_fire is False
    with pytest.raises(SMDebugValueError, match="threshold must be a positive number"):
        StalledTrainingRule(trial, threshold="0")
    with pytest.raises(SMDebugValueError, match="stop_training_on_fire must be true or false"):
        StalledTrainingRule(trial, stop_training_on_fire="sometimes")


# --- PoorWeightInitialization ------------------------------------------------------------------------------
def test_poor_weight_initialization_activation_variance_ratio_per_layer(tmp_path):
    # variances 1 and 16; a tensor not matching the regex is ignored
    step = {"a_relu_input": [-1.0, 1.0], "b_relu_input": [-4.0, 4.0], "c_tanh_input": [0.0, 1000.0]}
    trial = run(tmp_path, [step] * 3, include_regex=["_input"])
    assert invoke_rule(PoorWeightInitialization(trial, threshold="16")) == []
    assert invoke_rule(PoorWeightInitialization(trial, threshold="15.99")) == [0, 1, 2]
    assert invoke_rule(PoorWeightInitialization(trial, threshold="15.99", steps="2")) == [0, 1]  # first 2 steps
    assert invoke_rule(PoorWeightInitialization(trial)) == []  # default threshold 25
    assert reason_at(PoorWeightInitialization(trial, threshold="10"), 0) == (
        "activation inputs: variance ratio 16 over 2 layers (16 per layer) > threshold 10 at step 0 "
        "(b_relu_input: 16, a_relu_input: 1)")
    assert invoke_rule(PoorWeightInitialization(trial, activation_inputs_regex="tanh_input|a_relu")) == [0, 1, 2]
    # three layers, variances 1, 4, 16: 4 per layer (PyTorch's default weights alone shrink it 3-fold per layer)
    step3 = {"a_relu_input": [-1.0, 1.0], "b_relu_input": [-2.0, 2.0], "c_relu_input": [-4.0, 4.0]}
    trial3 = run(tmp_path / "three", [step3], include_regex=["_input"])
    assert invoke_rule(PoorWeightInitialization(trial3)) == []
    assert invoke_rule(PoorWeightInitialization(trial3, threshold="4")) == []
    assert invoke_rule(PoorWeightInitialization(trial3, threshold="3.99")) == [0]


def test_poor_weight_initialization_gradient_spread(tmp_path):
    # spreads (5th-95th percentile): w/a (0.001, 0.003) -> 0.0018; w/b (-5, 5) -> 9; 1-D biases are not judged
    steps = [{"gradient/w/a": [[0.001, 0.003]], "gradient/w/b": [[5.0, -5.0]], "gradient/w/bias": [0.0, 0.0]}] * 2
    trial = run(tmp_path, steps)
    assert invoke_rule(PoorWeightInitialization(trial, relative_range="0.00019")) == []  # 0.0018 / 9 = 0.0002
    assert invoke_rule(PoorWeightInitialization(trial, relative_range="0.00021")) == [0, 1]
    assert invoke_rule(PoorWeightInitialization(trial)) == [0, 1]  # default relative_range 0.001 > 0.0002
    assert invoke_rule(PoorWeightInitialization(trial, relative_range="0", distribution_range="0.0019")) == [0, 1]
    assert reason_at(PoorWeightInitialization(trial, relative_range="0", distribution_range="0.0019"), 1) == (
        "gradients: gradient/w/a spans only 0.0018 between its 5th and 95th percentiles "
        "(< distribution_range 0.0019) at step 1")


def test_poor_weight_initialization_gradient_rows_and_constant_gradients(tmp_path):
    # an embedding: rows of tokens absent from the batch get no gradient and are left out of its spread
    embedding = np.zeros((10, 3))
    embedding[4] = [1.0, 2.0, 3.0]
    trial = run(tmp_path, [{"gradient/w/emb": embedding, "gradient/w/out": [[-2.0, 2.0]]}])
    assert invoke_rule(PoorWeightInitialization(trial)) == []
    # likewise the columns of input units off for the whole batch (3 of the 4 ReLUs of a squeeze-and-excitation
    # bottleneck): the exact zeros say nothing of the initialisation, the one live column is judged
    gate = np.zeros((16, 4))
    gate[:, 1] = np.linspace(-0.0025, 0.0025, 16)  # spread 0.0045 = 0.00125 x 3.6; with the zeros, 0.0029
    trial = run(tmp_path / "gate", [{"gradient/w/gate": gate, "gradient/w/out": [[-2.0, 2.0]]}])
    assert invoke_rule(PoorWeightInitialization(trial)) == []
    # every weight gradient constant (a constant initialisation: every unit gets the same gradient)
    trial = run(tmp_path / "constant", [{"gradient/w/a": np.full((3, 3), 0.5), "gradient/w/b": np.zeros((2, 2))}])
    rule = PoorWeightInitialization(trial)
    assert invoke_rule(rule) == [0] and "every weight gradient (2 tensors) is constant" in rule.last_reason


def test_poor_weight_initialization_loss_patience(tmp_path):
    values = [1.0, 0.9, 1.0, 1.1, 1.0, 1.2, 1.0, 1.0, 1.0, 1.0]
    trial = run(tmp_path, [{"loss": v} for v in values])
    assert invoke_rule(PoorWeightInitialization(trial, patience="2")) == [3, 4, 5, 6, 7, 8, 9]
    assert invoke_rule(PoorWeightInitialization(trial, patience="4")) == [5, 6, 7, 8, 9]
    assert invoke_rule(PoorWeightInitialization(trial, patience="2", steps="5")) == [3, 4]
    assert invoke_rule(PoorWeightInitialization(trial)) == []  # default patience 0: the loss test is off
    assert reason_at(PoorWeightInitialization(trial, patience="2"), 3) == (
        "loss: loss has not gone below 0.9 (step 1) for 2 saves (patience 2) at step 3")
    # a noisy loss below where it started is making progress
    noisy = run(tmp_path / "noisy", [{"loss": v} for v in [1.0, 0.5, 0.7, 0.6, 0.6, 0.6, 0.6, 0.6]])
    assert invoke_rule(PoorWeightInitialization(noisy, patience="2")) == []


def test_poor_weight_initialization_parameters(tmp_path):
    trial = run(tmp_path, [{"loss": 1.0}])
    rule = PoorWeightInitialization(trial, threshold="5", distribution_range="0.01", patience="3", steps="20",
                                    relative_range="0.01")
    assert (rule.threshold, rule.distribution_range, rule.patience, rule.steps) == (5.0, 0.01, 3, 20)
    assert rule.relative_range == 0.01
    for kwargs, message in [({"threshold": "0"}, "threshold must be > 0"),
                            ({"distribution_range": "-1"}, "distribution_range must be >= 0"),
                            ({"relative_range": "-1"}, "relative_range"),
                            ({"patience": "-1"}, "patience must be >= 0"),
                            ({"steps": "ten"}, "steps must be an integer"),
                            ({"activation_inputs_regex": "(["}, "activation_inputs_regex")]:
        with pytest.raises(SMDebugValueError, match=message):
            PoorWeightInitialization(trial, **kwargs)
