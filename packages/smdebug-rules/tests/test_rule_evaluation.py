"""The framework's honesty guarantees, for any rule (built-in, a third-party pack's, a user's subclass):
a rule that read nothing is not evaluated, unreadable data is an error whatever the rule caught, and
``invoke_rule`` -- the original's API -- can tell "never met" from "nothing evaluated"."""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from smdebug import SaveConfig, modes
from smdebug.exceptions import EventFileCorrupted, MissingEventFile, TensorUnavailableForStep
from smdebug.rules import RuleNotEvaluated, invoke_rule, run_rules
from smdebug.rules.generic import DeadRelu, UnchangedTensor
from smdebug.rules.results import ERROR, ISSUES, NO_ISSUES, NOT_EVALUATED
from smdebug.rules.rule import Rule
from smdebug.trials import create_trial

from _hooks import NumpyHook, write_run


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("evaluation-runs")
    healthy = write_run(root / "healthy", [1e-3] * 4)
    missing = shutil.copytree(healthy, root / "missing")
    shutil.rmtree(missing / "events")
    return {"healthy": healthy, "missing": str(missing)}


class CarelessRule(Rule):
    """Written the way the original's docs suggested: skip whatever cannot be read."""

    def invoke_at_step(self, step):
        for name in self.base_trial.tensor_names():
            try:
                value = self.base_trial.tensor(name).value(step)
            except TensorUnavailableForStep:  # also catches MissingEventFile, its subclass
                continue
            except Exception:  # noqa: BLE001 - and everything else
                continue
            if np.isnan(value).any():
                return f"{name} has NaN"
        return False


def test_a_rule_cannot_swallow_unreadable_data(runs):
    result = run_rules(runs["missing"], [CarelessRule])
    r = result.rules[0]
    assert r.status == ERROR and r.error.startswith("MissingEventFile: Event file ") and r.error_step == 0
    assert r.error_file == os.path.join(runs["missing"], "events", "000000000000", "000000000000_worker_0.tfevents")
    with pytest.raises(MissingEventFile):
        invoke_rule(CarelessRule(create_trial(runs["missing"])))
    healthy = run_rules(runs["healthy"], [CarelessRule]).rules[0]
    assert healthy.status == NO_ISSUES and (healthy.steps_evaluated, healthy.tensors_evaluated) == (4, 2)


def test_a_damaged_run_opened_with_skip_damaged_is_read_as_asked(runs):
    trial = create_trial(runs["missing"], skip_damaged=True)
    assert run_rules(trial, [CarelessRule]).rules[0].status == NOT_EVALUATED


def test_a_third_party_rule_gets_honest_verdicts_too(runs, tmp_path):
    bare = NumpyHook(out_dir=str(tmp_path / "bare"), save_config=SaveConfig(save_interval=1),
                     include_collections=["weights"])
    for step in range(3):
        bare.begin_step()
        bare.record("w", np.ones(2, np.float32))
        bare.end_step()
    bare.close()
    r = run_rules(str(tmp_path / "bare"), ["loss_above_threshold"]).rules[0]  # the example pack's rule
    assert r.pack == "example" and r.status == NOT_EVALUATED
    assert r.detail == ("read no tensor value; the run has 3 steps 0-2 (GLOBAL 3); collections weights; "
                        "1 tensor: w")
    r = run_rules(runs["missing"], ["loss_above_threshold"]).rules[0]
    assert r.status == ERROR and "MissingEventFile" in r.error and r.error_step == 0


