"""Rule configurations for a training job, as ``smdebug_rulesconfig`` builds them for SageMaker, and the
recommended rules of each framework.

``rule_configs.vanishing_gradient()`` returns the rule's name (what ``rule_to_invoke`` names) and the
collections the training job must save for the rule to have data, with their save settings::

    {"DebugRuleConfiguration": {"RuleConfigurationName": "VanishingGradient",
                                "RuleParameters": {"rule_to_invoke": "VanishingGradient"}},
     "CollectionConfigurations": [{"CollectionName": "gradients",
                                   "CollectionParameters": {"save_interval": "500",
                                                            "save_steps": "0,1,2,3,4,5,6,7,8,9,10,20,40,80,160,320"}}]}

Rules find their data by *collection*, never by a framework's tensor names: the hooks of every framework fill
the same built-in collections (``inputs``: the model's inputs; ``relu_activations``, ``tanh_activations``...: the
inputs and outputs of activation layers found by their type; ``labels``/``predictions``...), so one
configuration fits every framework. The few rule parameters that depend on the framework (the channel axis of
images, whether predictions are class scores) come with ``framework="pytorch"`` etc. The schedule is
:meth:`SaveConfig.tapered <smdebug.core.save_config.SaveConfig.tapered>` (every step at first, then sparser: a
short run has enough saved steps, a long one saves every 500 steps).

**Recommended rules.** :data:`RECOMMENDED` names, per framework, the rules ``smdebug rules run RUN`` evaluates
when no ``--rule`` is given (and ``run_rules(path)`` with no rules); ``Hook.recommended(out_dir)`` saves the
collections they need (:func:`recommended_collections`, told to the core through the
``smdebug_recommended_collections`` plugin hook). ``get_rule_groups(PYTORCH.RECOMMENDED)`` gives their
configurations.

Locally, :func:`hook_collection_configs` merges the collections of several rules into the
``collection_configs`` of a hook JSON configuration. Parameter defaults live in the rules themselves.
"""

from __future__ import annotations

from enum import Enum
from typing import Dict, List, Optional, Tuple

from smdebug.core.save_config import SaveConfig, SaveConfigMode

FRAMEWORKS = ("pytorch", "tensorflow", "mxnet", "xgboost")


def _schedule() -> Dict[str, str]:
    """The tapered schedule as collection parameters of the hook JSON contract (strings)."""
    scm: SaveConfigMode = SaveConfig.tapered().get_save_config("TRAIN")
    return {"save_interval": str(scm.save_interval), "save_steps": ",".join(str(s) for s in scm.save_steps)}


_TAPERED = _schedule()
_ACTIVATIONS_FOR_SATURATION = "tanh_activations,sigmoid_activations"

# rule -> collections its data comes from: (collection name, parameters)
_COLLECTIONS: Dict[str, List[tuple]] = {
    "VanishingGradient": [("gradients", _TAPERED)],
    "LossNotDecreasing": [("losses", _TAPERED)],
    "Overfit": [("losses", _TAPERED)],
    "Overtraining": [("losses", _TAPERED)],
    "WeightUpdateRatio": [("weights", _TAPERED)],
    "CheckInputImages": [("inputs", _TAPERED)],
    "DeadRelu": [("relu_activations", _TAPERED)],
    "SaturatedActivation": [("tanh_activations", _TAPERED), ("sigmoid_activations", _TAPERED)],
    "PoorWeightInitialization": [("relu_activations", _TAPERED), ("gradients", _TAPERED),
                                 ("losses", _TAPERED)],
    "NLPSequenceRatio": [("inputs", _TAPERED)],
    "Confusion": [("labels", _TAPERED), ("predictions", _TAPERED)],
    "ClassImbalance": [("labels", _TAPERED), ("predictions", _TAPERED)],
    "TreeDepth": [("trees", _TAPERED)],
    "FeatureImportanceOverweight": [("feature_importance", _TAPERED)],
    "LabelLeak": [("labels", _TAPERED), ("predictions", _TAPERED), ("trees", _TAPERED)],
    "OscillatingLoss": [("losses", _TAPERED)],
    "SlowConvergence": [("losses", _TAPERED)],
    "Divergence": [("losses", _TAPERED), ("weights", _TAPERED)],
    "UnnormalizedInput": [("inputs", _TAPERED)],
    "ImproperOutput": [("loss_inputs", _TAPERED)],  # (every loss's inputs, classification or not)
    "CreateXgboostReport": [
        ("metrics", {"save_interval": "5"}),
        ("feature_importance", {"save_interval": "5"}),
        ("predictions", {"save_interval": "5"}),
        ("labels", {"save_interval": "5"}),
        ("hyperparameters", {"save_steps": "0"}),
    ],
}

