"""Rule configurations for a training job, as ``smdebug_rulesconfig`` builds them for SageMaker.

``rule_configs.vanishing_gradient()`` returns the rule's name (what ``rule_to_invoke`` names) and the
collections the training job must save for the rule to have data, with their save settings::

    {"DebugRuleConfiguration": {"RuleConfigurationName": "VanishingGradient",
                                "RuleParameters": {"rule_to_invoke": "VanishingGradient"}},
     "CollectionConfigurations": [{"CollectionName": "gradients",
                                   "CollectionParameters": {"save_interval": "500"}}]}

Locally, :func:`hook_collection_configs` merges the collections of several rules into the
``collection_configs`` of a hook JSON configuration. Parameter defaults live in the rules themselves.
"""

from __future__ import annotations

from enum import Enum
from typing import Dict, List, Optional

_EVERY_500 = {"save_interval": "500"}

# rule -> collections its data comes from: (collection name, parameters)
_COLLECTIONS: Dict[str, List[tuple]] = {
    "VanishingGradient": [("gradients", _EVERY_500)],
    "LossNotDecreasing": [("losses", _EVERY_500)],
    "WeightUpdateRatio": [("weights", _EVERY_500)],
    "CheckInputImages": [("input_image", {"include_regex": ".*hybridsequential0_input_0", **_EVERY_500})],
    "DeadRelu": [("relu_output", {"include_regex": ".*relu_output", **_EVERY_500})],
    "PoorWeightInitialization": [("relu_input", {"include_regex": ".*relu_input", **_EVERY_500})],
    "NLPSequenceRatio": [("input_sequence", {"include_regex": ".*embedding0_input_0", **_EVERY_500})],
    "FeatureImportanceOverweight": [("feature_importance", _EVERY_500)],
    "CreateXgboostReport": [
        ("metrics", {"save_interval": "5"}),
        ("feature_importance", {"save_interval": "5"}),
        ("predictions", {"save_interval": "5"}),
        ("labels", {"save_interval": "5"}),
        ("hyperparameters", {"save_steps": "0"}),
    ],
}


def _config(rule: str) -> dict:
    return {
        "DebugRuleConfiguration": {"RuleConfigurationName": rule, "RuleParameters": {"rule_to_invoke": rule}},
        "CollectionConfigurations": [
            {"CollectionName": name, "CollectionParameters": dict(params)} for name, params in _COLLECTIONS.get(rule, [])
        ],
    }


def vanishing_gradient():
    return _config("VanishingGradient")


def similar_across_runs():
    return _config("SimilarAcrossRuns")


def weight_update_ratio():
    return _config("WeightUpdateRatio")


def all_zero():
    return _config("AllZero")


def exploding_tensor():
    return _config("ExplodingTensor")


def unchanged_tensor():
    return _config("UnchangedTensor")


def loss_not_decreasing():
    return _config("LossNotDecreasing")


def check_input_images():
    return _config("CheckInputImages")


def dead_relu():
    return _config("DeadRelu")


def confusion():
    return _config("Confusion")


def tree_depth():
    return _config("TreeDepth")


def class_imbalance():
    return _config("ClassImbalance")


def overfit():
    return _config("Overfit")


def tensor_variance():
    return _config("TensorVariance")


def overtraining():
    return _config("Overtraining")


def poor_weight_initialization():
    return _config("PoorWeightInitialization")


def saturated_activation():
    return _config("SaturatedActivation")


def nlp_sequence_ratio():
    return _config("NLPSequenceRatio")


def stalled_training_rule():
    return _config("StalledTrainingRule")


def feature_importance_overweight():
    return _config("FeatureImportanceOverweight")


def create_xgboost_report():
    """The configuration of SageMaker's XGBoost report job (a report, not a rule: no pack registers
    ``CreateXgboostReport``, so it is in no rule group; its collections are what the report reads)."""
    return _config("CreateXgboostReport")


class MXNET(Enum):
    SIMPLE = "mxnet-simple"


class TENSORFLOW(Enum):
    SIMPLE = "tensorflow-simple"


class PYTORCH(Enum):
    SIMPLE = "pytorch-simple"


class XGBOOST(Enum):
    SIMPLE = "xgboost-simple"


_DEEP_LEARNING_SIMPLE = [vanishing_gradient, loss_not_decreasing, weight_update_ratio]
_GROUPS = {
    MXNET.SIMPLE: _DEEP_LEARNING_SIMPLE,
    TENSORFLOW.SIMPLE: _DEEP_LEARNING_SIMPLE,
    PYTORCH.SIMPLE: _DEEP_LEARNING_SIMPLE,
    # smdebug-rulesconfig's JSON also listed CreateXgboostReport here; it is a report job, not a rule that
    # any pack registers (the group failed on every run), so the group holds the two rules of its docs
    XGBOOST.SIMPLE: [tree_depth, class_imbalance],
}


def get_rule_groups(group) -> List[dict]:
    """The rule configurations of a group, e.g. ``get_rule_groups(PYTORCH.SIMPLE)``."""
    try:
        return [make() for make in _GROUPS[group]]
    except KeyError:
        raise ValueError(f"unknown rule group {group!r}; use one of {', '.join(str(g) for g in _GROUPS)}") from None


def hook_collection_configs(*configs: dict, save_interval: Optional[int] = None) -> List[dict]:
    """Merge the collections of rule configurations into hook JSON ``CollectionConfigurations``.

    A collection requested by several rules gets the *smallest* save interval any of them asked for (so
    every rule has its data). ``save_interval`` overrides the intervals (e.g. 1 for short local runs).
    """
    merged: Dict[str, dict] = {}
    for config in configs:
        for coll in config.get("CollectionConfigurations", []):
            params = dict(coll.get("CollectionParameters", {}))
            if save_interval is not None and "save_interval" in params:
                params["save_interval"] = str(save_interval)
            previous = merged.get(coll["CollectionName"])
            if previous is not None and "save_interval" in previous and "save_interval" in params:
                params["save_interval"] = str(min(int(previous["save_interval"]), int(params["save_interval"])))
            merged[coll["CollectionName"]] = {**(previous or {}), **params}
    return [{"CollectionName": name, "CollectionParameters": params} for name, params in merged.items()]
