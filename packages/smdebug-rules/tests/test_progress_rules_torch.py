"""Training-progress rules on real (tiny) PyTorch runs: each rule fires on a run that has the problem and
stays quiet on a healthy one."""

import threading
import time
from collections import OrderedDict

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("smdebug.pytorch")

import torch.nn as nn  # noqa: E402

from smdebug.rules.generic import (  # noqa: E402
    LossNotDecreasing,
    Overfit,
    Overtraining,
    PoorWeightInitialization,
    SimilarAcrossRuns,
    WeightUpdateRatio,
)
from smdebug.rules.rule_invoker import invoke_rule  # noqa: E402
from smdebug.rules.results import NO_ISSUES  # noqa: E402
from smdebug.rules.runner import run_rules  # noqa: E402
from smdebug.trials import create_trial  # noqa: E402

from _torch_runs import classification_data, mlp, train_recommended, train_torch  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def warm_torch(tmp_path_factory):
    """The first training step of a process is slow (lazy imports); pay for it before timing anything."""
    train_torch(tmp_path_factory.mktemp("warm"), mlp(), classification_data(16), steps=1)


def trial_of(path):
    return create_trial(str(path))


# --- WeightUpdateRatio -------------------------------------------------------------------------------------
@pytest.mark.parametrize("lr, fired, words", [(1e4, True, "> large_threshold 10"),
                                             (1e-12, True, "< small_threshold 1e-08"),
                                             (0.05, False, None)])
def test_weight_update_ratio(tmp_path, lr, fired, words):
    trial = trial_of(train_torch(tmp_path, mlp(), classification_data(), steps=4, lr=lr,
                                 include_collections=["weights"]))
    rule = WeightUpdateRatio(trial)
    steps = invoke_rule(rule)
    if fired:
        assert steps == [1, 2, 3] and words in rule.last_reason and "between TRAIN steps 2 and 3" in rule.last_reason
    else:
        assert steps == []


def test_weight_update_ratio_quiet_on_a_warm_up_from_almost_nothing(tmp_path):
    """A cubic warm-up from 2e-8 of the peak learning rate: the first updates are far below small_threshold,
    then grow to normal size (probe 17a F5 fired at the first step of such a healthy run)."""
    x, y = classification_data(256)
    losses = train_recommended(tmp_path, mlp(), x, y, nn.CrossEntropyLoss(), steps=60, lr=0.5,
                               schedule=lambda step: max(2e-8, min(1.0, (step / 30) ** 3)))
    assert losses[-1] < 0.5 * losses[0]  # (it trained)
    (result,) = run_rules(str(tmp_path), ["WeightUpdateRatio"]).rules
    assert result.status == NO_ISSUES, (result.status, result.detail, result.findings)


def test_weight_update_ratio_fires_on_tiny_updates_that_do_not_grow(tmp_path):
    """A learning rate of 1e-10 on a float64 model: the weights move (float64 keeps the change), by a ratio that
    stays far below small_threshold. The first tiny update is judged at the next save, which fires."""
    x, y = classification_data(256)
    train_recommended(tmp_path, mlp().double(), x.double(), y, nn.CrossEntropyLoss(), steps=20, lr=1e-10)
    trial = trial_of(tmp_path)
    rule = WeightUpdateRatio(trial)
    assert invoke_rule(rule)[0] == 2
    assert "< small_threshold 1e-08" in rule.last_reason


# --- LossNotDecreasing -------------------------------------------------------------------------------------
def test_loss_not_decreasing_fires_when_nothing_learns(tmp_path):
    trial = trial_of(train_torch(tmp_path, mlp(), classification_data(), steps=60, lr=0.0,
                                 include_collections=["losses"]))
    rule = LossNotDecreasing(trial)
    fired = invoke_rule(rule)
    assert fired and 49 <= fired[0] < 60  # judged from step 39, met twice 10 steps apart
    assert rule.last_reason.startswith("CrossEntropyLoss_output_0 did not decrease over the second half")


def test_loss_not_decreasing_fires_when_labels_say_nothing_about_inputs(tmp_path):
    # labels drawn independently of the inputs: the loss creeps down a little as the model memorises
    # batches, but stays near chance level (ln 3) -- "barely decreased" is no decrease
    x, _ = classification_data(512)
    y = torch.randint(0, 3, (512,), generator=torch.Generator().manual_seed(7))
    trial = trial_of(train_torch(tmp_path, mlp(), (x, y), steps=150, lr=0.1, batch_size=32,
                                 include_collections=["losses"]))
    rule = LossNotDecreasing(trial)
    assert invoke_rule(rule)
    assert rule.last_reason.startswith("CrossEntropyLoss_output_0 barely decreased over the second half")
    assert "progress below min_progress_percent 10%" in rule.last_reason


