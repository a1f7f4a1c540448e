"""What the held-out batch of the rule-accuracy benchmark (benchmarks/rule_accuracy, rows hh_/bh_) taught the
rules, one behaviour per test, on hand-made runs written with the real writer and on tiny real trainings:
frozen layers are not frozen weights, a gradient zero at one batch is no dead layer, a long noisy run does not
oscillate, a metric where higher is better is no loss, an integer regression target is no class, the class
counts are the training data's, a deep tanh network's gradients vanish relative to its last layer, NLLLoss fed
raw scores is an improper output, a loss saved every 10 steps is judged, a validation loss that rose in the
middle is no steady decrease, and verdicts say NotApplicable / NotEvaluated for what the run is not."""

import numpy as np
import pytest
import torch
import torch.nn as nn

import smdebug.pytorch as smd
from smdebug import SaveConfig
from smdebug.core.collection import Collection
from smdebug.core.modes import ModeKeys
from smdebug.rules.generic import (
    AllZero,
    ClassImbalance,
    ImproperOutput,
    LossNotDecreasing,
    OscillatingLoss,
    SlowConvergence,
    UnchangedTensor,
    VanishingGradient,
    WeightUpdateRatio,
)
from smdebug.rules.rule_invoker import invoke_rule
from smdebug.rules.runner import run_rules
from smdebug.trials import create_trial

from _hooks import NumpyHook
from test_progress_rules import run

TRAIN, EVAL = ModeKeys.TRAIN, ModeKeys.EVAL


def losses(values, name="loss"):
    return [{name: float(v)} for v in values]


class MetricsHook(NumpyHook):
    """A hook with XGBoost's kind of collections: ``metrics`` (every ``<set>-<metric>``) and ``losses`` (the
    metrics that are losses), plus labels and predictions."""

    def default_collections(self):
        return [Collection("metrics", include_regex=[r"^[^-/]+-[^/]+$"]),
                Collection("losses", include_regex=[r"^[^-/]+-(?!auc|ndcg)[^/]+$"]),
                Collection("labels", include_regex=["^labels$"]),
                Collection("predictions", include_regex=["^predictions$"])]


def write_metrics(path, steps):
    hook = MetricsHook(out_dir=str(path), save_config=SaveConfig(save_interval=1),
                       include_collections=["metrics", "losses", "labels", "predictions"])
    for tensors in steps:
        hook.begin_step()
        for name, value in tensors.items():
            hook.record(name, np.asarray(value, dtype=np.float64))
        hook.end_step()
    hook.close()
    return create_trial(str(path))


# --- frozen on purpose is not frozen by mistake (WeightUpdateRatio, UnchangedTensor) -------------------------
def test_weights_without_a_gradient_are_frozen_on_purpose(tmp_path):
    w_frozen, w = np.ones((2, 2)), np.ones((2, 2))
    steps = [{"w/body": w_frozen, "w/head": w + i, "gradient/w/head": np.full((2, 2), 0.1)} for i in range(4)]
    trial = run(tmp_path / "finetune", steps)
    # the body has no gradient while the head has one: frozen for fine-tuning, no fault
    assert invoke_rule(WeightUpdateRatio(trial)) == []
    assert invoke_rule(UnchangedTensor(trial)) == []
    # asked about by name, the frozen tensor is judged: the user wants to know
    assert invoke_rule(UnchangedTensor(trial, tensor_regex="w/body")) == [2, 3]
    # a weight that gets a gradient and does not change is the fault
    steps = [{"w/body": w_frozen, "gradient/w/body": np.full((2, 2), 0.1), "w/head": w + i,
              "gradient/w/head": np.full((2, 2), 0.1)} for i in range(4)]
    assert invoke_rule(WeightUpdateRatio(run(tmp_path / "stuck", steps))) == [1, 2, 3]
    # no gradient saved at all (zero_grad() between backward() and step()): nothing tells frozen from trained
    steps = [{"w/body": w_frozen, "w/head": w_frozen} for _ in range(4)]
    assert invoke_rule(WeightUpdateRatio(run(tmp_path / "no-gradients", steps))) == [1, 2, 3]


def test_fine_tuning_a_frozen_body_is_quiet_on_a_real_run(tmp_path):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 3))
    for p in model[0].parameters():
        p.requires_grad_(False)
    x, y = torch.randn(64, 10), torch.randint(0, 3, (64,))
    hook = smd.Hook.recommended(str(tmp_path))
    hook.register_module(model)
    loss_fn = nn.CrossEntropyLoss()
    hook.register_loss(loss_fn)
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    for _ in range(12):
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    hook.close()
    result = run_rules(str(tmp_path), ["WeightUpdateRatio", "UnchangedTensor"])
    assert [r.status for r in result.rules] == ["NoIssuesFound", "NoIssuesFound"], [r.findings for r in result.rules]


