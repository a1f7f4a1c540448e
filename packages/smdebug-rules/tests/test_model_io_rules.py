"""UnnormalizedInput and ImproperOutput: thresholds pinned on hand-made runs written with the real hook, and
each rule on real PyTorch training, broken and healthy."""

import numpy as np
import pytest

from smdebug.exceptions import SMDebugValueError
from smdebug.rules.generic import ImproperOutput, UnnormalizedInput
from smdebug.rules.rule_invoker import invoke_rule
from smdebug.trials import create_trial

from _hooks import NumpyHook
from test_data_rules import run


# --- UnnormalizedInput -------------------------------------------------------------------------------------
def test_unnormalized_input_feature_scale_is_pinned(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 3))
    x[:, 2] = 50.0  # a constant feature: |mean| 50, std 0
    trial = run(tmp_path, [{"model_input_0": x}], collections={"inputs": "model_input"})
    assert invoke_rule(UnnormalizedInput(trial)) == []  # 50 is not above 50
    rule = UnnormalizedInput(trial, threshold="49.99")
    assert invoke_rule(rule) == [0]
    assert rule.last_reason.startswith("model_input_0: feature 2 has scale 50 (mean 50, std 0) > threshold 49.99")
    # sequences (batch, time, features) are judged per feature too; images (4-D) are CheckInputImages' job
    seq = np.ones((8, 4, 2)) * [0.5, 500.5]  # measurements, not ids
    images = np.full((64, 1, 4, 4), 255.0)
    trial = run(tmp_path / "shapes", [{"seq_input_0": seq, "img_input_0": images}],
                collections={"inputs": "_input_0"})
    assert invoke_rule(UnnormalizedInput(trial)) == [0]
    assert invoke_rule(UnnormalizedInput(trial, tensor_regex="img", collection_names="")) == []


def test_unnormalized_input_skips_ids_and_small_batches(tmp_path):
    ids = np.random.default_rng(1).integers(0, 5000, size=(64, 12)).astype(np.float32)  # token ids
    trial = run(tmp_path, [{"tokens_input_0": ids, "small_input_0": np.full((8, 2), 900.5)}],
                collections={"inputs": "_input_0"})
    rule = UnnormalizedInput(trial)
    assert invoke_rule(rule) == [] and rule.evaluation.steps == 0  # nothing it could judge: it says so
    assert invoke_rule(UnnormalizedInput(trial, min_samples="8")) == [0]


def test_unnormalized_input_parameters(tmp_path):
    trial = run(tmp_path, [{"x": np.zeros(1)}])
    rule = UnnormalizedInput(trial, threshold="10", min_samples="4", collection_names="a,b", tensor_regex="c")
    assert (rule.threshold, rule.min_samples, rule.collection_names, rule.tensor_regex) == (10.0, 4, ["a", "b"], ["c"])
    for kwargs, message in [({"threshold": "0"}, "threshold must be a positive number"),
                            ({"min_samples": "1"}, "min_samples must be >= 2"),
                            ({"collection_names": "", "tensor_regex": ""}, "give collection_names or tensor_regex")]:
        with pytest.raises(SMDebugValueError, match=message):
            UnnormalizedInput(trial, **kwargs)


# --- ImproperOutput ----------------------------------------------------------------------------------------
def test_improper_output_probabilities_into_a_logits_loss(tmp_path):
    rng = np.random.default_rng(2)
    logits = rng.normal(size=(32, 4))
    probabilities = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    steps = [{"CrossEntropyLoss_input_0": probabilities, "CrossEntropyLoss_input_1": rng.integers(0, 4, 32)}] * 2
    trial = run(tmp_path, steps)
    # 128 values per save: judged from the second save on (min_values 256)
    assert invoke_rule(ImproperOutput(trial)) == [1]
    assert invoke_rule(ImproperOutput(trial, min_values="128")) == [0, 1]
    rule = ImproperOutput(trial)
    invoke_rule(rule)
    assert rule.last_reason.startswith("CrossEntropyLoss applies softmax/sigmoid itself but its input "
                                       "CrossEntropyLoss_input_0 is all in [")
    healthy = run(tmp_path / "logits", [{"CrossEntropyLoss_input_0": logits}] * 2)
    rule = ImproperOutput(healthy)
    assert invoke_rule(rule) == [] and rule.evaluation.steps == 1
    # NLLLoss wants log-probabilities
    nll = run(tmp_path / "nll", [{"NLLLoss_input_0": probabilities}] * 2)
    assert invoke_rule(ImproperOutput(nll)) == [1]
    assert invoke_rule(ImproperOutput(run(tmp_path / "nll-ok", [{"NLLLoss_input_0": np.log(probabilities)}] * 2))) == []


