"""Overfit and Overtraining on runs that save several EVAL steps per evaluation.

Keras saves one EVAL step per validation *batch*, and the value it saves there is its running mean over the
pass so far (reset at each pass); at the pass's last step the hook also saves ``val_loss``, the pass's loss.
A PyTorch loop that evaluates batch by batch in EVAL mode saves one EVAL step per batch too, each with that
batch's own loss. Either way one validation pass at fixed weights is one evaluation: counting its batches as
evaluations made a healthy Keras fit look like "11 evaluations without improvement". Runs that evaluate with
a single EVAL step between training steps are judged as before."""

import numpy as np
import pytest

from smdebug.core.modes import ModeKeys
from smdebug.rules.generic import Overfit, Overtraining
from smdebug.rules.rule_invoker import invoke_rule
from smdebug.trials import create_trial

from test_progress_rules import TRAINING, VALIDATION, evaluations, run, write

TRAIN, EVAL = ModeKeys.TRAIN, ModeKeys.EVAL


def running_means(values):
    return list(np.cumsum(values) / np.arange(1, len(values) + 1))


def epochs(train_batches, val_batches, keras):
    """One epoch per entry: TRAIN steps of ``train_batches[e]`` then a validation pass of ``val_batches[e]``.
    ``keras``: saved as Keras saves them -- running means within the epoch and within the pass, and
    ``val_loss`` (the pass's loss) at the pass's last step; otherwise each batch's own loss."""
    steps = []
    for train, val in zip(train_batches, val_batches):
        saved_train = running_means(train) if keras else list(train)
        steps += [(TRAIN, {"loss": v}) for v in saved_train]
        saved_val = running_means(val) if keras else list(val)
        pass_steps = [(EVAL, {"loss": v}) for v in saved_val]
        if keras:
            pass_steps[-1][1]["val_loss"] = float(np.mean(val))
        steps += pass_steps
    return steps


def pass_last_steps(steps):
    """Global steps of the last EVAL step of each pass."""
    return [g for g, (mode, _) in enumerate(steps)
            if mode == EVAL and (g + 1 == len(steps) or steps[g + 1][0] != EVAL)]


# per-batch spread of a validation set in a fixed order (easy batches first)
WEIGHTS = np.array([0.3, 0.4, 0.5, 1.6, 0.8, 1.9, 1.2, 0.7, 1.5, 1.1, 0.9, 1.4, 0.6])


def healthy_keras():
    """hk17's shape: 4 epochs of 20 batches, 13 validation batches; the training loss falls 1 -> 1e-9, the
    validation loss 0.3 -> 0.002 (the batches of a pass within 2 % of its level)."""
    batch = np.exp(-0.25 * np.arange(80)).reshape(4, 20)
    levels = [0.3, 0.012, 0.005, 0.002]
    return epochs(batch, [lv * (1 + 0.02 * np.sin(np.arange(13))) for lv in levels], keras=True)


def test_a_keras_fit_with_many_validation_batches_is_healthy(tmp_path):
    steps = healthy_keras()
    trial = run(tmp_path, steps)
    # each pass is one evaluation; within the first pass the running mean wanders by less than 1 % for its last
    # ten batches, which counted as evaluations while training fell 10-fold made Overtraining fire at step 53, the
    # next pass's first batch (hk17: step 113)
    assert invoke_rule(Overtraining(trial)) == []
    assert invoke_rule(Overfit(trial)) == []
    # the same with the smallest windows: four passes, each better than the one before
    assert invoke_rule(Overtraining(trial, window_validation="1", patience_validation="1", window_train="1")) == []
    assert invoke_rule(Overfit(trial, window="1", rise_percent="0", ratio_threshold="0")) == []


def test_each_pass_is_judged_once_at_its_last_eval_step(tmp_path):
    steps = healthy_keras()
    trial = run(tmp_path, steps)
    rule = Overfit(trial, window="1", rise_percent="0", ratio_threshold="0")
    invoke_rule(rule)
    assert rule.evaluation.steps == 3  # the passes after a TRAIN save: 4 (the first sets the best: judged too)
    # an Overfit with window 1 needs 2 evaluations: the 2nd, 3rd and 4th pass are judged, at their last step
    rule = Overtraining(trial, window_validation="1", patience_validation="1", window_train="1")
    invoke_rule(rule)
    # 4 passes, plus nothing at the 80 TRAIN steps (judge_training off) or at the EVAL steps inside a pass
    assert rule.evaluation.steps == 4


