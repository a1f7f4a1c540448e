"""Rule configurations for training jobs (the smdebug_rulesconfig functions)."""

import json

import pytest

from smdebug import modes
from smdebug.rules import list_rules, rule_configs
from smdebug.rules.registry import find_rule

from _hooks import NumpyHook


def test_every_builtin_rule_has_a_config_naming_a_registered_rule():
    builtin = [i.name for i in list_rules() if i.pack == "builtin"]
    for name in builtin:
        fn = {"StalledTrainingRule": "stalled_training_rule", "NLPSequenceRatio": "nlp_sequence_ratio"}.get(name)
        if fn is None:
            fn = "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")
        config = getattr(rule_configs, fn)()
        assert config["DebugRuleConfiguration"]["RuleParameters"]["rule_to_invoke"] == name
        assert find_rule(config["DebugRuleConfiguration"]["RuleConfigurationName"]).name == name


def test_collections_requested_by_rules():
    assert rule_configs.vanishing_gradient()["CollectionConfigurations"] == [
        {"CollectionName": "gradients", "CollectionParameters": {"save_interval": "500"}}]
    assert rule_configs.dead_relu()["CollectionConfigurations"][0]["CollectionParameters"]["include_regex"] \
        == ".*relu_output"
    assert rule_configs.exploding_tensor()["CollectionConfigurations"] == []
    report = {c["CollectionName"]: c["CollectionParameters"]
              for c in rule_configs.create_xgboost_report()["CollectionConfigurations"]}
    assert report["hyperparameters"] == {"save_steps": "0"} and report["metrics"] == {"save_interval": "5"}


def test_rule_groups():
    names = [c["DebugRuleConfiguration"]["RuleConfigurationName"]
             for c in rule_configs.get_rule_groups(rule_configs.PYTORCH.SIMPLE)]
    assert names == ["VanishingGradient", "LossNotDecreasing", "WeightUpdateRatio"]
    with pytest.raises(ValueError, match="unknown rule group"):
        rule_configs.get_rule_groups("pytorch")


@pytest.mark.parametrize("group", [*rule_configs.MXNET, *rule_configs.TENSORFLOW, *rule_configs.PYTORCH,
                                   *rule_configs.XGBOOST])
def test_every_rule_of_every_group_is_registered(group):
    for config in rule_configs.get_rule_groups(group):
        find_rule(config["DebugRuleConfiguration"]["RuleParameters"]["rule_to_invoke"])


def test_the_xgboost_group_runs_on_an_xgboost_run(tmp_path):
    pytest.importorskip("xgboost")
    from _xgboost_runs import train_xgboost, xgboost_data
    from smdebug.rules import run_rules

    x, y = xgboost_data(n=200)
    path = train_xgboost(tmp_path / "run", {"objective": "binary:logistic", "max_depth": 2}, x, y, rounds=3)
    names = [c["DebugRuleConfiguration"]["RuleParameters"]["rule_to_invoke"]
             for c in rule_configs.get_rule_groups(rule_configs.XGBOOST.SIMPLE)]
    assert names == ["TreeDepth", "ClassImbalance"]
    result = run_rules(str(path), names)
    assert [r.error for r in result.rules] == [None, None]
    assert result.rules[0].status == "NoIssuesFound" and result.rules[0].steps_evaluated == 3


def test_merged_collections_make_a_valid_hook_config(tmp_path):
    merged = rule_configs.hook_collection_configs(rule_configs.vanishing_gradient(), rule_configs.dead_relu(),
                                                  rule_configs.create_xgboost_report(),
                                                  rule_configs.feature_importance_overweight())
    by_name = {c["CollectionName"]: c["CollectionParameters"] for c in merged}
    assert by_name["feature_importance"]["save_interval"] == "5"  # the smallest interval asked for wins
    local = rule_configs.hook_collection_configs(rule_configs.vanishing_gradient(), save_interval=1)
    assert local[0]["CollectionParameters"] == {"save_interval": "1"}
    path = tmp_path / "hook.json"
    path.write_text(json.dumps({"LocalPath": str(tmp_path / "run"), "CollectionConfigurations": merged}))
    hook = NumpyHook.create_from_json_file(str(path))
    assert {"gradients", "relu_output", "metrics", "hyperparameters"} <= set(hook.include_collections)
    assert hook.get_collection("relu_output").include_regex == [".*relu_output"]
    assert hook.get_collection("hyperparameters").save_config.get_save_config(modes.TRAIN).save_steps == [0]
    hook.close()
