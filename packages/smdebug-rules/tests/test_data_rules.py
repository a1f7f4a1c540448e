"""The activation, input, classification and XGBoost rules on hand-made runs: thresholds pinned just below and
just above, string parameters, bad parameters refused with the parameter's name."""

import numpy as np
import pytest

from smdebug import SaveConfig
from smdebug.core.plugins.info import WorkerInfo
from smdebug.exceptions import SMDebugValueError
from smdebug.rules.generic import (
    CheckInputImages,
    ClassImbalance,
    Confusion,
    DeadRelu,
    FeatureImportanceOverweight,
    NLPSequenceRatio,
    SaturatedActivation,
    TreeDepth,
)
from smdebug.rules.rule_invoker import invoke_rule
from smdebug.trials import create_trial

from _hooks import NumpyHook


def write(path, steps, collections=None, hook_class=NumpyHook, save_interval=1, close=True, **hook_args):
    """``steps``: one {name: array} per step, every ``save_interval``-th step saved (a ``loss`` scalar keeps
    empty steps)."""
    hook = hook_class(out_dir=str(path), save_config=SaveConfig(save_interval=save_interval), include_regex=[".*"],
                      **hook_args)
    for name, regex in (collections or {}).items():
        hook.get_collection(name).include(regex)
    for tensors in steps:
        hook.begin_step()
        hook.record("loss", np.float32(1.0))
        for name, value in tensors.items():
            hook.record(name, np.asarray(value))
        hook.end_step()
    if close:
        hook.close()
    else:
        hook.flush()


def run(path, steps, collections=None, save_interval=1):
    write(path, steps, collections, save_interval=save_interval)
    return create_trial(str(path))


def active(n_samples, active_counts):
    """(n_samples, units) activations; unit k is positive in exactly ``active_counts[k]`` samples."""
    value = np.zeros((n_samples, len(active_counts)), np.float32)
    for k, count in enumerate(active_counts):
        value[:count, k] = 1.0
    return value


# --------------------------------------------------------------------------------------------------------
# DeadRelu
# --------------------------------------------------------------------------------------------------------
def test_dead_relu_thresholds(tmp_path):
    steps = [
        {"layer0_relu_output_0": active(100, [100, 50, 10] + [100] * 7)},
        {"layer0_relu_output_0": active(100, [1] * 7 + [100] * 3)},   # active in exactly 1%: not dead
        {"layer0_relu_output_0": active(100, [0] * 5 + [100] * 5)},   # 5 of 10 dead: 50%, not more
        {"layer0_relu_output_0": active(100, [0] * 6 + [100] * 4)},   # 6 of 10: 60%, but 5 would be 50%
        {"layer0_relu_output_0": active(100, [0] * 7 + [100] * 3)},   # 7 of 10 dead: 70% (and 60% without one)
    ]
    trial = run(tmp_path, steps)
    assert invoke_rule(DeadRelu(trial)) == [4]
    assert invoke_rule(DeadRelu(trial, threshold_inactivity="1.5")) == [1, 4]
    assert invoke_rule(DeadRelu(trial, threshold_layer="49")) == [3, 4]
    assert invoke_rule(DeadRelu(trial, threshold_layer="59")) == [4]
    assert invoke_rule(DeadRelu(trial, threshold_layer="60")) == []
    rule = DeadRelu(trial)
    assert invoke_rule(rule, start_step=4) == [4]
    assert rule.last_reason == ("layer0_relu_output_0: 7 of 10 units (70%) active in < 1% of 100 samples "
                                "(threshold_layer 50%)")


def test_dead_relu_share_is_not_decided_by_one_unit(tmp_path):
    # a squeeze-and-excitation bottleneck of 4 units fed channel means: units off for a whole batch come
    # and go; 3 of 4 is one unit away from half, all 4 is a dead layer; 2 of 2 too, 1 of 2 is not
    # (each stays dead to the run's last save: a layer that comes back is no dead layer, test_dead_relu_layers_that_revive)
    steps = [{"se.act_output_0": active(32, [0, 0, 0, 32]), "tiny_relu_output_0": active(32, [0, 32])},
             {"se.act_output_0": active(32, [0, 0, 0, 0]), "tiny_relu_output_0": active(32, [0, 32])},
             {"se.act_output_0": active(32, [0, 0, 0, 0]), "tiny_relu_output_0": active(32, [0, 0])}]
    trial = run(tmp_path, steps)
    rule = DeadRelu(trial, tensor_regex="se.act_output", threshold_inactivity="4")
    assert invoke_rule(rule) == [1, 2]
    assert rule.last_reason.startswith("se.act_output_0: 4 of 4 units (100%)")
    rule = DeadRelu(trial, tensor_regex="tiny_relu_output", threshold_inactivity="4")
    assert invoke_rule(rule) == [2]
    assert rule.last_reason.startswith("tiny_relu_output_0: 2 of 2 units (100%)")


