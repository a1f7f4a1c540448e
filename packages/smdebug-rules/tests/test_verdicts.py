"""Honest verdicts, rule by rule: every built-in rule (parametrized over the registry, so a new rule is
covered as soon as it is registered) on real runs written by real hooks -- a healthy run (judged), a run
that saved none of its tensors (NotEvaluated, saying what it looked for and what the run has), a run whose
event files are damaged and one whose event files are gone (Error naming the file and the step)."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from typing import Dict, Optional

import pytest

pytest.importorskip("torch")
pytest.importorskip("xgboost")

from smdebug.rules import list_rules, run_rules  # noqa: E402
from smdebug.rules.results import ERROR, ISSUES, NO_ISSUES, NOT_APPLICABLE, NOT_EVALUATED  # noqa: E402

from _torch_runs import EveryKindNet, image_data, train_torch  # noqa: E402
from _xgboost_runs import train_xgboost, xgboost_data  # noqa: E402

BUILTIN = sorted(info.name for info in list_rules() if info.pack == "builtin")


@dataclass
class Needs:
    """What a rule needs to judge the healthy runs, and what its NotEvaluated detail must name."""

    source: str = "torch"  # the healthy run it reads: "torch" or "xgboost"
    params: Dict[str, str] = field(default_factory=dict)
    #: parameters on the run that misses its tensors (default: ``params``); a rule that inspects every
    #: tensor by default is given a selection the run lacks
    missing_params: Optional[Dict[str, str]] = None
    #: compared with another run (SimilarAcrossRuns): the healthy run of the same source
    other_trials: bool = False
    #: a piece of the NotEvaluated detail (what the rule looked for)
    looks_for: Optional[str] = None
    #: False for a rule that judges no tensor data (damaged or missing event files do not concern it)
    reads_tensors: bool = True


#: rules that need parameters, another run or the XGBoost run; any other rule gets Needs() as it is
NEEDS = {
    "AllZero": Needs(params={"collection_names": "weights"}, looks_for="collection 'weights'"),
    "CheckInputImages": Needs(params={"regex": "conv0_input_0", "threshold_samples": "1"},
                              looks_for="tensors matching 'conv0_input_0'"),
    "ClassImbalance": Needs("xgboost", {"argmax": "true", "samples": "1"}, looks_for="tensors matching '.*labels'"),
    "Confusion": Needs("xgboost", looks_for="tensor 'labels'"),
    "DeadRelu": Needs(looks_for="tensors matching '.*relu_output'"),
    "ExplodingTensor": Needs(missing_params={"collection_names": "gradients"}, looks_for="collection 'gradients'"),
    "FeatureImportanceOverweight": Needs("xgboost", looks_for="tensors matching '.*feature_importance/weight'"),
    # (judged on the XGBoost run; the bare run is a network's, whose inputs and targets it looks for)
    "LabelLeak": Needs("xgboost", looks_for="collections 'inputs' and 'labels'"),
    "LossNotDecreasing": Needs(params={"num_steps": "3"}, looks_for="collection 'losses'"),
    "OscillatingLoss": Needs(params={"window": "2", "min_swings": "2"}, looks_for="collection 'losses'"),
    "SlowConvergence": Needs(params={"window": "2"}, looks_for="collection 'losses'"),
    "Divergence": Needs(looks_for="collection 'losses'"),
    # the healthy run's dense ReLU outputs are its only 2-D float tensors (its input is an image)
    "UnnormalizedInput": Needs(params={"collection_names": "", "tensor_regex": "CrossEntropyLoss_input_0",
                                       "threshold": "1e9", "min_samples": "2"},
                               looks_for="tensors matching 'CrossEntropyLoss_input_0'"),
    "ImproperOutput": Needs(looks_for="a loss module's inputs"),
    "NLPSequenceRatio": Needs(looks_for="tensors matching '.*embedding0_input_0'"),
    "Overfit": Needs(looks_for="EVAL-mode saves of a loss"),
    "Overtraining": Needs(looks_for="collection 'losses'"),
    "PoorWeightInitialization": Needs(looks_for="tensors matching '.*relu_input'"),
    "SaturatedActivation": Needs(looks_for="tanh_input"),
    "SimilarAcrossRuns": Needs(other_trials=True, missing_params={"collection_names": "gradients"},
                               looks_for="collection 'gradients'"),
    "StalledTrainingRule": Needs(reads_tensors=False),
    "TensorVariance": Needs(params={"collection_names": "gradients", "max_threshold": "1e9"},
                            looks_for="collection 'gradients'"),
    "TreeDepth": Needs("xgboost", looks_for="tensor 'trees/Node'"),
    "UnchangedTensor": Needs(params={"collection_names": "weights"}, looks_for="collection 'weights'"),
    "VanishingGradient": Needs(looks_for="collection 'gradients'"),
    "WeightUpdateRatio": Needs(looks_for="collection 'weights'"),
}


def damage_event_files(run: str) -> None:
    """Bit rot: every byte of every event file after its first record's length field is inverted."""
    for folder, _, files in os.walk(os.path.join(run, "events")):
        for name in files:
            path = os.path.join(folder, name)
            with open(path, "r+b") as f:
                data = bytearray(f.read())
                data[8:] = bytes(b ^ 0xFF for b in data[8:])
                f.seek(0)
                f.write(data)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """{(source, state): path}: real PyTorch and XGBoost runs, healthy, with damaged and with missing event
    files; ("bare", "healthy"): a PyTorch run that saved only the biases (no loss registered)."""
    root = tmp_path_factory.mktemp("verdict-runs")
    x, y = image_data()
    paths = {
        ("torch", "healthy"): train_torch(
            root / "torch", EveryKindNet(), (x, y), steps=24, eval_data=(x[:8], y[:8]),
            include_regex=[".*relu_output", ".*relu_input", ".*tanh_input", ".*sigmoid_input", "conv0_input_0",
                           "embedding0_input_0", r"Loss_input_\d+$"]),
        ("bare", "healthy"): train_torch(root / "bare", EveryKindNet(), (x, y), steps=24, eval_data=(x[:8], y[:8]),
                                         include_collections=["biases"], register_loss=False),
    }
    xs, ys = xgboost_data(n=200)
    paths[("xgboost", "healthy")] = str(train_xgboost(
        root / "xgboost", {"objective": "multi:softprob", "num_class": 2, "max_depth": 3}, xs, ys, rounds=4))
    for source in ("torch", "xgboost"):
        healthy = paths[(source, "healthy")]
        damaged = shutil.copytree(healthy, root / f"{source}-damaged")
        damage_event_files(damaged)
        missing = shutil.copytree(healthy, root / f"{source}-missing")
        shutil.rmtree(missing / "events")
        paths[(source, "damaged")], paths[(source, "missing")] = str(damaged), str(missing)
    return paths


