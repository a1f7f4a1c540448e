"""The recommended hook configuration: save what the recommended rules of the installed rule packs need.

``Hook.recommended(out_dir)`` (every framework's hook, see :meth:`smdebug.core.hook.BaseHook.recommended`)
asks the rule packs through the ``smdebug_recommended_collections`` plugin hook which collections their
recommended rules read for the hook's framework (smdebug-rules answers from its ``rule_configs``; the core
knows no rule), and saves them all on :meth:`SaveConfig.tapered <smdebug.core.save_config.SaveConfig.tapered>`:
every step at first, then sparser, so a 30-step run and a 3000-step run both have steps to judge. The
scalar curves (:data:`CURVE_COLLECTIONS`: losses, metrics) are saved at every step instead: a rule judging a
loss curve (a trend, oscillation, overfitting) needs the curve, minibatch noise and all, and a scalar a
step costs little next to the tensors. ``smdebug rules run OUT_DIR`` then evaluates the same recommended
rules.
"""

from __future__ import annotations

from typing import List

from smdebug.core.collection import CollectionKeys
from smdebug.core.save_config import SaveConfig
from smdebug.exceptions import InvalidConfigurationError


#: collections of scalars that rules read as curves over the steps: saved at every step by Hook.recommended
CURVE_COLLECTIONS = (CollectionKeys.LOSSES, CollectionKeys.METRICS, CollectionKeys.SM_METRICS)


def recommended_save_config() -> SaveConfig:
    return SaveConfig.tapered()


def curve_save_config() -> SaveConfig:
    """The schedule of :data:`CURVE_COLLECTIONS` under Hook.recommended: every step of every mode."""
    return SaveConfig(save_interval=1)


def recommended_collections(framework: str) -> List[str]:
    """The union, in order, of the collections every installed rule pack recommends for ``framework``.

    :raises InvalidConfigurationError: no rule pack recommends anything for it (smdebug-rules missing), or
        a pack answered nonsense or failed.
    """
    from smdebug.core.plugins import manager

    try:
        answers = manager.get_plugin_manager().hook.smdebug_recommended_collections(framework=framework)
    except Exception as e:  # noqa: BLE001 - one clear configuration error, not a traceback from a plugin
        raise InvalidConfigurationError(
            f"a rule pack failed to name the collections its recommended rules need ({type(e).__name__}: {e})"
        ) from e
    names: List[str] = []
    for answer in reversed(answers):  # pluggy calls the last registered first: keep registration order
        if answer is None:
            continue
        if isinstance(answer, str) or not all(isinstance(n, str) and n for n in answer):
            raise InvalidConfigurationError(
                f"a rule pack answered smdebug_recommended_collections({framework!r}) with {answer!r}; "
                "expected a list of collection names")
        names.extend(n for n in answer if n not in names)
    if not names:
        raise InvalidConfigurationError(
            f"no installed rule pack recommends rules for {framework!r} runs, so Hook.recommended() does not "
            "know what to save. Install the built-in rules (pip install 'smdebug-core[rules]'), or configure "
            "the hook yourself (save_config=..., include_collections=[...]).")
    return names
