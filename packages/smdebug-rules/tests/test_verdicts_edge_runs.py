"""Verdicts on runs at the edges, each written by the real PyTorch hook: a run that only evaluates, empty
tensors, a model whose activations went NaN, scores per class with argmax=False; and parameters that would
make a rule unable to fire. None of them may read as "no issues" when nothing was judged, and none may raise an
alarm that is not about the run."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import smdebug.pytorch as smd  # noqa: E402
from smdebug.rules import run_rules  # noqa: E402
from smdebug.rules.results import ERROR, ISSUES, NOT_APPLICABLE, NOT_EVALUATED  # noqa: E402

from _torch_runs import classification_data, mlp, train_torch  # noqa: E402


def _verdict(run, rule, params=None):
    result = run_rules(run, [(rule, params or {})])
    return result.rules[0]


@pytest.fixture(scope="module")
def healthy(tmp_path_factory):
    return train_torch(tmp_path_factory.mktemp("healthy") / "run", mlp(), classification_data(), steps=12,
                       include_collections=("weights", "gradients", "losses", "relu_activations"))


# --- parameters that would make a rule pass everything ---------------------------------------------------
@pytest.mark.parametrize("rule, params, says", [
    ("VanishingGradient", {"threshold": "nan"}, "threshold must be a number, got NaN"),
    ("VanishingGradient", {"threshold": "-1"}, "threshold must be in [0, inf]"),
    # (a number past float's range is infinity: the rule fired on every gradient, "< threshold inf")
    ("VanishingGradient", {"threshold": "1e400"}, "threshold must be a finite number, got '1e400'"),
    ("VanishingGradient", {"threshold": "9" * 5000}, "threshold must be a finite number, got '99999"),
    ("AllZero", {"collection_names": "weights", "threshold": "-inf"}, "threshold must be a finite number"),
    ("VanishingGradient", {"norm_threshold": "-1"}, "norm_threshold must be in [0, inf]"),
    ("AllZero", {"collection_names": "weights", "threshold": "nan"}, "threshold must be a number, got NaN"),
    ("AllZero", {"collection_names": "weights", "threshold": "-5"}, "threshold must be in [0, 100]"),
    ("AllZero", {"collection_names": "weights", "threshold": "101"}, "threshold must be in [0, 100]"),
    ("TensorVariance", {"collection_names": "weights", "min_threshold": "nan"}, "min_threshold must be a number"),
    ("TensorVariance", {"collection_names": "weights", "max_threshold": "-1"}, "max_threshold must be in [0, inf]"),
    ("Overfit", {"ratio_threshold": "nan"}, "ratio_threshold must be a number, got NaN"),
    ("Overfit", {"ratio_threshold": "-3"}, "ratio_threshold must be in [0, inf]"),
])
def test_parameters_no_finding_could_meet_are_refused(healthy, rule, params, says):
    r = _verdict(healthy, rule, params)
    assert r.status == ERROR and says in (r.error or ""), (r.status, r.error, r.detail)


# --- a run that only evaluates --------------------------------------------------------------------------
def test_a_run_of_evaluation_steps_only_is_not_judged_as_training(tmp_path):
    torch.manual_seed(0)
    model, loss_fn = mlp(), torch.nn.CrossEntropyLoss()
    x, y = classification_data()
    hook = smd.Hook(str(tmp_path / "run"), save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["weights", "losses"])
    hook.register_module(model)
    hook.register_loss(loss_fn)
    hook.set_mode(smd.modes.EVAL)
    with torch.no_grad():
        for i in range(30):  # (batches of a fixed model: the loss wanders, the weights stay)
            loss_fn(model(x[(i * 16) % 128:(i * 16) % 128 + 16]), y[(i * 16) % 128:(i * 16) % 128 + 16])
    hook.close()
    for rule in ("LossNotDecreasing", "WeightUpdateRatio", "SlowConvergence"):
        r = _verdict(str(tmp_path / "run"), rule)
        assert r.status == NOT_APPLICABLE and "EVAL/PREDICT steps only" in r.detail, (rule, r.status, r.detail)
    # asked to, the loss rule looks at the evaluation steps (30, each saved, are too few for its windows: the
    # run is too short for it, not "EVAL/PREDICT steps only")
    r = _verdict(str(tmp_path / "run"), "LossNotDecreasing", {"mode": "EVAL"})
    assert "EVAL/PREDICT steps only" not in (r.detail or "") and "too short for this rule" in r.detail, r.detail


# --- empty tensors --------------------------------------------------------------------------------------
def test_empty_tensors_are_not_evaluated_not_passed_or_flagged(tmp_path):
    hook = smd.Hook(str(tmp_path / "run"), save_config=smd.SaveConfig(save_interval=1), include_regex=["empty_t"])
    for _ in range(6):
        hook.begin_step()
        hook.record_tensor_value("empty_t", torch.zeros(0))
        hook.end_step()
    hook.close()
    run = str(tmp_path / "run")
    for rule, params in [("AllZero", {}), ("ExplodingTensor", {}), ("UnchangedTensor", {}),
                         ("TensorVariance", {"max_threshold": "10", "min_threshold": "0.0001"})]:
        r = _verdict(run, rule, {"tensor_regex": "empty_t", **params})
        assert r.status == NOT_EVALUATED, (rule, r.status, r.error, r.detail)


# --- NaN activations ------------------------------------------------------------------------------------
def test_nan_activations_are_not_read_as_dead_units_or_probabilities(tmp_path):
    model = mlp()
    with torch.no_grad():
        model[0].weight[0, 0] = float("nan")  # (every hidden value NaN from the first step)
    run = train_torch(tmp_path / "run", model, classification_data(), steps=8,
                      include_collections=("relu_activations", "losses", "loss_inputs"))
    for rule in ("DeadRelu", "ImproperOutput"):
        r = _verdict(run, rule)
        assert r.status == NOT_EVALUATED, (rule, r.status, r.detail)
    assert _verdict(run, "ExplodingTensor", {"collection_names": "losses"}).status == ISSUES


# --- scores per class with argmax=False ------------------------------------------------------------------
def test_scores_per_class_are_paired_with_the_labels_even_without_argmax(tmp_path):
    run = train_torch(tmp_path / "run", mlp(), classification_data(), steps=12, batch_size=32,
                      include_collections=("labels", "predictions", "losses"))
    plain, asked = _verdict(run, "ClassImbalance"), _verdict(run, "ClassImbalance", {"argmax": "true"})
    # (the same verdict and first finding; each finding's time is when it was made)
    assert (plain.status, [(f.step, f.reason) for f in plain.findings[:1]]) == (
        asked.status, [(f.step, f.reason) for f in asked.findings[:1]])