def test_loss_not_decreasing_quiet_on_a_learning_model(tmp_path):
    trial = trial_of(train_torch(tmp_path, mlp(), classification_data(), steps=60, lr=0.1,
                                 include_collections=["losses"]))
    rule = LossNotDecreasing(trial)
    assert invoke_rule(rule) == [] and rule.evaluation.steps > 0


# --- Overfit and Overtraining ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def memorising_run(tmp_path_factory):
    """A large MLP memorising 8 samples; evaluated on 128 held-out samples every 3 steps."""
    return train_torch(tmp_path_factory.mktemp("memorising"), mlp(hidden=64, depth=2), classification_data(8),
                       steps=30, lr=0.01, optimizer="adam", include_collections=["losses"],
                       eval_data=classification_data(128, seed=1), eval_every=3)


@pytest.fixture(scope="module")
def healthy_eval_run(tmp_path_factory):
    """A small MLP on 512 samples, evaluated on 512 other samples of the same distribution every 5 steps."""
    return train_torch(tmp_path_factory.mktemp("healthy"), mlp(), classification_data(512), steps=30, lr=0.1,
                       include_collections=["losses"], eval_data=classification_data(512, seed=1), eval_every=5)


def test_overfit_fires_on_a_memorising_model(memorising_run):
    trial = trial_of(memorising_run)
    rule = Overfit(trial, patience="3")
    steps = invoke_rule(rule)
    eval_steps = [s for s in trial.steps() if trial.mode(s).name == "EVAL"]
    assert steps and set(steps) <= set(eval_steps)
    assert "overfitting: median validation loss" in rule.last_reason and "above training" in rule.last_reason


def test_overfit_quiet_on_a_healthy_model(healthy_eval_run):
    assert invoke_rule(Overfit(trial_of(healthy_eval_run))) == []


def test_overtraining_fires_when_validation_loss_stops_improving(memorising_run):
    trial = trial_of(memorising_run)
    rule = Overtraining(trial, patience_validation="3", window_validation="1", window_train="1")
    steps = invoke_rule(rule)
    assert steps and all(trial.mode(s).name == "EVAL" for s in steps)
    # 8 memorised samples: the held-out loss is at its best at the first evaluation, already below the loss the
    # model started from (it generalised a little, then overtrained): the plain words, not "never generalised"
    # (probe 19a W1)
    assert "validation loss has not improved by 1% for" in rule.last_reason, rule.last_reason
    assert "never generalised" not in rule.last_reason, rule.last_reason
    assert invoke_rule(Overtraining(trial, patience_validation="10", window_validation="1", window_train="1")) == []


def test_overtraining_says_never_generalised_of_misaligned_validation_labels(tmp_path):
    """Validation labels shuffled apart from their rows: the validation loss never gets below where training
    started, and the finding sends the user to the validation data rather than to early stopping."""
    x, y = classification_data(128, seed=1)
    misaligned = (x, y[torch.randperm(len(y), generator=torch.Generator().manual_seed(0))])
    trial = trial_of(train_torch(tmp_path, mlp(hidden=64, depth=2), classification_data(256), steps=60, lr=0.01,
                                 optimizer="adam", include_collections=["losses"], eval_data=misaligned,
                                 eval_every=3))
    rule = Overtraining(trial, patience_validation="3", window_validation="1", window_train="1")
    assert invoke_rule(rule), rule.last_reason
    assert "validation loss never improved by 1% on its first evaluations" in rule.last_reason, rule.last_reason
    assert "never generalised" in rule.last_reason and "validation data" in rule.last_reason


def test_overtraining_fires_when_training_loss_is_flat(tmp_path):
    trial = trial_of(train_torch(tmp_path, mlp(), classification_data(), steps=8, lr=0.0,
                                 include_collections=["losses"]))
    assert invoke_rule(Overtraining(trial)) == []  # the training loss alone only with judge_training
    rule = Overtraining(trial, judge_training="true", window_train="1")
    assert invoke_rule(rule) == [5, 6, 7]
    assert "training loss has not improved by 1% for 7 blocks of 1 saves" in rule.last_reason


def test_overtraining_quiet_on_a_healthy_model(healthy_eval_run):
    assert invoke_rule(Overtraining(trial_of(healthy_eval_run))) == []


# --- SimilarAcrossRuns -------------------------------------------------------------------------------------
def test_similar_across_runs(tmp_path):
    def run(name, seed):
        return trial_of(train_torch(tmp_path / name, mlp(seed=seed), classification_data(), steps=4))

    base, same, other = run("base", 0), run("same", 0), run("other", 1)
    assert invoke_rule(SimilarAcrossRuns(base, other_trials=[same])) == []
    rule = SimilarAcrossRuns(base, other_trials=[other])
    assert invoke_rule(rule) == [0, 1, 2, 3]
    assert "differs from run other" in rule.last_reason