def test_invoke_rule_tells_nothing_evaluated_from_never_met(runs, tmp_path):
    from smdebug.core.testing import capture_smdebug_log

    trial = create_trial(runs["healthy"])
    rule = DeadRelu(trial)
    with capture_smdebug_log() as log:
        assert invoke_rule(rule) == []
    assert rule.evaluation.steps == 0 and "DeadRelu evaluated nothing from step 0: looked for collection " \
        "'relu_activations' -> none; tensors matching '.*relu_output' -> none; the run has 4 steps 0-3" in log.text
    with pytest.raises(RuleNotEvaluated, match=r"DeadRelu evaluated nothing: looked for collection 'relu_activations'"):
        invoke_rule(DeadRelu(trial), require_evaluation=True)
    vanishing = run_rules(trial, ["vanishing_gradient"]).rules[0]
    assert vanishing.status == NO_ISSUES and vanishing.steps_evaluated == 4
    from smdebug.rules.generic import VanishingGradient

    rule = VanishingGradient(trial)
    assert invoke_rule(rule, require_evaluation=True) == [] and rule.evaluation.steps == 4
    assert rule.evaluation.tensors == {"gradient/w"} and rule.evaluation.last_step == 3


def test_a_rule_says_when_what_it_read_was_not_enough(runs):
    class NeedsFive(Rule):
        """Reads every step, but judges only from the fifth save on."""

        def invoke_at_step(self, step):
            self.base_trial.tensor("loss").value(step)
            if step < 4:
                self.not_evaluated(f"{step + 1} losses seen; judges after 5")
            return False

    class Clock(Rule):
        """Judges something other than tensor values."""

        def invoke_at_step(self, step):
            self.mark_evaluated()
            return False

    result = run_rules(runs["healthy"], [NeedsFive, Clock])
    needs_five, clock = result.rules
    assert needs_five.status == NOT_EVALUATED and needs_five.detail.startswith("4 losses seen; judges after 5; ")
    assert clock.status == NO_ISSUES and (clock.steps_evaluated, clock.tensors_evaluated) == (4, 0)
    assert result.exit_code == 3


def test_required_tensors_count_and_say_what_they_looked_for(runs):
    class Declares(Rule):
        def set_required_tensors(self, step):
            self.req_tensors.add("^lo.*", [step], should_match_regex=True)

        def invoke_at_step(self, step):
            return False

    trial = create_trial(runs["healthy"])
    rule = Declares(trial)
    invoke_rule(rule)
    assert rule.evaluation.steps == 4 and rule.evaluation.tensors == {"loss"}
    assert rule.evaluation.looked_for() == "tensors matching '^lo.*' -> 1 tensor: loss"


# --- UnchangedTensor over saves of different shapes ------------------------------------------------------
def _modes_run(path, saves):
    """``saves``: (mode, value of ``w``) per step."""
    hook = NumpyHook(out_dir=str(path), save_config=SaveConfig(save_interval=1), include_collections=["weights"])
    for mode, value in saves:
        hook.set_mode(mode)
        hook.begin_step()
        hook.record("w", np.asarray(value, np.float32))
        hook.end_step()
    hook.close()
    return create_trial(str(path))


def test_unchanged_tensor_compares_saves_of_one_mode(tmp_path):
    T, E = modes.TRAIN, modes.EVAL
    batch = np.ones((4, 2))
    # TRAIN batches of 4 that do not change, EVAL batches of 2 in between: no ValueError, and the TRAIN
    # saves are compared with each other
    trial = _modes_run(tmp_path / "a", [(T, batch), (E, np.zeros((2, 2))), (T, batch), (E, np.ones((2, 2))),
                                        (T, batch)])
    rule = UnchangedTensor(trial, collection_names="weights")
    assert invoke_rule(rule) == [4]
    assert rule.last_reason == "w unchanged over TRAIN steps 0, 1, 2"
    # a change of shape (a smaller last batch) is a change
    trial = _modes_run(tmp_path / "b", [(T, batch), (T, batch), (T, np.ones((3, 2)))])
    assert invoke_rule(UnchangedTensor(trial, collection_names="weights")) == []


def test_unchanged_tensor_on_a_real_training_with_a_smaller_evaluation_batch(tmp_path):
    pytest.importorskip("torch")
    from _torch_runs import classification_data, mlp, train_torch

    x, y = classification_data(n=32)
    path = train_torch(tmp_path / "run", mlp(), (x, y), steps=4, lr=0.0, eval_data=(x[:8], y[:8]),
                       include_collections=["losses"], include_regex=[".*relu_output"])
    result = run_rules(path, [("unchanged_tensor", {"tensor_regex": ".*relu_output"})])
    r = result.rules[0]
    assert r.status == ISSUES, (r.error, r.detail)  # lr 0: the same batch gives the same activations
    assert r.findings[0].reason == "layer0_relu_output_0 unchanged over TRAIN steps 0, 1, 2"
    assert {f.mode for f in r.findings} == {"TRAIN", "EVAL"}