def test_per_batch_validation_losses_are_averaged_over_the_pass(tmp_path):
    """A PyTorch loop evaluating 13 batches in EVAL mode every 25 training steps, each saved with its own loss:
    the validation loss improves by 2 % a pass while training falls 10-fold between the first two passes."""
    train = [np.full(25, 1.0)] + [np.full(25, 0.05 * 0.9 ** p) for p in range(9)]
    val = [0.5 * 0.98 ** p * WEIGHTS for p in range(10)]
    steps = epochs(train, val, keras=False)
    trial = run(tmp_path, steps)
    # one batch at a time, the easy first batches were the best "evaluations" and the next pass came 13 saves on
    assert invoke_rule(Overtraining(trial)) == []
    assert invoke_rule(Overfit(trial)) == []
    # at the smallest windows the pass means improve by 2 % (> min_delta_percent 1) every pass
    assert invoke_rule(Overtraining(trial, window_validation="1", patience_validation="1", window_train="1")) == []
    # but not by 3 %: the 2nd pass (2 % better) is no improvement on the 1st, while training fell 20-fold: it
    # fires there; the 3rd (4 % better than the 1st) improves again. Pass means, not single batches, compared
    fired = invoke_rule(Overtraining(trial, window_validation="1", patience_validation="1", window_train="1",
                                     min_delta_percent="3"))
    assert fired == [pass_last_steps(steps)[1]]


def test_a_pass_of_per_batch_losses_is_valued_as_their_mean(tmp_path):
    # evaluation 2 is a pass of two batches, 0.25 and 1.75: its loss is 1.0 (the last batch alone would be 1.75)
    steps = [(TRAIN, {"loss": 1.0}), (EVAL, {"loss": 0.5}), (TRAIN, {"loss": 0.5}), (EVAL, {"loss": 0.25}),
             (EVAL, {"loss": 1.75}), (TRAIN, {"loss": 0.25})]
    rule = Overfit(run(tmp_path, steps), window="1", rise_percent="99.99", ratio_threshold="0")
    assert invoke_rule(rule) == [4]  # 1.0 is 100 % above the best 0.5: more than 99.99
    assert rule.last_reason.startswith("loss: overfitting: median validation loss 0.5 at its best (step 1) -> 1 "
                                       "(+100.0%")
    assert ("an evaluation is a validation pass (up to 2 EVAL saves; its loss: the mean of its saves)"
            in rule.last_reason)
    assert invoke_rule(Overfit(run(tmp_path / "b", steps), window="1", rise_percent="100", ratio_threshold="0")) == []


def test_keras_running_means_are_valued_as_the_val_loss_the_hook_recorded(tmp_path):
    # running means 0.2, 0.5, 0.6 (batches 0.2, 0.8, 0.8): the pass's loss is 0.6 (val_loss); their mean 0.433
    steps = [(TRAIN, {"loss": 1.0}), (EVAL, {"loss": 0.5, "val_loss": 0.5}), (TRAIN, {"loss": 0.25}),
             (EVAL, {"loss": 0.2}), (EVAL, {"loss": 0.5}), (EVAL, {"loss": 0.6, "val_loss": 0.6})]
    fires = dict(window="1", ratio_threshold="0")
    assert invoke_rule(Overfit(run(tmp_path / "a", steps), rise_percent="19.99", **fires)) == [5]
    assert invoke_rule(Overfit(run(tmp_path / "b", steps), rise_percent="20", **fires)) == []  # 0.6: +20 %
    rule = Overfit(run(tmp_path / "c", steps), rise_percent="19.99", **fires)
    invoke_rule(rule)
    assert "-> 0.6 (+20.0%" in rule.last_reason and "val_* as recorded by the hook" in rule.last_reason
    # val_loss itself (EVAL saves only, no training loss) is no loss either rule judges: nothing else fires
    assert invoke_rule(Overtraining(run(tmp_path / "d", steps), window_validation="1", patience_validation="1")) == []


# --- runs that evaluate with one EVAL step at a time: unchanged ------------------------------------------------
def test_single_eval_steps_between_training_steps_are_judged_as_before(tmp_path):
    trial = run(tmp_path, evaluations(TRAINING, VALIDATION))
    w1 = dict(window_train="1", window_validation="1", patience_validation="3")
    assert invoke_rule(Overtraining(trial, train_progress_percent="75", **w1)) == [9, 11, 13, 15]
    rule = Overtraining(trial, **w1)
    assert invoke_rule(rule) == [13, 15]
    assert rule.last_reason == ("loss: validation loss has not improved by 1% for 6 evaluations (best median 0.5 at "
                                "EVAL step 1, after TRAIN step 1; now 0.6 (+20.0%); patience_validation 3) while the "
                                "training loss went on falling "
                                "(0.5 -> 0.03, medians of 1 saves)")
    train = [1.0, 0.5, 0.1, 0.05, 0.01, 0.005, 0.001, 0.0005]
    val = [1.0, 0.8, 0.6, 0.6, 0.7, 0.8, 0.9, 1.0]
    assert invoke_rule(Overfit(run(tmp_path / "memorising", evaluations(train, val)))) == [11, 13, 15]


