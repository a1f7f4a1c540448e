"""The process-wide hook used by zero-code-change integrations (``smd.get_hook()``)."""

from __future__ import annotations

_hook = None


def set_hook(hook) -> None:
    global _hook
    _hook = hook


def get_hook():
    return _hook


def del_hook() -> None:
    global _hook
    _hook = None