# rule -> parameters that tell it where its data is (the rules' defaults are the original's tensor names)
_PARAMETERS: Dict[str, Dict[str, str]] = {
    "DeadRelu": {"collection_names": "relu_activations"},
    "SaturatedActivation": {"collection_names": _ACTIVATIONS_FOR_SATURATION},
    "PoorWeightInitialization": {"collection_names": "relu_activations"},
    "CheckInputImages": {"collection_names": "inputs"},
    "NLPSequenceRatio": {"collection_names": "inputs"},
    "ClassImbalance": {"labels_collection": "labels", "predictions_collection": "predictions"},
}

# framework -> rule -> parameters that depend on the framework
_FRAMEWORK_PARAMETERS: Dict[str, Dict[str, Dict[str, str]]] = {
    # Keras images are channels-last; PyTorch and Gluon channels-first (the rule's default, channel 1)
    "tensorflow": {"CheckInputImages": {"channel": "-1"}, "ClassImbalance": {"argmax": "True"}},
    # the predictions of these hooks are class scores (a loss module's first input, a Keras model's output)
    "pytorch": {"ClassImbalance": {"argmax": "True"}},
    "mxnet": {"ClassImbalance": {"argmax": "True"}},
    # NaN is a value of XGBoost's tree tables (a split with no category): judge what NaN breaks
    "xgboost": {"ExplodingTensor": {"collection_names": "losses,metrics,predictions"}},
}
# a network's LabelLeak: its inputs beside its loss's targets (the labels, or a regression loss's second input)
_INPUT_LEAK = [("inputs", _TAPERED), ("labels", _TAPERED), ("loss_inputs", _TAPERED)]

# framework -> rule -> the collections it reads instead of _COLLECTIONS'
_FRAMEWORK_COLLECTIONS: Dict[str, Dict[str, List[tuple]]] = {
    # with the running statistics a BatchNorm keeps of its input (buffers, saved only when asked): a model that
    # standardises raw features itself (Keras saves its layers' statistics with the weights)
    "pytorch": {"UnnormalizedInput": [("inputs", _TAPERED), ("normalization_statistics", _TAPERED)],
                "LabelLeak": _INPUT_LEAK},
    "tensorflow": {"LabelLeak": _INPUT_LEAK},
    "mxnet": {"LabelLeak": _INPUT_LEAK},
    "xgboost": {"ExplodingTensor": [("losses", _TAPERED), ("metrics", _TAPERED), ("predictions", _TAPERED)],
                # a booster has no weight tensors: only the loss part of Divergence applies
                "Divergence": [("losses", _TAPERED), ("metrics", _TAPERED)],
                # the objective compares the predictions with the labels (both of the validation data)
                "ImproperOutput": [("predictions", _TAPERED), ("labels", _TAPERED)],
                # the validation labels tell where a linear booster (gblinear) stood before its first round, a whole
                # fit: its progress is measured from there (see LossNotDecreasing)
                "LossNotDecreasing": [("losses", _TAPERED), ("labels", _TAPERED)],
                # every evaluation set's metrics (the training data's too) and the held-out labels, whose best
                # constant prediction is where a model that learned nothing stands
                "Overfit": [("metrics", _TAPERED), ("labels", _TAPERED)]},
}


def _check_framework(framework: Optional[str]) -> None:
    if framework is not None and framework not in FRAMEWORKS:
        raise ValueError(f"unknown framework {framework!r}; use one of {', '.join(FRAMEWORKS)}")


def rule_parameters(rule: str, framework: Optional[str] = None) -> Dict[str, str]:
    """The parameters this module gives ``rule`` (beyond ``rule_to_invoke``) for ``framework``'s runs."""
    _check_framework(framework)
    return {**_PARAMETERS.get(rule, {}), **_FRAMEWORK_PARAMETERS.get(framework, {}).get(rule, {})}


def _config(rule: str, framework: Optional[str] = None) -> dict:
    return {
        "DebugRuleConfiguration": {"RuleConfigurationName": rule,
                                   "RuleParameters": {"rule_to_invoke": rule, **rule_parameters(rule, framework)}},
        "CollectionConfigurations": [
            {"CollectionName": name, "CollectionParameters": dict(params)} for name, params in _collections(rule, framework)
        ],
    }


def _collections(rule: str, framework: Optional[str]) -> List[tuple]:
    return _FRAMEWORK_COLLECTIONS.get(framework, {}).get(rule) or _COLLECTIONS.get(rule, [])


