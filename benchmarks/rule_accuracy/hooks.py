"""How the benchmark's runs are recorded, and which rules form "the recommended set": the documented way.

Every run is recorded as the README tells users to: ``Hook.recommended(out_dir)`` (``KerasHook.recommended``
for Keras; the XGBoost hook's with its data), which saves what the recommended rules need on the tapered
schedule (every step at first, then sparser; losses and metrics at every step). The recommended set is what
``smdebug rules run RUN`` evaluates with no ``--rule``: ``rule_configs.RECOMMENDED[framework]``, each rule with
the parameters ``rule_configs`` gives it.

So that the rules *outside* the recommended set are measured fairly too, the same call adds, through
``include_collections``, the collections those rules read (``rule_configs.collections_for``: labels and
predictions for Confusion/ClassImbalance, the XGBoost trees and feature importances...), on the same
schedule; and the inputs of the loss module (``<Loss>_input_<i>``, which only a classification loss puts in
``predictions``/``labels``) through ``include_regex``, for the label checks of properties.py. The
recommended rules select their tensors by collection, so what is added does not change what they judge
(ExplodingTensor, which judges every tensor of a run by default, sees the added tensors too: more chances
to find a NaN, none to raise a false alarm on finite values).

>>> SWITCH POINT <<< nothing else in the benchmark builds hooks or names the recommended rules. Change
``HOOK_CONFIG_VERSION`` whenever what the hooks save changes so cached runs are retrained (the code hash of
runs.py also covers the recommended collections and the preset's source).
"""

from __future__ import annotations

from typing import List

#: part of every cached run's key: change it whenever what the hooks save changes
HOOK_CONFIG_VERSION = "hook-recommended-1"

#: framework of the benchmark -> rule_configs' name for it
FRAMEWORKS = {"torch": "pytorch", "keras": "tensorflow", "xgboost": "xgboost"}

#: saved whatever the rules read: the model's output and what the loss compares (for the label checks)
ALWAYS = ("predictions", "labels", "outputs")

#: the loss module's inputs (prediction, target) for the label checks, whatever the loss
LOSS_INPUTS = r"[Ll]oss_input_\d+$"


def extra_collections(framework: str) -> List[str]:
    """The collections every built-in rule reads for ``framework`` that Hook.recommended does not save."""
    from smdebug.rules import rule_configs
    from smdebug.rules.plugin import RULES

    fw = FRAMEWORKS[framework]
    wanted = rule_configs.collections_for([info.name for info in RULES], fw) + list(ALWAYS)
    recommended = rule_configs.recommended_collections(fw)
    return list(dict.fromkeys(c for c in wanted if c not in recommended and _has(framework, c)))


def _has(framework: str, collection: str) -> bool:
    """Whether the framework's hook defines ``collection`` (an unknown one is refused with an error log)."""
    trees_only = ("trees", "feature_importance", "average_shap", "full_shap", "hyperparameters")
    if framework == "xgboost":
        return collection in trees_only or collection in ("losses", "metrics", "predictions", "labels")
    return collection not in trees_only and (collection != "outputs" or framework == "torch")


def torch_hook(out_dir: str):
    """The PyTorch hook of every benchmark run (register the model and the loss on it)."""
    import smdebug.pytorch as smd

    return smd.Hook.recommended(out_dir, include_collections=extra_collections("torch"), include_regex=[LOSS_INPUTS])


def keras_hook(out_dir: str):
    """The Keras hook (a callback of ``fit``)."""
    import smdebug.tensorflow as smd

    return smd.KerasHook.recommended(out_dir, include_collections=extra_collections("keras"))


def xgboost_hook(out_dir: str, params: dict, train, valid):
    """The XGBoost hook (a training callback). ``average_shap`` is in no rule's collections: computing SHAP
    values on deep trees every round would cost minutes per run."""
    import smdebug.xgboost as smd

    return smd.Hook.recommended(out_dir, include_collections=extra_collections("xgboost"), hyperparameters=params,
                                train_data=train, validation_data=valid)


#: how the held-out runs (scenarios ``hh_``/``bh_``) are recorded: what somebody outside the team does, not the
#: benchmark's union of every rule's collections. ``recommended``: ``Hook.recommended(out_dir)`` and nothing more;
#: ``recommended_loss_io``: the same plus the loss module's inputs (a user who also wants the regression loss's
#: predictions and targets; the label checks of an output/loss mismatch read them); ``readme_interval``: the
#: README's first example, weights, gradients and losses every 10 steps; ``default``: ``Hook(out_dir)`` as it
#: comes (the default collections every 500 steps).
HELDOUT_HOOKS = ("recommended", "recommended_loss_io", "readme_interval", "default")


