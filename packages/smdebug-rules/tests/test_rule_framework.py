"""The rule framework: Rule, RequiredTensors and invoke_rule on real runs written by a hook."""

import numpy as np
import pytest

from smdebug import SaveConfig
from smdebug.exceptions import RuleEvaluationConditionMet, TensorUnavailable
from smdebug.rules import Rule as ExportedRule
from smdebug.rules.rule import Rule
from smdebug.rules.rule_invoker import invoke_rule
from smdebug.trials import create_trial

from _hooks import NumpyHook




def write_run(path, values, save_steps=None):
    """A real run: tensor ``w`` holds ``values[step]`` at each saved step."""
    cfg = SaveConfig(save_steps=save_steps, save_interval=10_000) if save_steps else SaveConfig(save_interval=1)
    hook = NumpyHook(out_dir=str(path), save_config=cfg, include_collections=["weights", "losses"])
    for v in values:
        hook.begin_step()
        hook.record("w", np.full(3, v, np.float32))
        hook.record("loss", np.array([abs(v)], np.float32))
        hook.end_step()
    hook.close()
    return create_trial(str(path))


class MaxAbove(Rule):
    def __init__(self, base_trial, threshold="1.0", other_trials=None):
        super().__init__(base_trial, other_trials=other_trials)
        self.threshold = float(threshold)  # parameters arrive as strings from rule runners

    def set_required_tensors(self, step):
        self.req_tensors.add("w", [step])

    def invoke_at_step(self, step):
        return float(self.base_trial.tensor("w").value(step).max()) > self.threshold


def test_exported_names():
    assert ExportedRule is Rule


def test_invoke_rule_fires_exactly_at_the_right_steps_and_ends_cleanly(tmp_path):
    trial = write_run(tmp_path, [0.5, 2.0, 0.1, 3.0, 0.2])
    rule = MaxAbove(trial, threshold="1.0")
    assert invoke_rule(rule) == [1, 3]  # no NoMoreData escaping at the end of the run
    assert invoke_rule(rule, start_step=2, end_step=3) == []
    assert rule.report["RuleTriggered"] == 2
    with pytest.raises(RuleEvaluationConditionMet) as info:
        invoke_rule(MaxAbove(trial, threshold="2.5"), raise_eval_cond=True)
    assert info.value.step == 3 and info.value.rule_name == "MaxAbove"


def test_unsaved_steps_are_skipped(tmp_path):
    trial = write_run(tmp_path, [5.0, 0.0, 5.0, 0.0, 5.0, 0.0], save_steps=[0, 2, 5])
    assert trial.steps() == [0, 2, 5]
    assert invoke_rule(MaxAbove(trial)) == [0, 2]


def test_required_tensors_regex_and_missing(tmp_path):
    trial = write_run(tmp_path, [1.0, 2.0])
    rule = MaxAbove(trial)
    rule.req_tensors.add("^(w|loss)$", [0, 1], should_match_regex=True)
    assert rule.req_tensors.get_names() == ["loss", "w"]
    assert rule.req_tensors.get_tensor_steps("w") == [0, 1]
    rule.req_tensors.fetch()
    assert [t.name for t in rule.req_tensors.get()] == ["loss", "w"]
    with pytest.raises(TensorUnavailable):
        rule.req_tensors.add("nope", [0])


def test_rule_over_two_trials(tmp_path):
    class Differs(Rule):
        def invoke_at_step(self, step):
            other = self.other_trials[0]
            return not np.array_equal(self.base_trial.tensor("w").value(step), other.tensor("w").value(step))

    a = write_run(tmp_path / "a", [1.0, 2.0, 3.0])
    b = write_run(tmp_path / "b", [1.0, 2.5, 3.0])
    assert invoke_rule(Differs(a, other_trials=[b])) == [1]