def vanishing_gradient(framework=None):
    return _config("VanishingGradient", framework)


def similar_across_runs(framework=None):
    return _config("SimilarAcrossRuns", framework)


def weight_update_ratio(framework=None):
    return _config("WeightUpdateRatio", framework)


def all_zero(framework=None):
    return _config("AllZero", framework)


def exploding_tensor(framework=None):
    return _config("ExplodingTensor", framework)


def unchanged_tensor(framework=None):
    return _config("UnchangedTensor", framework)


def loss_not_decreasing(framework=None):
    return _config("LossNotDecreasing", framework)


def check_input_images(framework=None):
    return _config("CheckInputImages", framework)


def dead_relu(framework=None):
    return _config("DeadRelu", framework)


def confusion(framework=None):
    return _config("Confusion", framework)


def tree_depth(framework=None):
    return _config("TreeDepth", framework)


def class_imbalance(framework=None):
    return _config("ClassImbalance", framework)


def overfit(framework=None):
    return _config("Overfit", framework)


def tensor_variance(framework=None):
    return _config("TensorVariance", framework)


def overtraining(framework=None):
    return _config("Overtraining", framework)


def poor_weight_initialization(framework=None):
    return _config("PoorWeightInitialization", framework)


def saturated_activation(framework=None):
    return _config("SaturatedActivation", framework)


def nlp_sequence_ratio(framework=None):
    return _config("NLPSequenceRatio", framework)


def stalled_training_rule(framework=None):
    return _config("StalledTrainingRule", framework)


def feature_importance_overweight(framework=None):
    return _config("FeatureImportanceOverweight", framework)


def oscillating_loss(framework=None):
    return _config("OscillatingLoss", framework)


def slow_convergence(framework=None):
    return _config("SlowConvergence", framework)


def divergence(framework=None):
    return _config("Divergence", framework)


def unnormalized_input(framework=None):
    return _config("UnnormalizedInput", framework)


def improper_output(framework=None):
    return _config("ImproperOutput", framework)


def label_leak(framework=None):
    return _config("LabelLeak", framework)


def create_xgboost_report(framework=None):
    """The configuration of SageMaker's XGBoost report job (a report, not a rule: no pack registers
    ``CreateXgboostReport``, so it is in no rule group; its collections are what the report reads)."""
    return _config("CreateXgboostReport", framework)


class MXNET(Enum):
    SIMPLE = "mxnet-simple"
    RECOMMENDED = "mxnet-recommended"


class TENSORFLOW(Enum):
    SIMPLE = "tensorflow-simple"
    RECOMMENDED = "tensorflow-recommended"


class PYTORCH(Enum):
    SIMPLE = "pytorch-simple"
    RECOMMENDED = "pytorch-recommended"


class XGBOOST(Enum):
    SIMPLE = "xgboost-simple"
    RECOMMENDED = "xgboost-recommended"


_DEEP_LEARNING_SIMPLE = [vanishing_gradient, loss_not_decreasing, weight_update_ratio]
_GROUPS = {
    MXNET.SIMPLE: _DEEP_LEARNING_SIMPLE,
    TENSORFLOW.SIMPLE: _DEEP_LEARNING_SIMPLE,
    PYTORCH.SIMPLE: _DEEP_LEARNING_SIMPLE,
    # smdebug-rulesconfig's JSON also listed CreateXgboostReport here; it is a report job, not a rule that
    # any pack registers (the group failed on every run), so the group holds the two rules of its docs
    XGBOOST.SIMPLE: [tree_depth, class_imbalance],
}


# The rules a run of each framework is judged by when none are named: every rule that finds a real fault and,
# at its defaults, stays quiet on sound training (measured on the rule-accuracy benchmark's healthy runs,
# benchmarks/RESULTS.md): NaN and finite explosion, vanishing gradients, a loss that stops falling,
# oscillates or falls too slowly, dead ReLUs, saturated tanh/sigmoid units, unnormalised images and tabular
# inputs, an output the loss does not expect, overfitting and overtraining, imbalanced classes, a feature column
# that is the label. Left out:
# rules that need the user's knowledge of the run (NLPSequenceRatio's padding id, AllZero's and
# TensorVariance's selections and thresholds), those that judge the model's accuracy (Confusion: a hard task
# is not a fault), UnchangedTensor (frozen weights are WeightUpdateRatio's small_threshold too; it would add
# the biases to what the hook saves) and PoorWeightInitialization (its loss test judges 10 noisy steps).
_DEEP_LEARNING_RECOMMENDED = ("VanishingGradient", "ExplodingTensor", "LossNotDecreasing", "WeightUpdateRatio",
                              "DeadRelu", "SaturatedActivation", "CheckInputImages", "UnnormalizedInput",
                              "ImproperOutput", "OscillatingLoss", "SlowConvergence", "Divergence", "Overfit",
                              "Overtraining", "ClassImbalance", "LabelLeak")