def test_dead_relu_names_and_shapes(tmp_path):
    conv = np.ones((8, 2, 3, 3), np.float32)
    conv[:, 0] = -1.0  # half the units (channel 0 at every position) never active: 50%, not more
    conv[:, 1, 0, :] = 0.0  # ... plus 3 of the 9 positions of channel 1
    steps = [
        {"relu_output": active(10, [0] * 7 + [10]), "fc0_output_0": np.zeros((10, 4), np.float32)},
        {"block.relu_output_0": conv},
        {"fc0_output_0": np.zeros((10, 4), np.float32), "relu0_output_0": np.zeros((10, 4), np.float32)},
    ]
    trial = run(tmp_path, steps)
    # the default .*relu_output finds relu_output in a name (re.search); fc0 is not a ReLU, and
    # relu0_output_0 (a module named relu0) does not contain it: those need a tensor_regex
    assert invoke_rule(DeadRelu(trial, threshold_inactivity="12.5")) == [0, 1]
    # relu_output: 7 of 8 dead (6 of 8 = 75% without one); conv: 12 of 18 units = 66.7%
    assert invoke_rule(DeadRelu(trial, threshold_layer="67", threshold_inactivity="12.5")) == [0]
    assert invoke_rule(DeadRelu(trial, tensor_regex="fc0_output", threshold_inactivity="12.5")) == [0, 2]
    assert invoke_rule(DeadRelu(trial, tensor_regex="relu0_output", threshold_inactivity="12.5")) == [2]


def test_dead_relu_bad_parameters(tmp_path):
    trial = run(tmp_path, [{"layer0_relu_output_0": active(2, [1])}])
    with pytest.raises(SMDebugValueError, match="threshold_layer must be a number"):
        DeadRelu(trial, threshold_layer="half")
    with pytest.raises(SMDebugValueError, match=r"threshold_inactivity must be in \[0, 100\]"):
        DeadRelu(trial, threshold_inactivity="101")
    with pytest.raises(SMDebugValueError, match="tensor_regex has an invalid regex"):
        DeadRelu(trial, tensor_regex="relu(")
    with pytest.raises(SMDebugValueError, match="DeadRelu: give collection_names or tensor_regex"):
        DeadRelu(trial, tensor_regex="", collection_names="")


class _Worker(NumpyHook):
    test_rank = 0

    def _detect_worker(self):
        return WorkerInfo(rank=self.test_rank, size=2)


def test_dead_relu_pools_the_batches_of_all_workers(tmp_path):
    # worker 0 alone: units 0-2 of 4 active in 1 of its 100 samples (1%, not dead); pooled with worker 1's
    # batch, where they never are: 1 of 200 samples (0.5%), dead, and with threshold_layer 49 the pooled
    # batch fires (3 of 4 units; 2 of 4 = 50% without one).
    hooks = [type(f"Worker{rank}", (_Worker,), {"test_rank": rank})(
        out_dir=str(tmp_path), save_config=SaveConfig(save_interval=1), include_regex=[".*"], include_workers="all")
        for rank in (0, 1)]
    for hook, counts in zip(hooks, ([1, 1, 1, 100], [0, 0, 0, 100])):
        hook.begin_step()
        hook.record("layer0_relu_output_0", active(100, counts))
        hook.end_step()
    for hook in hooks:
        hook.close()
    trial = create_trial(str(tmp_path))
    assert trial.workers() == ["worker_0", "worker_1"]
    rule = DeadRelu(trial, threshold_layer="49")
    assert invoke_rule(rule) == [0]
    assert "3 of 4 units (75%)" in rule.last_reason and "200 samples" in rule.last_reason


# --------------------------------------------------------------------------------------------------------
# SaturatedActivation
# --------------------------------------------------------------------------------------------------------
def saturated(n_samples, out_counts, inside, outside):
    value = np.full((n_samples, len(out_counts)), inside, np.float64)
    for k, count in enumerate(out_counts):
        value[:count, k] = outside
    return value


def test_saturated_activation_tanh_bounds_and_thresholds(tmp_path):
    steps = [
        {"layer0_tanh_input_0": saturated(100, [100, 100], 0.0, 9.4999)},   # on the bound: not outside
        {"layer0_tanh_input_0": saturated(100, [99, 99], 0.0, 9.5)},        # 99% of samples: not more than 99%
        {"layer0_tanh_input_0": saturated(100, [100, 0], 0.0, -9.5)},       # 1 of 2 units: 50%, not more
        {"layer0_tanh_input_0": saturated(100, [100, 100], 0.0, -9.5)},
    ]
    trial = run(tmp_path, steps)
    assert invoke_rule(SaturatedActivation(trial)) == [3]
    assert invoke_rule(SaturatedActivation(trial, threshold_inactivity="1.5")) == [1, 3]
    assert invoke_rule(SaturatedActivation(trial, threshold_layer="49.9")) == [2, 3]
    assert invoke_rule(SaturatedActivation(trial, threshold_tanh_max="9.4998")) == [0, 3]
    rule = SaturatedActivation(trial)
    invoke_rule(rule)
    assert rule.last_reason == ("layer0_tanh_input_0: 2 of 2 tanh units (100%) outside [-9.4999, 9.4999] in "
                                "> 99% of 100 samples (threshold_layer 50%)")