# --- PoorWeightInitialization ------------------------------------------------------------------------------
def relu_mlp():
    """Modules named ``*_relu`` so that their inputs (``a_relu_input_0``) match the default regex."""
    torch.manual_seed(0)
    return nn.Sequential(OrderedDict([("fc0", nn.Linear(10, 16)), ("a_relu", nn.ReLU()),
                                      ("fc1", nn.Linear(16, 16)), ("b_relu", nn.ReLU()),
                                      ("out", nn.Linear(16, 3))]))


@pytest.mark.parametrize("init, check", [("default", None), ("one layer x100", "activation inputs"),
                                         ("zero weights", "gradients")])
def test_poor_weight_initialization(tmp_path, init, check):
    model = relu_mlp()
    with torch.no_grad():
        if init == "one layer x100":
            model.fc1.weight.mul_(100)
        elif init == "zero weights":
            for layer in (model.fc0, model.fc1, model.out):
                layer.weight.zero_()
    trial = trial_of(train_torch(tmp_path, model, classification_data(), steps=12,
                                 include_collections=["gradients", "losses"], include_regex=[".*relu_input"]))
    assert trial.tensor_names(regex="relu_input") == ["a_relu_input_0", "b_relu_input_0"]
    rule = PoorWeightInitialization(trial)
    steps = invoke_rule(rule)
    if check is None:
        assert steps == []
    elif init == "zero weights":
        # only the first 10 steps are examined; at steps 0 and 1 the hidden layers get a gradient of exactly zero
        # (the output layer's weights are zero), which a layer initialised at zero on purpose (LoRA's B) gives
        # too: judged once the output layer has moved, when every unit of a layer still gets the same gradient
        assert steps == list(range(2, 10))
        assert rule.last_reason.startswith(check)
    else:
        assert steps == list(range(10))  # only the first 10 steps are examined
        assert rule.last_reason.startswith(check)


def test_poor_weight_initialization_quiet_on_pytorchs_default_cnn(tmp_path):
    """PyTorch's default weights shrink the variance of pre-activations several-fold per layer (more with
    pooling between): a default-initialised two-convolution net reaches a ratio between 10 (the original's
    threshold, which flagged such a healthy CNN) and the default of 25; weights drawn from N(0, 1) on the same
    net still fire."""

    def cnn():
        torch.manual_seed(0)
        return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.AvgPool2d(2),
                             nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                             nn.Linear(16, 3))

    g = torch.Generator().manual_seed(0)
    images = (torch.rand(64, 1, 8, 8, generator=g) > 0.7).float()  # sparse strokes, as in digit images
    labels = torch.randint(0, 3, (64,), generator=g)
    collections = ["relu_activations", "gradients", "losses"]
    default = trial_of(train_torch(tmp_path / "default", cnn(), (images, labels), steps=3,
                                   include_collections=collections))
    rule = PoorWeightInitialization(default, threshold="10")
    assert invoke_rule(rule) == [0, 1, 2]
    per_layer = float(rule.last_reason.split("(")[1].split(" per layer")[0])
    assert 10 < per_layer < 25
    assert invoke_rule(PoorWeightInitialization(default)) == []

    wide = cnn()
    with torch.no_grad():
        for layer in wide:
            if isinstance(layer, nn.Conv2d):
                layer.weight.normal_(0.0, 1.0)
    scaled = trial_of(train_torch(tmp_path / "normal", wide, (images, labels), steps=3,
                                  include_collections=collections))
    rule = PoorWeightInitialization(scaled)
    assert invoke_rule(rule)[:1] == [0] and rule.last_reason.startswith("activation inputs")


# --- StalledTrainingRule -----------------------------------------------------------------------------------
def follow_live_run(path, pause_at=None, pause=0.0, threshold="0.5"):
    def before_step(step):
        if step == pause_at:
            time.sleep(pause)

    training = threading.Thread(target=train_torch, args=(path, mlp(), classification_data()),
                                kwargs={"steps": 15, "include_collections": ["losses"], "before_step": before_step})
    training.start()
    try:
        deadline = time.monotonic() + 30
        while not (path / "collections").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        trial = create_trial(str(path), poll_interval=0.05)
        result = run_rules(trial, [("StalledTrainingRule", {"threshold": threshold})], follow=True,
                           poll_interval=0.05, timeout=30)
    finally:
        training.join()
    assert result.training_ended
    return result.rules[0]


def test_stalled_training_fires_once_while_a_live_run_pauses(tmp_path):
    rule = follow_live_run(tmp_path / "live", pause_at=6, pause=1.2)
    assert len(rule.findings) == 1
    assert rule.findings[0].reason.startswith("no new step for ")
    assert rule.findings[0].reason.endswith("(threshold 0.5 s)")


def test_stalled_training_quiet_on_a_steady_live_run(tmp_path):
    rule = follow_live_run(tmp_path / "live", threshold="1")
    assert rule.findings == [] and rule.status == NO_ISSUES
