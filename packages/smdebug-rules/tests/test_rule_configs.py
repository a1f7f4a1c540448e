"""Rule configurations for training jobs (the smdebug_rulesconfig functions)."""

import json

import pytest

from smdebug import modes
from smdebug.core.save_config import SaveConfig
from smdebug.rules import list_rules, rule_configs
from smdebug.rules.registry import find_rule

from _hooks import NumpyHook


def test_every_builtin_rule_has_a_config_naming_a_registered_rule():
    builtin = [i.name for i in list_rules() if i.pack == "builtin"]
    for name in builtin:
        config = config_function(name)()
        assert config["DebugRuleConfiguration"]["RuleParameters"]["rule_to_invoke"] == name
        assert find_rule(config["DebugRuleConfiguration"]["RuleConfigurationName"]).name == name


TAPERED = {"save_interval": "500", "save_steps": "0,1,2,3,4,5,6,7,8,9,10,20,40,80,160,320"}


def config_function(rule: str):
    """``rule_configs.dead_relu`` for ``DeadRelu``."""
    fn = {"StalledTrainingRule": "stalled_training_rule", "NLPSequenceRatio": "nlp_sequence_ratio"}.get(rule)
    return getattr(rule_configs, fn or "".join("_" + c.lower() if c.isupper() else c for c in rule).lstrip("_"))


def test_collections_requested_by_rules():
    assert rule_configs.vanishing_gradient()["CollectionConfigurations"] == [
        {"CollectionName": "gradients", "CollectionParameters": TAPERED}]
    dead_relu = rule_configs.dead_relu()
    assert dead_relu["CollectionConfigurations"] == [{"CollectionName": "relu_activations",
                                                      "CollectionParameters": TAPERED}]
    assert dead_relu["DebugRuleConfiguration"]["RuleParameters"] == {"rule_to_invoke": "DeadRelu",
                                                                     "collection_names": "relu_activations"}
    saturated = rule_configs.saturated_activation()
    assert [c["CollectionName"] for c in saturated["CollectionConfigurations"]] == ["tanh_activations",
                                                                                   "sigmoid_activations"]
    for fn in (rule_configs.confusion, rule_configs.class_imbalance):
        assert [c["CollectionName"] for c in fn()["CollectionConfigurations"]] == ["labels", "predictions"]
    assert [c["CollectionName"] for c in rule_configs.check_input_images()["CollectionConfigurations"]] == ["inputs"]
    assert rule_configs.exploding_tensor()["CollectionConfigurations"] == []  # it inspects whatever was saved
    report = {c["CollectionName"]: c["CollectionParameters"]
              for c in rule_configs.create_xgboost_report()["CollectionConfigurations"]}
    assert report["hyperparameters"] == {"save_steps": "0"} and report["metrics"] == {"save_interval": "5"}


def test_the_schedule_is_the_cores_tapered_one():
    scm = SaveConfig.tapered().get_save_config(modes.TRAIN)
    assert TAPERED == {"save_interval": str(scm.save_interval), "save_steps": ",".join(map(str, scm.save_steps))}


@pytest.mark.parametrize("framework", [None, *rule_configs.FRAMEWORKS])
def test_no_configuration_names_a_frameworks_tensors(framework):
    """Data is found by collection on every framework: no regex of one framework's tensor names (the
    original gave CheckInputImages the MXNet name hybridsequential0_input_0 for every framework)."""
    for fn in [config_function(i.name) for i in list_rules() if i.pack == "builtin"] + [rule_configs.create_xgboost_report]:
        config = fn(framework=framework)
        text = json.dumps(config)
        assert "include_regex" not in text and "regex" not in config["DebugRuleConfiguration"]["RuleParameters"]
        assert "hybridsequential" not in text and "relu_output" not in text and "embedding0" not in text


def test_parameters_that_depend_on_the_framework():
    def params(fn, framework):
        return fn(framework=framework)["DebugRuleConfiguration"]["RuleParameters"]

    assert params(rule_configs.check_input_images, "tensorflow")["channel"] == "-1"  # Keras images: NHWC
    for framework in ("pytorch", "mxnet", None):
        assert "channel" not in params(rule_configs.check_input_images, framework)  # the rule's default, NCHW
    for framework in ("pytorch", "mxnet", "tensorflow"):  # class scores
        assert params(rule_configs.class_imbalance, framework)["argmax"] == "True"
    assert "argmax" not in params(rule_configs.class_imbalance, "xgboost")  # class ids or one probability
    with pytest.raises(ValueError, match="unknown framework 'jax'"):
        rule_configs.dead_relu(framework="jax")


def test_rule_groups():
    names = [c["DebugRuleConfiguration"]["RuleConfigurationName"]
             for c in rule_configs.get_rule_groups(rule_configs.PYTORCH.SIMPLE)]
    assert names == ["VanishingGradient", "LossNotDecreasing", "WeightUpdateRatio"]
    for group, framework in ((rule_configs.PYTORCH.RECOMMENDED, "pytorch"),
                             (rule_configs.TENSORFLOW.RECOMMENDED, "tensorflow"),
                             (rule_configs.MXNET.RECOMMENDED, "mxnet"), (rule_configs.XGBOOST.RECOMMENDED, "xgboost")):
        configs = rule_configs.get_rule_groups(group)
        assert [c["DebugRuleConfiguration"]["RuleConfigurationName"] for c in configs] == \
            list(rule_configs.RECOMMENDED[framework])
        assert [(c["DebugRuleConfiguration"]["RuleConfigurationName"],
                 {k: v for k, v in c["DebugRuleConfiguration"]["RuleParameters"].items() if k != "rule_to_invoke"})
                for c in configs] == rule_configs.recommended_rules(framework)
        collections = {c["CollectionName"] for config in configs for c in config["CollectionConfigurations"]}
        assert collections | {"losses"} == set(rule_configs.recommended_collections(framework))
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
    assert by_name["feature_importance"]["save_steps"] == TAPERED["save_steps"]
    local = rule_configs.hook_collection_configs(rule_configs.vanishing_gradient(), save_interval=1)
    assert local[0]["CollectionParameters"] == {**TAPERED, "save_interval": "1"}
    steps = rule_configs.hook_collection_configs(
        {"CollectionConfigurations": [{"CollectionName": "c", "CollectionParameters": {"save_steps": "1,5"}}]},
        {"CollectionConfigurations": [{"CollectionName": "c", "CollectionParameters": {"save_steps": "3,5"}}]})
    assert steps[0]["CollectionParameters"] == {"save_steps": "1,3,5"}
    path = tmp_path / "hook.json"
    path.write_text(json.dumps({"LocalPath": str(tmp_path / "run"), "CollectionConfigurations": merged}))
    hook = NumpyHook.create_from_json_file(str(path))
    assert {"gradients", "relu_activations", "metrics", "hyperparameters"} <= set(hook.include_collections)
    assert hook.get_collection("relu_activations").save_config.get_save_config(modes.TRAIN).save_steps == \
        SaveConfig.tapered().get_save_config(modes.TRAIN).save_steps
    assert hook.get_collection("hyperparameters").save_config.get_save_config(modes.TRAIN).save_steps == [0]
    hook.close()