def test_improper_output_regression_on_class_ids(tmp_path):
    rng = np.random.default_rng(3)
    out = rng.normal(size=(300, 1))
    labels = np.arange(300) % 4  # class ids 0-3
    trial = run(tmp_path, [{"MSELoss_input_0": out, "MSELoss_input_1": labels.astype(np.float32)}])
    rule = ImproperOutput(trial)
    assert invoke_rule(rule) == [0] and "class ids 0-3" in rule.last_reason
    assert invoke_rule(ImproperOutput(trial, max_classes="3")) == []  # 4 ids: more than max_classes
    # two ids (a binary target), fractional targets, several outputs per sample: a regression
    for name, y, p in [("binary", np.arange(300) % 2, out), ("real", rng.normal(size=300), out),
                       ("wide", labels, rng.normal(size=(300, 4)))]:
        trial = run(tmp_path / name, [{"MSELoss_input_0": p, "MSELoss_input_1": y.astype(np.float32)}])
        assert invoke_rule(ImproperOutput(trial)) == [], name


def test_improper_output_without_loss_inputs_is_not_evaluated(tmp_path):
    rule = ImproperOutput(run(tmp_path, [{"predictions": np.zeros((300, 2))}]))
    assert invoke_rule(rule) == [] and rule.evaluation.steps == 0
    with pytest.raises(SMDebugValueError, match="min_values must be >= 1"):
        ImproperOutput(create_trial(str(tmp_path)), min_values="0")


# --- ImproperOutput on the loss the hook recorded (smdebug.core.loss_inputs) ----------------------------------
def recorded_run(path, expects, predictions, targets=None, loss_type="SparseCategoricalCrossentropy"):
    """A run whose hook recorded one loss (as the Keras hook names its inputs), saved at two steps."""
    from smdebug.core import loss_inputs

    from test_data_rules import write

    def add_loss(hook):
        loss_inputs.add_loss(hook, loss_inputs.LossInputs("loss", loss_type, expects, "^predictions$", "^labels$"))

    class RecordingHook(NumpyHook):
        def _setup(self):
            super()._setup()
            add_loss(self)

    step = {"predictions": predictions, **({"labels": targets} if targets is not None else {})}
    write(path, [step] * 2, hook_class=RecordingHook)
    return create_trial(str(path))


def test_improper_output_judges_what_the_recorded_loss_expects(tmp_path):
    from smdebug.core import loss_inputs

    rng = np.random.default_rng(4)
    logits = rng.normal(size=(32, 4)) * 3  # 128 values a save: judged from the second (min_values 256)
    probabilities = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    labels = rng.integers(0, 4, 32)
    cases = [  # (what the loss expects, what it gets, fires)
        (loss_inputs.PROBABILITIES, logits, True),  # Keras from_logits=False fed raw scores
        (loss_inputs.PROBABILITIES, probabilities, False),
        (loss_inputs.LOGITS, probabilities, True),  # Keras from_logits=True fed a softmax's output
        (loss_inputs.LOGITS, logits, False),
        (loss_inputs.LOG_PROBABILITIES, np.log(probabilities), False),
    ]
    for i, (expects, given, fires) in enumerate(cases):
        rule = ImproperOutput(recorded_run(tmp_path / str(i), expects, given, labels))
        assert invoke_rule(rule) == ([1] if fires else []), (expects, fires)
        assert rule.evaluation.steps == 1, (expects, fires)
        if fires and expects == loss_inputs.PROBABILITIES:
            assert rule.last_reason.startswith("SparseCategoricalCrossentropy (loss) expects probabilities (in [0, 1]) but "
                                               "its input predictions is in [")
    # a recorded regression loss against class ids, named as the hook recorded it
    rule = ImproperOutput(recorded_run(tmp_path / "mse", loss_inputs.REGRESSION, rng.normal(size=(300, 1)),
                                       (np.arange(300) % 5).astype(np.float32), loss_type="mean_squared_error"))
    assert invoke_rule(rule) == [0, 1] and rule.last_reason.startswith("mean_squared_error (loss) on one output")


