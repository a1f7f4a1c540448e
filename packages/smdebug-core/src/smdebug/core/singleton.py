"""The process-wide hook used by zero-code-change integrations (``smd.get_hook()``)."""

from __future__ import annotations

import os
from typing import Optional, Type

_hook = None


def set_hook(hook) -> None:
    global _hook
    _hook = hook


def del_hook() -> None:
    global _hook
    _hook = None


def current_hook():
    """The hook set last in this process (None if none), whatever its framework."""
    return _hook


def smdebug_enabled() -> bool:
    """False when ``USE_SMDEBUG`` is set to false/0/no/off (zero-code-change integrations back off)."""
    return os.environ.get("USE_SMDEBUG", "true").strip().lower() not in ("false", "0", "no", "off")


def get_hook(hook_class: Optional[Type] = None, json_config_path: Optional[str] = None,
             create_if_not_exists: bool = False):
    """The current hook if it is a ``hook_class`` (any hook when None).

    With ``create_if_not_exists`` a hook is built from the JSON configuration
    (``json_config_path`` or ``SMDEBUG_CONFIG_FILE_PATH``); a missing file means no hook (None).
    Always None when ``USE_SMDEBUG`` disables smdebug.
    """
    global _hook
    if not smdebug_enabled():
        return None
    if _hook is not None and (hook_class is None or isinstance(_hook, hook_class)):
        return _hook
    if hook_class is not None and _hook is not None:
        _hook = None  # a hook of another framework: discard it
    if create_if_not_exists and hook_class is not None:
        try:
            _hook = hook_class.create_from_json_file(json_config_path)
        except FileNotFoundError:
            return None
    return _hook if hook_class is None or isinstance(_hook, hook_class) else None