RECOMMENDED: Dict[str, Tuple[str, ...]] = {
    "pytorch": _DEEP_LEARNING_RECOMMENDED,
    "tensorflow": _DEEP_LEARNING_RECOMMENDED,
    "mxnet": _DEEP_LEARNING_RECOMMENDED,
    # the curve rules read XGBoost's metrics (train-*/validation-*) as losses
    # (FeatureImportanceOverweight is left out: a data set with a few informative features is no fault;
    # OscillatingLoss too: a boosting metric is computed on whole data sets, and the one way it oscillates,
    # rounds that overshoot (eta past ~2), flips every round, which the rule's block means average away while
    # Divergence and LossNotDecreasing catch it; and it needs 100 rounds, so most boosting runs, tens of
    # rounds, ended NotEvaluated for it alone)
    # (LabelLeak: the one look at the features, from the first round's trees and held-out predictions)
    # (Overfit: a held-out set's metric that never followed the training data's -- labels shuffled apart from the
    # rows -- which the curve rules, judging each metric alone, see as a short run that ended at its best)
    "xgboost": ("ExplodingTensor", "LossNotDecreasing", "SlowConvergence", "Divergence", "TreeDepth",
                "ClassImbalance", "ImproperOutput", "LabelLeak", "Overfit"),
}
_RECOMMENDED_GROUPS = {MXNET.RECOMMENDED: "mxnet", TENSORFLOW.RECOMMENDED: "tensorflow",
                       PYTORCH.RECOMMENDED: "pytorch", XGBOOST.RECOMMENDED: "xgboost"}


def _recommended_names(framework: str) -> Tuple[str, ...]:
    _check_framework(framework)
    if framework is None:
        raise ValueError(f"name a framework: one of {', '.join(FRAMEWORKS)}")
    return RECOMMENDED[framework]


def recommended_rules(framework: str) -> List[Tuple[str, Dict[str, str]]]:
    """``[(rule name, parameters), ...]``: the recommended rules for ``framework``'s runs, as
    :func:`smdebug.rules.run_rules` takes them."""
    return [(rule, rule_parameters(rule, framework)) for rule in _recommended_names(framework)]


def collections_for(rules, framework: Optional[str] = None) -> List[str]:
    """The collections ``rules`` (names) read for ``framework``'s runs, in order, each once."""
    _check_framework(framework)
    names: List[str] = []
    for rule in rules:
        names.extend(c for c, _ in _collections(rule, framework) if c not in names)
    return names


def recommended_collections(framework: str) -> List[str]:
    """The collections the recommended rules for ``framework`` read (what ``Hook.recommended`` saves)."""
    names = collections_for(_recommended_names(framework), framework)
    if "losses" not in names:
        names.append("losses")  # always worth having, and every hook saves it anyway
    return names


def get_rule_groups(group) -> List[dict]:
    """The rule configurations of a group, e.g. ``get_rule_groups(PYTORCH.SIMPLE)`` or
    ``get_rule_groups(PYTORCH.RECOMMENDED)``."""
    framework = _RECOMMENDED_GROUPS.get(group) if isinstance(group, Enum) else None
    if framework is not None:
        return [_config(rule, framework) for rule in RECOMMENDED[framework]]
    try:
        return [make() for make in _GROUPS[group]]
    except KeyError:
        known = [*_GROUPS, *_RECOMMENDED_GROUPS]
        raise ValueError(f"unknown rule group {group!r}; use one of {', '.join(str(g) for g in known)}") from None


def hook_collection_configs(*configs: dict, save_interval: Optional[int] = None) -> List[dict]:
    """Merge the collections of rule configurations into hook JSON ``CollectionConfigurations``.

    A collection requested by several rules gets the *smallest* save interval any of them asked for and the
    union of their ``save_steps`` (so every rule has its data). ``save_interval`` overrides the intervals
    (e.g. 1 for short local runs).
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
            if previous is not None and "save_steps" in previous and "save_steps" in params:
                steps = {int(x) for p in (previous, params) for x in str(p["save_steps"]).split(",") if x.strip()}
                params["save_steps"] = ",".join(str(x) for x in sorted(steps))
            merged[coll["CollectionName"]] = {**(previous or {}), **params}
    return [{"CollectionName": name, "CollectionParameters": params} for name, params in merged.items()]