def test_saturated_activation_sigmoid_bounds_and_selection(tmp_path):
    steps = [
        {"layer1_sigmoid_input_0": saturated(10, [10, 10], 0.0, -23.0), "other_input_0": np.full((10, 2), 1e6)},
        {"layer1_sigmoid_input_0": saturated(10, [10, 10], 0.0, 17.0)},
        {"layer1_sigmoid_input_0": saturated(10, [10, 10], 0.0, -23.01)},
        {"net.tanh_input": saturated(10, [10, 10], 0.0, 10.0)},
    ]
    trial = run(tmp_path, steps, collections={"activations": "_input"})
    assert invoke_rule(SaturatedActivation(trial, threshold_inactivity="10")) == [1, 2, 3]
    assert invoke_rule(SaturatedActivation(trial, threshold_inactivity="10", threshold_sigmoid_max="17")) == [2, 3]
    # a selected tensor that is neither a tanh nor a sigmoid input is skipped (with a warning)
    assert invoke_rule(SaturatedActivation(trial, threshold_inactivity="10", collection_names="activations", tensor_regex="")) == [1, 2, 3]
    assert invoke_rule(SaturatedActivation(trial, threshold_inactivity="10", tensor_regex="sigmoid")) == [1, 2]


def test_saturated_activation_bad_parameters(tmp_path):
    trial = run(tmp_path, [{"layer0_tanh_input_0": np.zeros((2, 2))}])
    with pytest.raises(SMDebugValueError, match="threshold_tanh_min .* must be below threshold_tanh_max"):
        SaturatedActivation(trial, threshold_tanh_min="10")
    with pytest.raises(SMDebugValueError, match="threshold_sigmoid_max must be a number"):
        SaturatedActivation(trial, threshold_sigmoid_max="")
    with pytest.raises(SMDebugValueError, match=r"threshold_layer must be in \[0, 100\]"):
        SaturatedActivation(trial, threshold_layer="-1")
    with pytest.raises(SMDebugValueError, match="give collection_names or tensor_regex"):
        SaturatedActivation(trial, tensor_regex="", collection_names="")


# --------------------------------------------------------------------------------------------------------
# CheckInputImages
# --------------------------------------------------------------------------------------------------------
def images(n, means, shape=(2, 2), channel_axis=1):
    value = np.stack([np.full((n, *shape), m, np.float32) for m in means], axis=channel_axis)
    return value


def test_check_input_images_needs_threshold_samples(tmp_path):
    name = "hybridsequential0_input_0"
    steps = [{name: images(100, [0.0, 0.25, -0.1])} for _ in range(6)]
    trial = run(tmp_path, steps)
    old = dict(threshold_mean="0.2")  # the original's default; ours is 2.0 (see test_check_input_images_default)
    assert invoke_rule(CheckInputImages(trial, **old)) == [4, 5]  # 500 samples seen at step 4
    assert invoke_rule(CheckInputImages(trial, threshold_samples="501", **old)) == [5]
    assert invoke_rule(CheckInputImages(trial, threshold_samples="300", **old)) == [2, 3, 4, 5]
    assert invoke_rule(CheckInputImages(trial, threshold_mean="0.25")) == []  # |0.25| is not above 0.25
    assert invoke_rule(CheckInputImages(trial, threshold_mean="0.249")) == [4, 5]
    # the samples of the steps before start_step count: rules judge what the run has written so far
    assert invoke_rule(CheckInputImages(trial, **old), start_step=5) == [5]
    assert invoke_rule(CheckInputImages(trial)) == []  # default 2.0
    rule = CheckInputImages(trial, **old)
    invoke_rule(rule, end_step=5)
    assert rule.last_reason == f"{name}: mean of channel 1 is 0.25 (|mean| > threshold_mean 0.2) over 500 samples"


def test_check_input_images_means_accumulate_over_steps(tmp_path):
    name = "conv0_input_0"
    steps = [{name: images(100, [0.0])}, {"other": np.zeros(2)}, {name: images(100, [-0.5])},
             {name: images(100, [0.0])}, {name: images(100, [0.0])}]
    trial = run(tmp_path, steps)
    rule = CheckInputImages(trial, regex=".*conv0_input_0", threshold_samples="100", threshold_mean="0.2")
    # means over the saved steps so far: 0, (step 1: nothing new), -0.25, -0.1667, -0.125
    assert invoke_rule(rule) == [2]
    assert "channel 0 is -0.25" in rule.last_reason and "200 samples" in rule.last_reason


def test_check_input_images_channel_axis_and_shapes(tmp_path):
    steps = [{"x_input_0": images(500, [3.0, -3.0, 0.0], channel_axis=3), "flat_input_0": np.ones((500, 3))}]
    trial = run(tmp_path, steps)
    assert invoke_rule(CheckInputImages(trial, regex="_input_0")) == []  # NHWC read as NCHW: every "channel" 0
    rule = CheckInputImages(trial, regex="_input_0", channel="-1")
    assert invoke_rule(rule) == [0]  # the 2-D tensor is no image and is skipped
    assert rule.last_reason.startswith("x_input_0: mean of channel 0 is 3 ")
    assert invoke_rule(CheckInputImages(trial, regex="_input_0", channel="3")) == [0]
    assert invoke_rule(CheckInputImages(trial, regex="_input_0", channel="7")) == []  # no such axis: skipped