def test_improper_output_on_a_recorded_loss_it_cannot_judge_or_whose_inputs_are_missing(tmp_path):
    from smdebug.core import loss_inputs
    from smdebug.rules import run_rules

    other = recorded_run(tmp_path / "other", loss_inputs.OTHER, np.zeros((64, 4)), loss_type="CosineEmbeddingLoss")
    result = run_rules(other.path, ["ImproperOutput"]).rules[0]
    assert result.status == "NotApplicable" and "CosineEmbeddingLoss" in result.detail
    # the loss is known, its inputs were not saved: not evaluated, and the verdict says what to save
    from test_data_rules import write

    class RecordingHook(NumpyHook):
        def _setup(self):
            super()._setup()
            loss_inputs.add_loss(self, loss_inputs.LossInputs("BCEWithLogitsLoss", "BCEWithLogitsLoss",
                                                              loss_inputs.LOGITS, "^BCEWithLogitsLoss_input_0$"))

    write(tmp_path / "unsaved", [{"BCEWithLogitsLoss_output_0": np.float32(0.5)}] * 2, hook_class=RecordingHook)
    result = run_rules(str(tmp_path / "unsaved"), ["ImproperOutput"]).rules[0]
    assert result.status == "NotEvaluated"
    assert "the run did not save the inputs of BCEWithLogitsLoss (include the 'loss_inputs' collection" in result.detail


def test_improper_output_says_a_model_called_without_labels_computed_no_loss(tmp_path):
    """A loss the model computes itself (recorded as ``loss``): when neither it (``loss_output_<i>``) nor its
    inputs were saved though the losses collection was (a trainer's logged ``loss``), the model got no labels
    (a Hugging Face Trainer computing the loss outside it): the verdict says so, not that the save config lacked
    'loss_inputs'. With the loss saved and its inputs not, the save config is what the verdict names."""
    from smdebug.core import loss_inputs
    from smdebug.rules import run_rules
    from test_data_rules import write

    class ModelLossHook(NumpyHook):
        def _setup(self):
            super()._setup()
            loss_inputs.add_loss(self, loss_inputs.LossInputs("loss", "CrossEntropyLoss", loss_inputs.LOGITS,
                                                              "^loss_input_0$", "^loss_input_1$"))

    write(tmp_path / "no_labels", [{}] * 2, hook_class=ModelLossHook)  # (only the logged "loss")
    detail = run_rules(str(tmp_path / "no_labels"), ["ImproperOutput"]).rules[0].detail
    assert "the model was called without labels, so it computed no loss" in detail, detail
    assert "include the 'loss_inputs' collection" not in detail, detail
    write(tmp_path / "not_included", [{"loss_output_0": np.float32(0.5)}] * 2, hook_class=ModelLossHook)
    detail = run_rules(str(tmp_path / "not_included"), ["ImproperOutput"]).rules[0].detail
    assert "the run did not save the inputs of CrossEntropyLoss (loss) (include the 'loss_inputs'" in detail, detail


