"""Entry point of smdebug-rules (group ``smdebug.rules``, name ``builtin``).

Imported during plugin discovery: it imports nothing but smdebug's plugin API. Rules are registered as
``"module:Class"`` strings (:class:`~smdebug.core.plugins.RuleInfo`) and imported only when used.
"""

from typing import Tuple

from smdebug.core.plugins import CommandInfo, RuleInfo, hookimpl

PACK = "builtin"


def _rule(name: str, module: str, description: str) -> RuleInfo:
    return RuleInfo(name, f"smdebug.rules.generic.{module}:{name}", PACK, description)


#: the rules of this pack (the 17 of the original's documentation, the three its users also had, then ours)
RULES: Tuple[RuleInfo, ...] = (
    _rule("VanishingGradient", "vanishing_gradient", "mean |gradient| below a threshold"),
    _rule("AllZero", "tensor_rules", "tensors (almost) entirely zero"),
    _rule("CheckInputImages", "input_rules", "input images not normalised (mean far from 0)"),
    _rule("SimilarAcrossRuns", "similar_across_runs", "tensors differ from the same tensors of another run"),
    _rule("WeightUpdateRatio", "weight_update_ratio", "weight updates too large or too small for the weights"),
    _rule("ExplodingTensor", "tensor_rules", "NaN or infinite values"),
    _rule("UnchangedTensor", "tensor_rules", "tensors that stopped changing"),
    _rule("LossNotDecreasing", "curve_rules", "loss not decreasing (or rising) without having made progress"),
    _rule("DeadRelu", "activation_rules", "too many ReLU units never active"),
    _rule("Confusion", "classification_rules", "confusion matrix off its diagonal"),
    _rule("Overfit", "loss_rules", "validation loss drifting above training loss"),
    _rule("TreeDepth", "xgboost_rules", "XGBoost trees deeper than a limit"),
    _rule("TensorVariance", "tensor_rules", "variance outside [min, max]"),
    _rule("Overtraining", "loss_rules", "training or validation loss stopped improving"),
    _rule("PoorWeightInitialization", "poor_weight_initialization", "badly scaled initial weights"),
    _rule("SaturatedActivation", "activation_rules", "tanh/sigmoid units saturated"),
    _rule("NLPSequenceRatio", "input_rules", "too many padding/unknown tokens in input sequences"),
    _rule("ClassImbalance", "classification_rules", "imbalanced classes or classes mostly mispredicted"),
    _rule("FeatureImportanceOverweight", "xgboost_rules", "a few features carry almost all importance"),
    _rule("StalledTrainingRule", "stalled_training", "no new data written for a while"),
    # problem classes the original's rules did not cover (AUTOTRAINER, ICSE'21; DeepDiagnosis, ICSE'22)
    _rule("OscillatingLoss", "curve_rules", "loss swinging up and down instead of converging"),
    _rule("SlowConvergence", "curve_rules", "loss still falling steadily when training ended, far from converged"),
    _rule("Divergence", "divergence", "loss or weights growing by orders of magnitude, still finite"),
    _rule("UnnormalizedInput", "model_io_rules", "tabular or sequence input features far from unit scale"),
    _rule("ImproperOutput", "model_io_rules", "model output that does not fit the loss (probabilities into a "
          "logits loss, regression on class ids)"),
    _rule("LabelLeak", "label_leak", "an XGBoost classifier's first round separates the held-out classes on one "
          "feature (a feature that encodes the label)"),
)


@hookimpl
def smdebug_register_rules(register):
    for rule in RULES:
        register(rule)


@hookimpl
def smdebug_recommended_collections(framework):
    """What ``Hook.recommended(out_dir)`` saves: the collections of this pack's recommended rules."""
    from smdebug.rules import rule_configs

    if framework not in rule_configs.RECOMMENDED:
        return None
    return rule_configs.recommended_collections(framework)


@hookimpl
def smdebug_register_commands(register):
    """``smdebug rules list|show|run`` (smdebug.rules.command, imported only when it runs)."""
    register(CommandInfo("rules", "smdebug.rules.command", "List, describe and run rules over a run."))