def test_check_input_images_uint8_pixels(tmp_path):
    trial = run(tmp_path, [{"img_input_0": np.full((500, 1, 4, 4), 255, np.uint8)}])
    rule = CheckInputImages(trial, regex="img_input_0")
    assert invoke_rule(rule) == [0]
    assert "mean of channel 0 is 255" in rule.last_reason


def test_check_input_images_bad_parameters(tmp_path):
    trial = run(tmp_path, [{"x": np.zeros(1)}])
    with pytest.raises(SMDebugValueError, match="channel must not be 0"):
        CheckInputImages(trial, channel="0")
    with pytest.raises(SMDebugValueError, match="threshold_samples must be >= 0"):
        CheckInputImages(trial, threshold_samples="-1")
    with pytest.raises(SMDebugValueError, match="threshold_samples must be an integer"):
        CheckInputImages(trial, threshold_samples="many")
    with pytest.raises(SMDebugValueError, match=r"threshold_mean must be in \[0, inf\]"):
        CheckInputImages(trial, threshold_mean="-0.1")


# --------------------------------------------------------------------------------------------------------
# NLPSequenceRatio
# --------------------------------------------------------------------------------------------------------
def tokens(zeros, ones=0, total=40):
    value = np.full(total, 7, np.int64)
    value[:zeros] = 0
    value[zeros:zeros + ones] = 1
    return value.reshape(4, total // 4)


def test_nlp_sequence_ratio_thresholds(tmp_path):
    steps = [{"embedding0_input_0": tokens(20)}, {"embedding0_input_0": tokens(21)},
             {"embedding0_input_0": tokens(0, ones=5)}, {"embedding1_input_0": tokens(40)}]
    trial = run(tmp_path, steps)
    rule = NLPSequenceRatio(trial)
    assert invoke_rule(rule) == [1]  # 50% of padding is allowed, 52.5% is not
    assert rule.last_reason == "embedding0_input_0: token 0 is 52.5% of 40 values (21; threshold 50%)"
    assert invoke_rule(NLPSequenceRatio(trial, token_thresholds_percent="49.9")) == [0, 1]
    assert invoke_rule(NLPSequenceRatio(trial, token_values="0,1", token_thresholds_percent="50,12.5")) == [1]
    assert invoke_rule(NLPSequenceRatio(trial, token_values="0,1", token_thresholds_percent="50,12.4")) == [1, 2]
    assert invoke_rule(NLPSequenceRatio(trial, tensor_regex="embedding\\d_input_0")) == [1, 3]


def test_nlp_sequence_ratio_bad_parameters(tmp_path):
    trial = run(tmp_path, [{"x": np.zeros(1)}])
    with pytest.raises(SMDebugValueError, match="same length, got 2 token values and 1 thresholds"):
        NLPSequenceRatio(trial, token_values="0,1", token_thresholds_percent="50")
    with pytest.raises(SMDebugValueError, match="token_values must be a comma-separated list of integers"):
        NLPSequenceRatio(trial, token_values="pad")
    with pytest.raises(SMDebugValueError, match="token_thresholds_percent must be a comma-separated list of num"):
        NLPSequenceRatio(trial, token_thresholds_percent="half")
    with pytest.raises(SMDebugValueError, match=r"token_thresholds_percent must be in \[0, 100\]"):
        NLPSequenceRatio(trial, token_thresholds_percent="200")
    with pytest.raises(SMDebugValueError, match="token_values is required"):
        NLPSequenceRatio(trial, token_values="", token_thresholds_percent="")


# --------------------------------------------------------------------------------------------------------
# Confusion
# --------------------------------------------------------------------------------------------------------
def test_confusion_identity_and_one_mistake(tmp_path):
    labels = np.arange(10)
    wrong = labels.copy()
    wrong[4] = 7
    trial = run(tmp_path, [{"labels": labels, "predictions": labels}, {"labels": labels, "predictions": wrong}])
    # the names "labels"/"predictions" are used as they are: the run has no such collections
    assert "labels" not in trial.collections()
    one = dict(min_class_samples="1")
    assert invoke_rule(Confusion(trial)) == []  # class 4 has 1 sample: fewer than min_class_samples 10
    rule = Confusion(trial, **one)
    assert invoke_rule(rule) == [1]
    assert rule.last_reason == "class 4: 0 of 1 samples predicted correctly (0 < min_diag 0.5)"
    rule = Confusion(trial, min_diag="0", max_off_diag="0.01", **one)
    assert invoke_rule(rule) == [1]
    assert rule.last_reason == "class 4 predicted as 7 in 1 of 1 samples (1 > max_off_diag 0.01)"
    assert invoke_rule(Confusion(trial, None, "labels", "predictions", min_diag="0", max_off_diag="1", **one)) == []
    assert invoke_rule(Confusion(trial, "10", "labels", "predictions", **one)) == [1]  # positional order kept


def test_confusion_ratios_are_per_true_class(tmp_path):
    # class 0: 2 of 2 right; class 1: 17 of 18 right, 1 taken for 0. Per true class (rows) that is fine
    # (17/18 >= 0.9, 1/18 <= 0.1); per predicted class (columns) class 0 would be 2/3 right.
    labels = np.array([0] * 2 + [1] * 18)
    predictions = labels.copy()
    predictions[-1] = 0
    trial = run(tmp_path, [{"labels": labels, "predictions": predictions}])
    assert invoke_rule(Confusion(trial)) == []
    assert invoke_rule(Confusion(trial, min_diag="0.95")) == [0]  # 17/18 = 0.944
    assert invoke_rule(Confusion(trial, max_off_diag="0.05")) == [0]  # 1/18 = 0.056


def test_confusion_thresholds_exactly(tmp_path):
    labels = np.array([0] * 10 + [1] * 10)
    predictions = labels.copy()
    predictions[0] = 1  # class 0: 9 of 10 right (0.9), 1 of 10 (0.1) taken for 1
    trial = run(tmp_path, [{"labels": labels, "predictions": predictions}])
    assert invoke_rule(Confusion(trial)) == []
    assert invoke_rule(Confusion(trial, min_diag="0.91")) == [0]
    assert invoke_rule(Confusion(trial, max_off_diag="0.09")) == [0]


def test_confusion_collections_scores_and_category_no(tmp_path):
    labels = np.array([0, 1, 2, 2])
    scores = np.eye(3)[[0, 1, 2, 2]].astype(np.float32)
    bad_scores = np.eye(3)[[0, 1, 2, 1]].astype(np.float32)
    steps = [{"labels_0": labels, "predictions_0": scores},
             {"labels_0": labels, "predictions_0": bad_scores},
             {"labels_0": np.array([0, 1, 5]), "predictions_0": np.eye(6)[[0, 1, 3]]}]
    trial = run(tmp_path, steps, collections={"labels": "^labels_", "predictions": "^predictions_"})
    one = dict(min_class_samples="1")
    # judged at the last step with labels (the trained model): scores argmax-ed; 5 -> 3 wrong at step 2
    assert invoke_rule(Confusion(trial, **one)) == [2]
    # with 3 classes the pair (5, 3) is out of range and ignored
    assert invoke_rule(Confusion(trial, category_no="3", **one)) == []
    assert invoke_rule(Confusion(trial, category_no="None", **one)) == [2]
    # no tensor of that name and no such collection: nothing to judge
    assert invoke_rule(Confusion(trial, labels="y", labels_collection="y", **one)) == []


def test_confusion_binary_probabilities_are_rounded(tmp_path):
    labels = np.array([0.0, 1.0, 1.0, 0.0], np.float32)
    trial = run(tmp_path, [{"labels": labels, "predictions": np.array([0.1, 0.8, 0.6, 0.4])},
                           {"labels": labels, "predictions": np.array([0.1, 0.8, 0.4, 0.4])}])
    assert invoke_rule(Confusion(trial, min_class_samples="1")) == [1]


def test_confusion_column_outputs_and_labels(tmp_path):
    # Keras-style (n, 1) sigmoid outputs and (n, 1) labels: rounded, not argmax-ed over a single column
    labels = np.array([[0.0]] * 10 + [[1.0]] * 10)
    good = np.where(labels > 0, 0.9, 0.1)
    trial = run(tmp_path, [{"labels": labels, "predictions": good}])
    assert invoke_rule(Confusion(trial)) == []
    # (n, 1) sparse labels against (n, k) scores: the scores are argmax-ed
    scores = np.eye(2)[labels[:, 0].astype(int)]
    trial = run(tmp_path / "scores", [{"labels": labels, "predictions": scores}])
    rule = Confusion(trial)
    assert invoke_rule(rule) == [] and rule.evaluation.steps == 1
    assert invoke_rule(Confusion(run(tmp_path / "wrong", [{"labels": labels, "predictions": scores[::-1].copy()}]))) == [0]


def test_confusion_judges_the_trained_model_only(tmp_path):
    labels = np.array([0] * 10 + [1] * 10)
    untrained, trained = np.zeros(20, np.int64), labels.copy()
    trial = run(tmp_path, [{"labels": labels, "predictions": untrained}, {"labels": labels, "predictions": trained}])
    rule = Confusion(trial)
    assert invoke_rule(rule) == [] and rule.evaluation.steps == 1  # step 0's untrained model is not judged
    reversed_run = run(tmp_path / "worse", [{"labels": labels, "predictions": trained},
                                            {"labels": labels, "predictions": untrained}])
    assert invoke_rule(Confusion(reversed_run)) == [1]
    # a run still training is not judged (nothing says its last step is the trained model)
    write(tmp_path / "open", [{"labels": labels, "predictions": untrained}] * 2, close=False)
    rule = Confusion(create_trial(str(tmp_path / "open")))
    assert invoke_rule(rule, end_step=2) == [] and rule.evaluation.steps == 0
    # regression targets are not class ids
    targets = np.linspace(0.0, 3.0, 20)
    regression = run(tmp_path / "regression", [{"labels": targets, "predictions": targets[::-1].copy()}])
    rule = Confusion(regression)
    assert invoke_rule(rule) == [] and rule.evaluation.steps == 0


def test_confusion_bad_parameters(tmp_path):
    trial = run(tmp_path, [{"x": np.zeros(1)}])
    with pytest.raises(SMDebugValueError, match="category_no must be an integer"):
        Confusion(trial, category_no="ten")
    with pytest.raises(SMDebugValueError, match="category_no must be >= 1"):
        Confusion(trial, category_no="0")
    with pytest.raises(SMDebugValueError, match=r"min_diag must be in \[0, 1\]"):
        Confusion(trial, min_diag="1.5")
    with pytest.raises(SMDebugValueError, match="max_off_diag must be a number"):
        Confusion(trial, max_off_diag="x")
    with pytest.raises(SMDebugValueError, match="labels must be a non-empty"):
        Confusion(trial, labels="")


# --------------------------------------------------------------------------------------------------------
# ClassImbalance
# --------------------------------------------------------------------------------------------------------
def test_class_imbalance_old_expectation(tmp_path):
    labels = np.array([0] * 990 + [1] * 10)
    trial = run(tmp_path, [{}, {}, {}, {"labels_0": labels}])
    rule = ClassImbalance(trial, labels_regex="labels_0", predictions_regex="labels_0")
    assert invoke_rule(rule) == [3]
    assert rule.last_reason == ("class 0 has 990 samples, class 1 10: ratio 99 > threshold_imbalance 10 "
                                "(1000 labels)")


def test_class_imbalance_ratio_threshold_exactly(tmp_path):
    trial = run(tmp_path, [{"labels": np.array([0] * 500 + [1] * 50 + [2] * 60)},
                           {"labels": np.array([0])}])
    assert invoke_rule(ClassImbalance(trial)) == [1]  # 500/50 = 10, then 501/50 > 10
    assert invoke_rule(ClassImbalance(trial, threshold_imbalance="9.99")) == [0, 1]
    # a class absent from the labels is not a minimum of 0
    trial2 = run(tmp_path / "two", [{"labels": np.array([0] * 300 + [2] * 300)}])
    assert invoke_rule(ClassImbalance(trial2)) == []


def test_class_imbalance_counts_accumulate_until_samples(tmp_path):
    # 92:8 a step (ratio 11.5): at 100-400 labels the counts leave room for a ratio under 10 (each count moved
    # two standard deviations: (sqrt(368) - 1)^2 / (sqrt(32) + 1)^2 = 7.1), so the rule waits for samples=500
    steps = [{"labels": np.array([0] * 92 + [1] * 8)} for _ in range(6)]
    steps.insert(3, {"other": np.zeros(1)})  # step 3: no labels, nothing new to judge
    trial = run(tmp_path, steps)
    assert invoke_rule(ClassImbalance(trial)) == [5, 6]  # 500 labels seen at step 5
    assert invoke_rule(ClassImbalance(trial, samples="100")) == [0, 1, 2, 4, 5, 6]
    assert invoke_rule(ClassImbalance(trial), start_step=6) == [6]
    # 99:1 a step: beyond doubt from the first 100 labels ((sqrt(99) - 1)^2 / (sqrt(1) + 1)^2 = 20 > 10)
    trial = run(tmp_path / "clear", [{"labels": np.array([0] * 99 + [1])} for _ in range(3)])
    assert invoke_rule(ClassImbalance(trial)) == [0, 1, 2]
    rule = ClassImbalance(trial)
    invoke_rule(rule, end_step=1)
    assert rule.last_reason == ("class 0 has 99 samples, class 1 1: ratio 99, at least 20 allowing for the chance in "
                                "counts this small, > threshold_imbalance 10 (100 labels, fewer than samples=500)")


@pytest.mark.parametrize("save_interval", [1, 3])
def test_accumulating_rules_in_any_order_of_evaluation(tmp_path, save_interval):
    """CheckInputImages and ClassImbalance judge the steps <= s: the same findings whether the steps are
    evaluated in order, from a late start, after a long jump, or again after going back."""
    rng = np.random.default_rng(0)
    steps = []
    for i in range(200):
        stretch = 120 <= i < 132  # un-normalised images for a while
        # (only class-0 labels from step 120 on: a class mix that changed for a while only is no imbalance of
        # the finished run's data, see test_class_imbalance_class_mix_over_time)
        steps.append({"hybridsequential0_input_0": rng.normal(3.0 if stretch else 0.0, 1.0, (8, 2, 2, 2)),
                      "labels": np.zeros(40, np.int64) if i >= 120 else rng.integers(0, 3, 40)})
    trial = run(tmp_path, steps, save_interval=save_interval)
    for make, recovers in ((lambda: CheckInputImages(trial, threshold_samples="200", threshold_mean="0.25"), True),
                           (lambda: ClassImbalance(trial, threshold_imbalance="1.3", samples="400"), False)):
        expected = invoke_rule(make())
        assert expected and expected[0] > 120 and (expected[-1] < 190) == recovers  # fires (and recovers)
        assert all(s % save_interval == 0 for s in expected)
        assert invoke_rule(make(), start_step=130) == [s for s in expected if s >= 130]
        rule = make()
        assert invoke_rule(rule, start_step=10, end_step=20) == [s for s in expected if 10 <= s < 20]
        assert invoke_rule(rule, start_step=140) == [s for s in expected if s >= 140]  # jumped 120 steps
        assert invoke_rule(rule) == expected  # back to the start
        assert invoke_rule(rule, start_step=100) == [s for s in expected if s >= 100]


def test_class_imbalance_mispredictions(tmp_path):
    labels = np.array([0] * 300 + [1] * 300)

    def predictions(wrong):
        p = labels.copy()
        p[300:300 + wrong] = 0
        return p

    trial = run(tmp_path, [{"labels": labels, "predictions": predictions(210)},
                           {"labels": labels, "predictions": predictions(270)}])
    # judged on the last step's predictions once training has ended: class 1 wrong in 270/300 = 0.9
    rule = ClassImbalance(trial)
    assert invoke_rule(rule) == [1]
    # (the counts of one save: both saves hold the same rows)
    assert rule.last_reason == ("the trained model mispredicts class 1 in 270 of its 300 samples (0.9 > "
                                "threshold_misprediction 0.7; step 1); it predicts class 0 for 570 of the 600 samples "
                                "(95%): a fault of the predictions, not of the class counts (the class counts pass the "
                                "imbalance test: the largest, class 0, has 300 labels and the smallest, class 1, 300: ratio 1 <= "
                                "threshold_imbalance 10)")
    assert invoke_rule(ClassImbalance(trial, threshold_misprediction="0.9")) == []
    assert invoke_rule(ClassImbalance(trial, threshold_misprediction="0.89")) == [1]
    # the first step's (untrained) mispredictions are not judged
    early = run(tmp_path / "early", [{"labels": labels, "predictions": predictions(270)},
                                     {"labels": labels, "predictions": labels}])
    assert invoke_rule(ClassImbalance(early)) == []


def test_class_imbalance_argmax(tmp_path):
    labels = np.array([0] * 300 + [1] * 300)
    scores = np.zeros((600, 2), np.float32)
    scores[:, 0] = 1.0  # everything predicted as class 0
    trial = run(tmp_path, [{"labels": labels, "predictions": scores}])
    assert invoke_rule(ClassImbalance(trial, argmax="True")) == [0]
    # without argmax too: (600, 2) scores per class are no class ids, and are paired with the labels by argmax
    assert invoke_rule(ClassImbalance(trial)) == [0]


def test_class_imbalance_bad_parameters(tmp_path):
    trial = run(tmp_path, [{"x": np.zeros(1)}])
    with pytest.raises(SMDebugValueError, match=r"threshold_misprediction must be in \[0, 1\]"):
        ClassImbalance(trial, threshold_misprediction="1.5")
    with pytest.raises(SMDebugValueError, match="argmax must be true or false"):
        ClassImbalance(trial, argmax="maybe")
    with pytest.raises(SMDebugValueError, match="samples must be an integer"):
        ClassImbalance(trial, samples="ten")
    with pytest.raises(SMDebugValueError, match=r"threshold_imbalance must be in \[1, inf\]"):
        ClassImbalance(trial, threshold_imbalance="0.5")
    with pytest.raises(SMDebugValueError, match="give labels_regex or labels_collection"):
        ClassImbalance(trial, labels_regex="", labels_collection="")


# --------------------------------------------------------------------------------------------------------
# TreeDepth
# --------------------------------------------------------------------------------------------------------
def complete_tree(depth):
    """Node ids of a complete binary tree of ``depth`` (root 0, children of k at 2k+1, 2k+2)."""
    return np.arange(2 ** (depth + 1) - 1)


def test_tree_depth_from_node_ids(tmp_path):
    deeper = np.concatenate([complete_tree(4), [31, 32]])  # node 15 split once more: depth 5
    trial = run(tmp_path, [{"trees/Node": complete_tree(4)}, {"trees/Node": deeper}, {"trees/Node": [0]}])
    assert invoke_rule(TreeDepth(trial)) == []  # default depth 8
    rule = TreeDepth(trial, depth="4")
    assert invoke_rule(rule) == [1]
    assert rule.last_reason == "tree 0 has depth 5 > depth 4"
    assert invoke_rule(TreeDepth(trial, depth="5")) == []
    assert invoke_rule(TreeDepth(trial, depth="3")) == [0, 1]
    assert invoke_rule(TreeDepth(trial, depth="0")) == [0, 1]  # a single leaf has depth 0


def chain_tree():
    """An XGBoost-style numbering (in order of creation): every right child splits again, 5 levels deep,
    but the largest id is 10 (the id-based estimate says floor(log2(11)) = 3)."""
    nodes = np.arange(11)
    yes = ["0-1", "", "0-3", "", "0-5", "", "0-7", "", "0-9", "", ""]
    no = ["0-2", "", "0-4", "", "0-6", "", "0-8", "", "0-10", "", ""]
    return nodes, np.array(yes), np.array(no)


def test_tree_depth_follows_yes_no_links(tmp_path):
    nodes, yes, no = chain_tree()
    steps = [{"trees/Node": nodes, "trees/Yes": yes, "trees/No": no, "trees/Tree": np.zeros(11, np.int64)},
             {"trees/Node": nodes}]
    trial = run(tmp_path, steps)
    assert invoke_rule(TreeDepth(trial, depth="4")) == [0]  # exact depth 5 with the links; the estimate (3) without
    assert invoke_rule(TreeDepth(trial, depth="5")) == []
    assert invoke_rule(TreeDepth(trial, depth="2")) == [0, 1]


def test_tree_depth_from_the_hooks_depth_column(tmp_path):
    nodes, yes, no = chain_tree()
    depths = np.array([0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5])
    steps = [{"trees/Node": nodes, "trees/Yes": yes, "trees/No": no, "trees/Depth": depths},
             {"trees/Node": nodes, "trees/Depth": np.minimum(depths, 4)},  # the column wins over the ids
             {"trees/Node": nodes, "trees/Yes": yes, "trees/No": no, "trees/Depth": np.full(11, -1)}]
    trial = run(tmp_path, steps)
    assert invoke_rule(TreeDepth(trial, depth="4")) == [0, 2]  # step 2: no known depth, the links say 5
    assert invoke_rule(TreeDepth(trial, depth="3")) == [0, 1, 2]


def test_tree_depth_several_trees_per_step(tmp_path):
    nodes = np.concatenate([complete_tree(2), complete_tree(5), complete_tree(1)])
    trees = np.repeat([3, 4, 5], [7, 63, 3])
    trial = run(tmp_path, [{"trees/Node": nodes, "trees/Tree": trees}])
    rule = TreeDepth(trial, depth="4")
    assert invoke_rule(rule) == [0]
    assert rule.last_reason == "tree 4 has depth 5 > depth 4"


def test_tree_depth_without_trees_and_bad_parameters(tmp_path):
    trial = run(tmp_path, [{"x": np.zeros(1)}])
    assert invoke_rule(TreeDepth(trial)) == []
    with pytest.raises(SMDebugValueError, match="depth must be >= 0"):
        TreeDepth(trial, depth="-1")
    with pytest.raises(SMDebugValueError, match="depth must be an integer"):
        TreeDepth(trial, depth="4.5")


# --------------------------------------------------------------------------------------------------------
# FeatureImportanceOverweight
# --------------------------------------------------------------------------------------------------------
def importances(kind="weight", **values):
    return {f"feature_importance/{kind}/{f}": np.array([v], np.float32) for f, v in values.items()}


def test_feature_importance_overweight_threshold(tmp_path):
    steps = [
        {**importances(f0=6, f1=5, f2=5, f3=2, f4=2), **importances("gain", f0=100, f1=0.1)},  # top 3: 0.8
        importances(f0=7, f1=5, f2=5, f3=2, f4=1),   # 0.85
        importances(f0=1, f1=1),                     # f2..f4 unused at this step: 0, top 3 = 1
        {"other": np.zeros(1)},
    ]
    trial = run(tmp_path, steps)
    rule = FeatureImportanceOverweight(trial)
    assert invoke_rule(rule) == [1, 2]
    assert invoke_rule(FeatureImportanceOverweight(trial, threshold="0.79")) == [0, 1, 2]
    assert invoke_rule(FeatureImportanceOverweight(trial, nfeatures="4", threshold="0.9")) == [1, 2]  # 0.9, 0.95
    assert invoke_rule(FeatureImportanceOverweight(trial, nfeatures="1", threshold="0.49")) == [2]  # 1/2
    assert invoke_rule(FeatureImportanceOverweight(trial, tensor_regex="feature_importance/gain")) == [0]
    rule = FeatureImportanceOverweight(trial)
    invoke_rule(rule, end_step=2)
    assert rule.last_reason == ("the 3 most important of 5 features carry 0.85 of the importance "
                                "(f0 0.35, f1 0.25, f2 0.25) > threshold 0.8")


def test_feature_importance_overweight_bad_parameters(tmp_path):
    trial = run(tmp_path, [{"x": np.zeros(1)}])
    assert invoke_rule(FeatureImportanceOverweight(trial)) == []
    with pytest.raises(SMDebugValueError, match=r"threshold must be in \[0, 1\]"):
        FeatureImportanceOverweight(trial, threshold="80")
    with pytest.raises(SMDebugValueError, match="nfeatures must be >= 1"):
        FeatureImportanceOverweight(trial, nfeatures="0")
    with pytest.raises(SMDebugValueError, match="nfeatures must be an integer"):
        FeatureImportanceOverweight(trial, nfeatures="three")


def test_data_rules_are_registered_by_the_builtin_pack():
    from smdebug.core.plugins import manager

    manager.reset_for_tests()
    registered = manager.rules()
    for rule in [DeadRelu, SaturatedActivation, CheckInputImages, NLPSequenceRatio, Confusion, ClassImbalance,
                 TreeDepth, FeatureImportanceOverweight]:
        assert registered[rule.__name__].pack == "builtin"
        assert registered[rule.__name__].load() is rule
    manager.reset_for_tests()


def test_check_input_images_names_a_few_of_many_inputs_that_are_no_image(tmp_path):
    """A model fed many inputs, none an image (a Lightning step's 43 batches): the reason names three and counts
    the rest, instead of one line holding every name."""
    steps = [{f"net_input_{i}": np.ones((8, 5)) for i in range(10)}]
    trial = run(tmp_path, steps)
    rule = CheckInputImages(trial, regex="_input_", threshold_samples="1")
    assert invoke_rule(rule) == []
    reason = rule.evaluation.not_applicable_reason()
    assert reason.startswith("the model's input is no image: net_input_0 ") and "and 7 more inputs" in reason, reason
    assert "net_input_9" not in reason, reason