@pytest.mark.parametrize("framework, remedy", [
    ("tensorflow", "hook.register_loss(loss_fn) before training"),
    ("pytorch", "hook.register_loss(loss_module)"),
    ("mxnet", "hook.register_block(loss_block)"),
])
def test_improper_output_without_a_loss_record_names_the_remedy_in_the_framework_s_words(tmp_path, framework,
                                                                                        remedy):
    """A run of this writer whose hook knew of no loss (a Keras custom train_step computing it with a function,
    a torch loss from torch.nn.functional): the verdict says how that framework's hook is told of the loss, and
    not that the run is an older writer's (this writer records the framework; probe 8, F5)."""
    import glob
    import json

    from smdebug.rules import run_rules

    from test_data_rules import write

    hook_class = type(f"{framework}Hook", (NumpyHook,), {"framework_name": framework})
    write(tmp_path / "run", [{}] * 2, hook_class=hook_class)
    result = run_rules(str(tmp_path / "run"), ["ImproperOutput"]).rules[0]
    assert result.status == "NotEvaluated"
    assert "the run's losses (loss) are values and its hook was told of no loss: a loss computed by hand" \
        in result.detail, result.detail
    assert remedy in result.detail and "older writer" not in result.detail, result.detail
    if framework == "tensorflow":  # (PyTorch's words only where the fallback names are described)
        assert "loss module is registered" not in result.detail
        assert "a loss module's inputs, as PyTorch and MXNet hooks name them" in result.detail, result.detail

    # the same run without the framework record, as the original smdebug writes it: an older writer's run
    [collections_file] = glob.glob(str(tmp_path / "run" / "collections" / "*" / "*.json"))
    with open(collections_file) as f:
        collections = json.load(f)
    del collections["_meta"]["framework"]
    with open(collections_file, "w") as f:
        json.dump(collections, f)
    result = run_rules(str(tmp_path / "run"), ["ImproperOutput"]).rules[0]
    assert result.status == "NotEvaluated"
    assert "its hook recorded no loss: a run of an older writer, which records none" in result.detail, result.detail
    assert "register the loss with the hook" in result.detail  # (the framework is not told by its collections)


# --- real PyTorch training ---------------------------------------------------------------------------------
torch = pytest.importorskip("torch")
pytest.importorskip("smdebug.pytorch")

from _torch_runs import classification_data, mlp, train_torch  # noqa: E402


@pytest.mark.parametrize("softmax, scale, fires", [(True, 1.0, "ImproperOutput"), (False, 1000.0, "UnnormalizedInput"),
                                                   (False, 1.0, None)])
def test_model_io_rules_on_real_training(tmp_path, softmax, scale, fires):
    model = mlp()
    if softmax:
        model = torch.nn.Sequential(model, torch.nn.Softmax(dim=1))
    x, y = classification_data(256, scale=scale)
    out = train_torch(tmp_path, model, (x, y), steps=12, lr=0.05, include_collections=["losses", "inputs"],
                      include_regex=[r"Loss_input_\d+$"], batch_size=64)
    trial = create_trial(out)
    results = {}
    for cls in (ImproperOutput, UnnormalizedInput):
        rule = cls(trial)
        results[cls.__name__] = invoke_rule(rule)
        assert rule.evaluation.steps > 0, cls.__name__
    assert [name for name, steps in results.items() if steps] == ([fires] if fires else [])


@pytest.mark.parametrize("sigmoid, fires", [(True, True), (False, False)])
def test_improper_output_judges_any_loss_under_hook_recommended(tmp_path, sigmoid, fires):
    """BCEWithLogitsLoss is no classification loss of the hook's (its inputs are no class scores), yet
    Hook.recommended saves its inputs (loss_inputs) and records what it expects: a sigmoid before it is found."""
    from smdebug.rules import run_rules
    import smdebug.pytorch as smd

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3),
                                *([torch.nn.Sigmoid()] if sigmoid else []))
    loss_fn = torch.nn.BCEWithLogitsLoss()
    hook = smd.Hook.recommended(str(tmp_path))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    x, y = torch.randn(128, 6), (torch.rand(128, 3) > 0.5).float()
    for _ in range(6):
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    hook.close()
    result = run_rules(str(tmp_path), ["ImproperOutput"]).rules[0]
    assert result.status == ("IssuesFound" if fires else "NoIssuesFound"), result.detail
    if fires:
        assert "BCEWithLogitsLoss applies softmax/sigmoid itself" in result.findings[0].reason