def test_single_eval_steps_with_unsaved_training_steps_between_are_separate_evaluations(tmp_path):
    """Training steps that saved nothing still separate two evaluations (the hook's EVAL step count rose by
    less than the global step): they are not one pass."""
    steps = []
    for t, v in zip(TRAINING, VALIDATION):
        steps += [(TRAIN, {"loss": t}), (TRAIN, {}), (EVAL, {"loss": v})]
    trial = run(tmp_path, steps)
    w1 = dict(window_train="1", window_validation="1", patience_validation="3")
    assert invoke_rule(Overtraining(trial, train_progress_percent="75", **w1)) == [14, 17, 20, 23]
    rule = Overtraining(trial, **w1)
    assert invoke_rule(rule) == [20, 23]
    assert "for 6 evaluations (best median 0.5 at EVAL step 1, after TRAIN step " in rule.last_reason
    # EVAL steps after training steps of which only every other one saved its loss: one evaluation each
    steps = []
    for k, (t, v) in enumerate(zip([1.0, 0.5, 0.25, 0.125], [1.0, 0.5, 0.75, 1.0])):
        steps += [(TRAIN, {"loss": t} if k % 2 == 0 else {}), (EVAL, {"loss": v})]
    # training loss per evaluation: 1, 1 (the latest known), 0.25, 0.25; validation 1, 0.5, 0.75, 1
    trial = run(tmp_path / "sparse", steps)
    assert invoke_rule(Overfit(trial, window="1", rise_percent="49.99", ratio_threshold="1.99")) == [5, 7]


# --- genuine overtraining and overfitting with multi-batch passes ----------------------------------------------
def memorising(keras):
    """30 epochs: the training loss falls 0.7-fold an epoch (to 3e-5); the validation loss falls to 0.5 by the
    5th pass, then rises to 1.0; 8 validation batches a pass."""
    train = [np.full(20, 0.7 ** e) for e in range(30)]
    levels = [1.0, 0.8, 0.65, 0.55, 0.5] + list(np.linspace(0.52, 1.0, 25))
    val = [lv * WEIGHTS[:8] / WEIGHTS[:8].mean() for lv in levels]
    return epochs(train, val, keras), levels


@pytest.mark.parametrize("keras", [False, True], ids=["per-batch", "keras"])
def test_overtraining_and_overfitting_with_multi_batch_passes_still_fire(tmp_path, keras):
    steps, levels = memorising(keras)
    ends = pass_last_steps(steps)
    trial = run(tmp_path, steps)
    rule = Overtraining(trial)
    fired = invoke_rule(rule)
    assert fired and set(fired) <= set(ends)  # at the end of passes only
    # medians of 3 passes: best 0.52 (passes 3-5), then 10 passes without improvement and at least as many
    # as up to the best
    medians = [float(np.median(levels[i - 2:i + 1])) for i in range(2, 30)]
    first = ends.index(fired[0])
    assert first >= 2 + 3 + 10 - 1
    assert f"best median {min(medians):.6g} at EVAL steps" in rule.last_reason
    how = "val_* as recorded by the hook" if keras else "the mean of its saves"
    assert f"validation pass (up to 8 EVAL saves; its loss: {how})" in rule.last_reason
    rule = Overfit(trial)
    fired = invoke_rule(rule)
    assert fired and set(fired) <= set(ends)
    assert "overfitting: median validation loss 0.52 at its best (steps" in rule.last_reason


# --- a training loss that did not change did not fall ----------------------------------------------------------
def test_a_training_loss_of_zero_throughout_did_not_fall(tmp_path):
    """bk09: sample weights all 0, so the training loss is exactly 0 at every step; the validation loss is flat.
    "The training loss went on falling (0 -> 0)" was no progress."""
    trial = run(tmp_path, evaluations([0.0] * 16, [0.7] * 16))
    assert invoke_rule(Overtraining(trial)) == []
    assert invoke_rule(Overtraining(trial, window_train="1", window_validation="1", patience_validation="1",
                                    train_progress_percent="0")) == []
    # a training loss that falls to exactly 0 did fall
    trial = run(tmp_path / "to_zero", evaluations([1.0, 0.5] + [0.0] * 14, [0.7] * 16))
    rule = Overtraining(trial, window_train="1", window_validation="1", patience_validation="1",
                        train_progress_percent="100")
    assert invoke_rule(rule) == [5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31]
    assert "(1 -> 0, medians of 1 saves)" in rule.last_reason


# --- runs still being written -----------------------------------------------------------------------------------
def test_the_last_pass_of_a_run_in_progress_is_judged_once_the_run_goes_on(tmp_path):
    steps = [(TRAIN, {"loss": 1.0}), (EVAL, {"loss": 0.5}), (TRAIN, {"loss": 0.25}),
             (EVAL, {"loss": 0.5}), (EVAL, {"loss": 1.5})]
    hook = write(tmp_path, steps, close=False)
    trial = create_trial(str(tmp_path))
    rule = Overfit(trial, window="1", rise_percent="0", ratio_threshold="0")
    # the pass of steps 3-4 may go on: not an evaluation yet
    assert invoke_rule(rule, end_step=5) == []
    hook.set_mode(TRAIN)
    hook.begin_step()
    hook.record("loss", np.float64(0.125))
    hook.end_step()
    hook.close()
    # the same rule, following the run: the pass ended, judged at the step that shows it (the TRAIN step 5)
    assert invoke_rule(rule, start_step=5) == [5]
    # read once finished, it is judged at its last EVAL step
    assert invoke_rule(Overfit(create_trial(str(tmp_path)), window="1", rise_percent="0", ratio_threshold="0")) == [4]