# --- the original's command line ---------------------------------------------------------------------------
def test_the_original_rule_invoker_command_line(runs):
    def invoker(*args):
        return subprocess.run([sys.executable, "-m", "smdebug.rules.rule_invoker", *args], capture_output=True,
                              text=True, timeout=120)

    proc = invoker("--trial-dir", runs["healthy"], "--rule-name", "vanishinggradient", "--threshold", "0.01",
                   "--end-step", "3")
    assert proc.returncode == 0 and "VanishingGradient: condition met at steps [0, 1, 2]" in proc.stdout
    assert "RuntimeWarning" not in proc.stderr
    proc = invoker("--trial-dir", runs["healthy"], "--rule-name", "VanishingGradient", "--threshold", "0.01",
                   "--raise-rule-eval-cond-exception", "True")
    assert proc.returncode == 1 and "condition being met" in proc.stderr
    proc = invoker("--trial-dir", runs["missing"], "--rule-name", "VanishingGradient")
    assert proc.returncode == 2 and "is missing" in proc.stderr
    proc = invoker("--trial-dir", runs["healthy"], "--rule-name", "DeadRelu")
    assert proc.returncode == 0 and "0 steps evaluated" in proc.stdout


def test_damage_met_inside_a_rule_is_raised_with_the_file_and_step(tmp_path):
    path = write_run(tmp_path / "run", [1e-3] * 3)
    event = os.path.join(path, "events", "000000000001", "000000000001_worker_0.tfevents")
    with open(event, "r+b") as f:
        data = bytearray(f.read())
        data[-6:] = b"\0" * 6
        f.seek(0)
        f.write(data)
    with pytest.raises(EventFileCorrupted) as info:
        invoke_rule(CarelessRule(create_trial(path)))
    assert info.value.step == 1 and info.value.path == event


def test_a_damaged_index_file_is_an_error_naming_it(tmp_path):
    path = write_run(tmp_path / "run", [1e-3] * 4)
    index = os.path.join(path, "index", "000000000", "000000000002_worker_0.json")
    with open(index, "r+") as f:  # cut in the middle of its payload (its meta still reads)
        text = f.read()
        payload = text.index('"tensor_payload"')
        f.seek(0)
        f.write(text[: payload + (len(text) - payload) // 2])
        f.truncate()
    result = run_rules(path, ["vanishing_gradient", "dead_relu", CarelessRule])
    for r in result.rules:
        assert r.status == ERROR and r.error.startswith("IndexReaderException: ") and r.error_step == 2, r
        assert r.error_file == index and index in r.error
    assert result.exit_code == 2


def test_invoke_rule_says_not_applicable_as_run_rules_does(tmp_path):
    """A rule that the run gives nothing to judge by its nature (CheckInputImages on a model whose input is no
    image) is a verdict: invoke_rule neither warns "evaluated nothing" nor raises with require_evaluation."""
    from smdebug.core.testing import capture_smdebug_log
    from smdebug.rules.generic import CheckInputImages

    hook = NumpyHook(out_dir=str(tmp_path / "run"), save_config=SaveConfig(save_interval=1),
                     include_collections=["inputs"])
    hook.get_collection("inputs").include("^x$")
    for step in range(3):
        hook.begin_step()
        hook.record("x", np.ones((8, 5), np.float32))  # tabular rows: no image
        hook.end_step()
    hook.close()
    trial = create_trial(str(tmp_path / "run"))
    assert run_rules(trial, ["check_input_images"]).rules[0].status == "NotApplicable"
    with capture_smdebug_log() as log:
        assert invoke_rule(CheckInputImages(trial), require_evaluation=True) == []
    assert "evaluated nothing" not in log.text and "does not apply to this run: the model's input is no image" \
        in log.text, log.text
