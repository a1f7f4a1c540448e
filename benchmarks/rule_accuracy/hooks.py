"""How the benchmark's runs are recorded, and which rules form "the recommended set" — the switch point.

The issue asks for the recommended rule set "used the documented way": a documented hook call that saves
what the recommended rules need, and ``smdebug rules run RUN`` (no ``--rule``) evaluating the framework's
recommended set. Until that call exists, each framework's hook is configured here, in ONE function per
framework, with explicit collections that save weights, biases, gradients, losses, metrics, every module's
(layer's) inputs and outputs — activations and the model's input included — on a schedule dense enough for
runs of a few hundred steps; and the recommended set is today's ``rule_configs.<FRAMEWORK>.SIMPLE`` group.

>>> SWITCH POINT <<< When the documented call lands, change the bodies of :func:`torch_hook`,
:func:`keras_hook`, :func:`xgboost_hook` and :func:`recommended_rules` (nothing else in the benchmark
builds hooks or names the recommended rules) and bump ``HOOK_CONFIG_VERSION`` so cached runs are retrained.
"""

from __future__ import annotations

from typing import List

#: part of every cached run's key: change it whenever what the hooks save changes
HOOK_CONFIG_VERSION = "explicit-collections-1"

#: TRAIN saves every this many steps (losses every step); EVAL saves every step (evaluation is sparse)
TRAIN_INTERVAL = 5


def _torch_modes(smd):
    return smd.SaveConfig(mode_save_configs={
        smd.modes.TRAIN: smd.SaveConfigMode(save_interval=TRAIN_INTERVAL),
        smd.modes.EVAL: smd.SaveConfigMode(save_interval=1),
        smd.modes.PREDICT: smd.SaveConfigMode(save_interval=1),
        smd.modes.GLOBAL: smd.SaveConfigMode(save_interval=TRAIN_INTERVAL),
    })


def torch_hook(out_dir: str):
    """The PyTorch hook of every benchmark run (register the model and the loss on it)."""
    import smdebug.pytorch as smd

    hook = smd.Hook(out_dir=out_dir, save_config=_torch_modes(smd),
                    include_collections=["weights", "biases", "gradients", "losses", "inputs", "outputs"])
    # The loss curve every step: loss rules and the label checks see minibatch noise as it is.
    hook.get_collection("losses").save_config = smd.SaveConfig(save_interval=1)
    return hook


def keras_hook(out_dir: str):
    """The Keras hook (a callback of ``fit``)."""
    import smdebug.tensorflow as smd

    save_config = smd.SaveConfig(mode_save_configs={
        smd.modes.TRAIN: smd.SaveConfigMode(save_interval=TRAIN_INTERVAL),
        smd.modes.EVAL: smd.SaveConfigMode(save_interval=1),
        smd.modes.PREDICT: smd.SaveConfigMode(save_interval=1),
        smd.modes.GLOBAL: smd.SaveConfigMode(save_interval=TRAIN_INTERVAL),
    })
    hook = smd.KerasHook(out_dir, save_config=save_config,
                         include_collections=["weights", "biases", "gradients", "layers", "losses", "metrics",
                                              "inputs", "labels", "predictions"])
    hook.get_collection("losses").save_config = smd.SaveConfig(save_interval=1)
    return hook


def xgboost_hook(out_dir: str, params: dict, train, valid):
    """The XGBoost hook (a training callback): every boosting round. Everything but ``average_shap``: no rule
    reads SHAP values, and computing them on deep trees every round costs minutes per run."""
    import smdebug.xgboost as smd

    return smd.Hook(out_dir=out_dir, save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["metrics", "losses", "predictions", "labels", "feature_importance",
                                         "trees", "hyperparameters"],
                    hyperparameters=params, train_data=train, validation_data=valid)


def recommended_rules(framework: str) -> List[str]:
    """The rule names of the framework's recommended set, as the documentation has users get them."""
    from smdebug.rules import rule_configs

    group = {"torch": rule_configs.PYTORCH.SIMPLE, "keras": rule_configs.TENSORFLOW.SIMPLE,
             "xgboost": rule_configs.XGBOOST.SIMPLE}[framework]
    return [config["DebugRuleConfiguration"]["RuleParameters"]["rule_to_invoke"]
            for config in rule_configs.get_rule_groups(group)]


def recommended_set_description() -> str:
    return ("today's `rule_configs.<FRAMEWORK>.SIMPLE` group (`get_rule_groups`), each rule at its defaults, on "
            "runs saved by the explicit hook configuration of benchmarks/rule_accuracy/hooks.py")
