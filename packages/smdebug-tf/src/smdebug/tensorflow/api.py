"""``smd.get_hook``: the process's TensorFlow hook (zero-code-change integrations)."""

from __future__ import annotations

from typing import Optional

from smdebug.core import singleton
from smdebug.exceptions import SMDebugValueError

_TYPES = ("keras", "session", "estimator")


def _hook_class(hook_type: Optional[str]):
    if hook_type in (None, "keras"):
        from smdebug.tensorflow.keras import KerasHook

        return KerasHook
    from smdebug.tensorflow.session import SessionHook

    return SessionHook


def get_hook(hook_type: Optional[str] = None, json_config_path: Optional[str] = None,
             create_if_not_exists: bool = False):
    """The current TensorFlow hook.

    :param hook_type: ``"keras"``, ``"session"`` or ``"estimator"`` (the same as ``"session"``), or
        None for whichever TensorFlow hook exists (a new one is a ``KerasHook``).
    :param json_config_path: the hook JSON configuration; default ``SMDEBUG_CONFIG_FILE_PATH``.
    :param create_if_not_exists: build the hook from that configuration when there is none.
    :return: the hook, or None (no hook and none created, ``USE_SMDEBUG`` false, or no configuration).
    """
    if hook_type is not None and hook_type not in _TYPES:
        raise SMDebugValueError(f"hook_type must be one of {', '.join(_TYPES)} or None, got {hook_type!r}")
    if hook_type is None:
        current = singleton.get_hook(None)
        if current is not None and getattr(current, "framework_name", None) == "tensorflow":
            return current
    return singleton.get_hook(_hook_class(hook_type), json_config_path, create_if_not_exists)


set_hook = singleton.set_hook
del_hook = singleton.del_hook