def evaluate(runs, rule: str, source: str, state: str, params=None):
    needs = NEEDS.get(rule, Needs())
    others = [runs[(needs.source, "healthy")]] if needs.other_trials else None
    result = run_rules(runs[(source, state)], [(rule, needs.params if params is None else params)],
                       other_trials=others)
    return result, result.rules[0]


@pytest.mark.parametrize("rule", BUILTIN)
def test_a_healthy_run_is_judged(runs, rule):
    needs = NEEDS.get(rule, Needs())
    result, r = evaluate(runs, rule, needs.source, "healthy")
    assert r.status in (NO_ISSUES, ISSUES), (r.status, r.error, r.detail)
    assert r.steps_evaluated > 0 and r.detail is None
    assert (r.tensors_evaluated > 0) == needs.reads_tensors
    assert result.exit_code == {NO_ISSUES: 0, ISSUES: 1}[r.status]


@pytest.mark.parametrize("rule", BUILTIN)
def test_a_run_missing_its_tensors_is_not_evaluated(runs, rule):
    needs = NEEDS.get(rule, Needs())
    params = needs.params if needs.missing_params is None else needs.missing_params
    result, r = evaluate(runs, rule, "bare", "healthy", params)
    if not needs.reads_tensors:  # judges step arrival: the bare run's steps arrived
        assert r.status == NO_ISSUES and r.steps_evaluated > 0
        return
    if rule in ("TreeDepth", "FeatureImportanceOverweight"):  # a boosted model's rule on a network's run
        assert r.status == NOT_APPLICABLE and "written by PyTorch" in r.detail, (r.status, r.detail)
        return
    assert r.status == NOT_EVALUATED and result.status == NOT_EVALUATED and result.exit_code == 3, (r.status, r.error)
    assert r.steps_evaluated == 0 and r.tensors_evaluated == 0 and not r.findings
    # what it looked for, and what the run has: its steps, modes, collections and a few tensor names
    assert needs.looks_for is None or needs.looks_for in r.detail, r.detail
    has = "the run has 48 steps 0-47 (EVAL 24, TRAIN 24); collections biases; 4 tensors: EveryKindNet_conv0.bias"
    assert has in r.detail, r.detail


def _assert_names_file_and_step(r, run: str) -> None:
    assert r.status == ERROR, (r.status, r.detail)
    assert r.error_file and r.error_file.startswith(os.path.join(run, "events", "")), r.error_file
    assert r.error_file in r.error and isinstance(r.error_step, int) and f"step {r.error_step}" in r.error.replace(
        "step=", "step "), r.error


@pytest.mark.parametrize("state, error", [("damaged", "EventFileCorrupted: "), ("missing", "MissingEventFile: ")])
@pytest.mark.parametrize("rule", BUILTIN)
def test_unreadable_event_files_are_an_error_naming_file_and_step(runs, rule, state, error):
    needs = NEEDS.get(rule, Needs())
    result, r = evaluate(runs, rule, needs.source, state)
    if not needs.reads_tensors:
        assert r.status == NO_ISSUES
        return
    _assert_names_file_and_step(r, runs[(needs.source, state)])
    assert r.error.startswith(error) and result.exit_code == 2


def test_the_other_run_of_a_comparison_is_read_as_carefully(runs):
    result = run_rules(runs[("torch", "healthy")], ["similar_across_runs"], other_trials=[runs[("torch", "missing")]])
    _assert_names_file_and_step(result.rules[0], runs[("torch", "missing")])


def test_a_range_of_steps_the_run_does_not_have_leaves_every_rule_not_evaluated(runs):
    others = [runs[("torch", "healthy")]]
    result = run_rules(runs[("torch", "healthy")], [(rule, NEEDS.get(rule, Needs()).params) for rule in BUILTIN],
                       other_trials=others, start_step=1000)
    assert {r.name: r.status for r in result.rules} == {rule: NOT_EVALUATED for rule in BUILTIN}
    assert all("the run has no steps from step 1000;" in r.detail for r in result.rules)
    assert result.exit_code == 3 and result.steps_evaluated == 0