# --- AllZero: one batch's zeros are no dead layer -----------------------------------------------------------
def test_all_zero_needs_a_batch_quantity_zero_at_patience_saves(tmp_path):
    # the bias gradient of a one-output layer under an L1 loss: exactly 0 whenever the residuals' signs balance
    scalar = [{"gradient/out.bias": [0.0 if i in (3, 4, 7) else 0.25]} for i in range(10)]
    assert invoke_rule(AllZero(run(tmp_path / "scalar", scalar), collection_names="gradients")) == []
    # a layer cut off from the loss: zero at every save, found from the third on
    dead = [{"gradient/fc0.weight": np.zeros((2, 3))} for _ in range(5)]
    assert invoke_rule(AllZero(run(tmp_path / "dead", dead), collection_names="gradients")) == [2, 3, 4]
    # zero at two saves in a row, then not: not persistent
    blip = [{"gradient/fc0.weight": np.zeros((2, 3)) if i in (1, 2) else np.ones((2, 3))} for i in range(5)]
    trial = run(tmp_path / "blip", blip)
    assert invoke_rule(AllZero(trial, collection_names="gradients")) == []
    assert invoke_rule(AllZero(trial, collection_names="gradients", patience="2")) == [2]


# --- OscillatingLoss: a fixed stretch of blocks ---------------------------------------------------------------
def test_oscillating_loss_ignores_rare_excursions_of_a_long_run(tmp_path):
    # 2000 saves: a converged loss of 0.3 with one block of 10 saves at 0.7 every 200 saves (a few hard batches
    # in a row): across the whole second half these excursions zigzag by more than 20 % of the initial 1.0,
    # but no stretch of 10 blocks holds more than one of them
    values = [1.0] * 10 + [0.3] * 1990
    for start in range(1050, 2000, 200):
        values[start:start + 10] = [0.7] * 10
    rule = OscillatingLoss(run(tmp_path / "long", losses(values)))
    assert invoke_rule(rule) == [] and rule.evaluation.steps > 0
    # an optimiser overshooting back and forth: a swing every block is found whatever the run's length
    swinging = [1.0] * 10 + [0.3] * 1890 + [0.3 if (i // 10) % 2 else 0.8 for i in range(100)]
    assert invoke_rule(OscillatingLoss(run(tmp_path / "swinging", losses(swinging))))


# --- LossNotDecreasing -----------------------------------------------------------------------------------
def test_loss_not_decreasing_judges_a_loss_saved_every_10_steps(tmp_path):
    steps = [{"loss": 2.3} if s % 10 == 0 else {"other": 0.0} for s in range(400)]
    rule = LossNotDecreasing(run(tmp_path / "flat", steps))
    found = invoke_rule(rule)
    assert found and found[0] % 10 == 0 and rule.evaluation.steps > 0
    falling = [{"loss": 2.3 * np.exp(-s / 100)} if s % 10 == 0 else {"other": 0.0} for s in range(400)]
    rule = LossNotDecreasing(run(tmp_path / "falling", falling))
    assert invoke_rule(rule) == [] and rule.evaluation.steps > 0


def test_a_loss_at_its_floor_of_zero_has_converged(tmp_path):
    # a training error rate that reached 0 in the first rounds and stays there
    values = [0.05, 0.02, 0.01] + [0.0] * 97
    rule = LossNotDecreasing(run(tmp_path, losses(values)))
    assert invoke_rule(rule) == [] and rule.evaluation.steps > 0
    # a loss stuck at a value above 0 still fires
    assert invoke_rule(LossNotDecreasing(run(tmp_path / "stuck", losses([0.05] * 100))))


def test_metrics_where_higher_is_better_are_followed_as_one_minus_the_metric(tmp_path):
    # NDCG rising: a run with no loss metric; LossNotDecreasing used to read the rising NDCG as a loss
    steps = [{"train-ndcg": 0.6 + 0.3 * (1 - np.exp(-r / 20)), "validation-ndcg": 0.55 + 0.2 * (1 - np.exp(-r / 20))}
             for r in range(80)]
    trial = write_metrics(tmp_path / "ranking", steps)
    rule = LossNotDecreasing(trial)
    assert invoke_rule(rule) == [] and rule.evaluation.steps > 0
    # an AUC that never improves is a curve that does not decrease, named as what is followed
    stuck = write_metrics(tmp_path / "stuck", [{"train-auc": 0.6, "validation-auc": 0.58} for _ in range(80)])
    rule = LossNotDecreasing(stuck)
    assert invoke_rule(rule)
    assert rule.last_reason.startswith("1 - train-auc did not decrease")
    # a loss metric is there: it is what is judged, the AUC beside it is left alone
    both = write_metrics(tmp_path / "both", [{"train-auc": 0.6, "train-logloss": 0.7 * np.exp(-r / 30)}
                                             for r in range(80)])
    assert invoke_rule(LossNotDecreasing(both)) == []


# --- SlowConvergence: a steady decrease falls in every third ----------------------------------------------------
def test_slow_convergence_needs_a_decrease_in_every_third(tmp_path):
    # a small validation set's loss: 0.058 -> 0.029 (first third) -> 0.036 (rose) -> 0.015: the last third's
    # fall only undoes the middle third's rise
    rng = np.random.default_rng(0)
    curve = np.concatenate([np.linspace(0.058, 0.029, 30), np.linspace(0.029, 0.036, 30),
                            np.linspace(0.036, 0.015, 30)]) * rng.uniform(0.97, 1.03, 90)
    assert invoke_rule(SlowConvergence(run(tmp_path / "bump", losses(curve)))) == []
    # falling in every third, as fast at the end as at the start: still fires
    steady = np.linspace(1.0, 0.4, 90) * rng.uniform(0.99, 1.01, 90)
    assert invoke_rule(SlowConvergence(run(tmp_path / "steady", losses(steady)))) == [89]


# --- VanishingGradient: relative to the largest layer gradient ------------------------------------------------------
def test_vanishing_gradient_relative_test(tmp_path):
    def steps(first_scale, n=4):
        return [{"gradient/fc0.weight": np.full((4, 4), first_scale), "gradient/fc9.weight": np.full((4, 4), 0.1)}
                for _ in range(n)]

    # 4e-7 norm against 0.4: a ratio of 1e-6 and a norm below 1e-4, at 3 steps in a row
    rule = VanishingGradient(run(tmp_path / "vanishing", steps(1e-7)))
    assert invoke_rule(rule) == [2, 3]
    assert rule.last_reason.startswith("gradient/fc0.weight: gradient norm 4e-07 is 1e-06 of the largest")
    # a ratio of 1e-4 but a norm of 4e-3: a large network's small layer, not a vanishing gradient
    assert invoke_rule(VanishingGradient(run(tmp_path / "large", [
        {"gradient/fc0.weight": np.full((4, 4), 1e-3), "gradient/fc9.weight": np.full((4, 4), 10.0)}] * 4))) == []
    # two steps only: a first step of a network whose residual branches start at zero
    assert invoke_rule(VanishingGradient(run(tmp_path / "transient", steps(1e-7, n=2)))) == []
    assert invoke_rule(VanishingGradient(run(tmp_path / "off", steps(1e-7)), ratio_threshold="0")) == []


def test_vanishing_gradient_of_a_deep_tanh_network_at_default_initialisation(tmp_path):
    torch.manual_seed(0)
    layers = []
    for _ in range(20):
        layers += [nn.Linear(16, 16), nn.Tanh()]
    deep = nn.Sequential(nn.Linear(10, 16), nn.Tanh(), *layers, nn.Linear(16, 3))
    shallow = nn.Sequential(nn.Linear(10, 16), nn.Tanh(), nn.Linear(16, 3))
    x, y = torch.randn(64, 10), torch.randint(0, 3, (64,))
    for name, model in (("deep", deep), ("shallow", shallow)):
        hook = smd.Hook(out_dir=str(tmp_path / name), save_config=smd.SaveConfig(save_interval=1),
                        include_collections=["gradients"])
        hook.register_module(model)
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        for _ in range(5):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
        hook.close()
    deep_trial = create_trial(str(tmp_path / "deep"))
    assert invoke_rule(VanishingGradient(deep_trial, threshold="0")) == [2, 3, 4]  # the relative test alone
    rule = VanishingGradient(create_trial(str(tmp_path / "shallow")))
    assert invoke_rule(rule) == [] and rule.evaluation.steps == 5


# --- ClassImbalance and Confusion: classes are the training data's, and classes ---------------------------------
def test_class_imbalance_counts_the_training_labels(tmp_path):
    train = np.array([0] * 113 + [1] * 5 + [2] * 2)
    balanced = np.array([0, 1, 2] * 60)
    steps = [(TRAIN, {"labels": train[i * 40:(i + 1) * 40]}) for i in range(3)]
    steps += [(EVAL, {"labels": balanced}) for _ in range(3)]
    trial = run(tmp_path, steps, include_regex=["^labels$"])
    assert invoke_rule(ClassImbalance(trial)) == [2, 3, 4, 5]
    rule = ClassImbalance(trial)
    invoke_rule(rule, end_step=3)
    assert rule.last_reason.startswith("class 0 has 113 samples, class 2 2: ratio 56.5, at least 15.9")


def test_integer_regression_and_ranking_targets_are_no_classes(tmp_path):
    rng = np.random.default_rng(0)
    counts = rng.poisson(0.7, 300).astype(float)  # mostly 0, a few up to 5: like skewed classes
    steps = [{"labels": counts, "predictions": counts + rng.uniform(-0.4, 0.4, 300)} for _ in range(3)]
    trial = write_metrics(tmp_path / "counts", steps)
    rule = ClassImbalance(trial)
    assert invoke_rule(rule) == []
    result = run_rules(str(tmp_path / "counts"), ["ClassImbalance", "Confusion"])
    assert [r.status for r in result.rules] == ["NotApplicable", "NotApplicable"]
    assert "a regression or ranking, whose targets are no classes" in result.rules[0].detail
    # class ids predicted as class ids (multi:softmax) or as one probability of two classes are classes
    labels = np.array([0] * 290 + [1] * 10, dtype=float)
    probabilities = np.clip(labels * 0.8 + 0.1, 0, 1)
    assert invoke_rule(ClassImbalance(write_metrics(tmp_path / "binary", [
        {"labels": labels, "predictions": probabilities}] * 2)))


def test_a_regression_run_has_no_classes_to_judge(tmp_path):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    hook = smd.Hook.recommended(str(tmp_path))
    hook.register_module(model)
    loss_fn = nn.MSELoss()
    hook.register_loss(loss_fn)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(32, 4)
    for _ in range(12):
        opt.zero_grad()
        loss_fn(model(x), x[:, :1]).backward()
        opt.step()
    hook.close()
    result = run_rules(str(tmp_path), ["ClassImbalance", "Confusion", "UnnormalizedInput", "ImproperOutput"])
    status = {r.name: r for r in result.rules}
    assert status["ClassImbalance"].status == status["Confusion"].status == "NotApplicable"
    assert status["UnnormalizedInput"].status == "NoIssuesFound"
    # Hook.recommended saves every loss's inputs (loss_inputs): a regression's too, judged and sound
    assert status["ImproperOutput"].status == "NoIssuesFound"


# --- UnnormalizedInput: images and ids are not its kind ---------------------------------------------------------
def test_unnormalized_input_is_not_applicable_to_images_and_token_ids(tmp_path):
    for name, model, x in (("images", nn.Sequential(nn.Conv2d(1, 2, 3), nn.Flatten(), nn.Linear(72, 3)),
                            torch.randn(16, 1, 8, 8)),
                           ("tokens", nn.Sequential(nn.Embedding(20, 4), nn.Flatten(), nn.Linear(24, 3)),
                            torch.randint(0, 20, (16, 6)))):
        hook = smd.Hook.recommended(str(tmp_path / name))
        hook.register_module(model)
        for _ in range(3):
            model(x)
        hook.close()
        r = run_rules(str(tmp_path / name), ["UnnormalizedInput"]).rules[0]
        assert r.status == "NotApplicable", (name, r.status, r.detail)
        assert ("is an image" if name == "images" else "token or category ids") in r.detail


# --- ImproperOutput: NLLLoss fed raw scores -------------------------------------------------------------------------
@pytest.mark.parametrize("log_softmax, fires", [(False, True), (True, False)])
def test_nll_loss_fed_raw_scores(tmp_path, log_softmax, fires):
    torch.manual_seed(0)
    layers = [nn.Linear(10, 4)] + ([nn.LogSoftmax(dim=1)] if log_softmax else [])
    model = nn.Sequential(*layers)
    hook = smd.Hook.recommended(str(tmp_path))
    hook.register_module(model)
    loss_fn = nn.NLLLoss()
    hook.register_loss(loss_fn)
    x, y = torch.randn(128, 10), torch.randint(0, 4, (128,))
    for _ in range(4):
        loss_fn(model(x), y)
    hook.close()
    rule = ImproperOutput(create_trial(str(tmp_path)))
    assert bool(invoke_rule(rule)) == fires
    if fires:
        assert "raw scores, not log-probabilities (apply log_softmax)" in rule.last_reason


# --- Overfit on a run whose validation has no mode -------------------------------------------------------------------
def test_overtraining_says_why_it_does_not_judge_evaluation_sets_without_modes(tmp_path):
    # (Overfit judges them as a booster's: the held-out metric never followed the training one)
    trial = write_metrics(tmp_path, [{"train-logloss": 0.6 - 0.005 * r, "validation-logloss": 0.6 + 0.001 * r}
                                     for r in range(40)])
    overfit, overtraining = run_rules(str(tmp_path), ["Overfit", "Overtraining"]).rules
    assert overtraining.status == "NotEvaluated", overtraining
    assert "metrics of several evaluation sets (train-logloss, validation-logloss)" in overtraining.detail
    assert overfit.status == "IssuesFound", overfit
    assert overfit.findings[0].reason.startswith("validation-logloss: no generalisation: its best is its first round")
    assert trial  # (written)