def heldout_torch_hook(out_dir: str, kind: str = "recommended"):
    import smdebug.pytorch as smd

    if kind == "recommended":
        return smd.Hook.recommended(out_dir)
    if kind == "recommended_loss_io":
        return smd.Hook.recommended(out_dir, include_regex=[LOSS_INPUTS])
    if kind == "readme_interval":
        return smd.Hook(out_dir=out_dir, save_config=smd.SaveConfig(save_interval=10),
                        include_collections=["weights", "gradients", "losses"])
    if kind == "default":
        return smd.Hook(out_dir=out_dir)
    raise ValueError(f"unknown held-out hook {kind!r}")


def heldout_keras_hook(out_dir: str, kind: str = "recommended"):
    import smdebug.tensorflow as smd

    if kind == "recommended":
        return smd.KerasHook.recommended(out_dir)
    if kind == "default":
        return smd.KerasHook(out_dir=out_dir)
    raise ValueError(f"unknown held-out hook {kind!r}")


def heldout_xgboost_hook(out_dir: str, params: dict, train, valid, kind: str = "recommended"):
    import smdebug.xgboost as smd

    if kind == "recommended":
        return smd.Hook.recommended(out_dir, hyperparameters=params, train_data=train, validation_data=valid)
    if kind == "default":
        return smd.Hook(out_dir=out_dir, hyperparameters=params, train_data=train, validation_data=valid)
    raise ValueError(f"unknown held-out hook {kind!r}")


def recommended_rules(framework: str) -> list:
    """The recommended set as ``run_rules`` takes it: ``[(rule, parameters), ...]`` from
    ``rule_configs.recommended_rules`` (what ``smdebug rules run RUN`` evaluates with no ``--rule``)."""
    from smdebug.rules import rule_configs

    return rule_configs.recommended_rules(FRAMEWORKS[framework])


def recommended_rule_names(framework: str) -> List[str]:
    return [name for name, _ in recommended_rules(framework)]


def recording_key(framework: str) -> str:
    """What decides what a run records beyond this module's source: the collections saved (recommended
    and added, as one set: moving a rule in or out of the recommended set retrains nothing), and the source of
    the preset (its schedule)."""
    import inspect

    from smdebug.core import presets
    from smdebug.rules import rule_configs

    saved = set(extra_collections(framework)) | set(rule_configs.recommended_collections(FRAMEWORKS[framework]))
    return repr((HOOK_CONFIG_VERSION, sorted(saved), inspect.getsource(presets)))


def recommended_set_description() -> str:
    return ("`rule_configs.RECOMMENDED[framework]` with the parameters `rule_configs` gives them (what `smdebug rules "
            "run RUN` evaluates with no `--rule`), on runs recorded with `Hook.recommended(out_dir, "
            "include_collections=<the other rules' collections>)` (benchmarks/rule_accuracy/hooks.py); the held-out "
            "rows (`hh_`/`bh_`) with `Hook.recommended(out_dir)` alone, or the hook a row names (`HELDOUT_HOOKS`)")


#: how the second held-out batch (scenarios ``h2_``/``b2_``) is recorded: ``recommended`` and ``recommended_loss_io``
#: as above; ``interval_10`` / ``interval_50``: the README's hook (weights, gradients and losses) with
#: ``save_interval=10`` or ``50``; ``default``: ``Hook(out_dir)`` as it comes.
HELDOUT2_HOOKS = ("recommended", "recommended_loss_io", "interval_10", "interval_50", "default")


def heldout2_torch_hook(out_dir: str, kind: str = "recommended"):
    import smdebug.pytorch as smd

    if kind == "recommended":
        return smd.Hook.recommended(out_dir)
    if kind == "recommended_loss_io":
        return smd.Hook.recommended(out_dir, include_regex=[LOSS_INPUTS])
    if kind in ("interval_10", "interval_50"):
        return smd.Hook(out_dir=out_dir, save_config=smd.SaveConfig(save_interval=int(kind.split("_")[1])),
                        include_collections=["weights", "gradients", "losses"])
    if kind == "default":
        return smd.Hook(out_dir=out_dir)
    raise ValueError(f"unknown held-out hook {kind!r}")


def heldout2_keras_hook(out_dir: str, kind: str = "recommended"):
    import smdebug.tensorflow as smd

    if kind == "recommended":
        return smd.KerasHook.recommended(out_dir)
    if kind == "default":
        return smd.KerasHook(out_dir=out_dir)
    raise ValueError(f"unknown held-out hook {kind!r}")


def heldout2_xgboost_hook(out_dir: str, params: dict, train, valid, kind: str = "recommended"):
    import smdebug.xgboost as smd

    if kind == "recommended":
        return smd.Hook.recommended(out_dir, hyperparameters=params, train_data=train, validation_data=valid)
    if kind == "recommended_importance":  # also the feature importances (the README's collection list)
        return smd.Hook.recommended(out_dir, hyperparameters=params, train_data=train, validation_data=valid,
                                    include_collections=["feature_importance"])
    raise ValueError(f"unknown held-out hook {kind!r}")
