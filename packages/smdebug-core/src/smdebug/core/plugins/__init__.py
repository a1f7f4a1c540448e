"""smdebug's plugin system (pluggy project ``"smdebug"``).

Plugin authors need::

    from smdebug.core.plugins import hookimpl, FrameworkInfo, RuleInfo, WorkerInfo

The hook specifications are in :mod:`smdebug.core.plugins.hookspecs`; discovery and the helpers the core
uses (:func:`frameworks`, :func:`tensor_to_numpy`, :func:`detect_worker`...) in
:mod:`smdebug.core.plugins.manager`.

Names are loaded on first access so that ``import smdebug`` (which imports
:mod:`smdebug.core.plugins.missing`) stays cheap and never imports pluggy or numpy.
"""

from __future__ import annotations

from smdebug.core.lazy import lazy_exports
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from smdebug.core.plugins.info import CommandInfo, FrameworkInfo, RuleInfo, WorkerInfo  # noqa: F401
    from smdebug.core.plugins.manager import (  # noqa: F401 - re-exported lazily
        DISABLE_ENV,
        ENTRY_POINT_GROUPS,
        FRAMEWORKS_GROUP,
        LOAD_ENV,
        RULES_GROUP,
        PluginStatus,
        SmdebugPluginManager,
        detect_worker,
        framework_plugin,
        frameworks,
        get_plugin_manager,
        load_plugins,
        plugin_report,
        plugins_loaded,
        reset_for_tests,
        rule_plugin,
        rules,
        commands,
        command_plugin,
        tensor_to_numpy,
    )
    from smdebug.core.plugins.markers import hookimpl, hookspec  # noqa: F401
    from smdebug.core.plugins.missing import install_missing_plugin_finder  # noqa: F401

_EXPORTS = {
    "hookimpl": "smdebug.core.plugins.markers",
    "hookspec": "smdebug.core.plugins.markers",
    "FrameworkInfo": "smdebug.core.plugins.info",
    "RuleInfo": "smdebug.core.plugins.info",
    "WorkerInfo": "smdebug.core.plugins.info",
    "CommandInfo": "smdebug.core.plugins.info",
    "install_missing_plugin_finder": "smdebug.core.plugins.missing",
    "DISABLE_ENV": "smdebug.core.plugins.manager",
    "LOAD_ENV": "smdebug.core.plugins.manager",
    "ENTRY_POINT_GROUPS": "smdebug.core.plugins.manager",
    "FRAMEWORKS_GROUP": "smdebug.core.plugins.manager",
    "RULES_GROUP": "smdebug.core.plugins.manager",
    "PluginStatus": "smdebug.core.plugins.manager",
    "SmdebugPluginManager": "smdebug.core.plugins.manager",
    "detect_worker": "smdebug.core.plugins.manager",
    "framework_plugin": "smdebug.core.plugins.manager",
    "frameworks": "smdebug.core.plugins.manager",
    "get_plugin_manager": "smdebug.core.plugins.manager",
    "load_plugins": "smdebug.core.plugins.manager",
    "plugin_report": "smdebug.core.plugins.manager",
    "plugins_loaded": "smdebug.core.plugins.manager",
    "reset_for_tests": "smdebug.core.plugins.manager",
    "rule_plugin": "smdebug.core.plugins.manager",
    "rules": "smdebug.core.plugins.manager",
    "commands": "smdebug.core.plugins.manager",
    "command_plugin": "smdebug.core.plugins.manager",
    "tensor_to_numpy": "smdebug.core.plugins.manager",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
