"""Which hook ``smdebug run`` attaches: the one its options describe, or ``Hook.recommended``'s preset.

``smdebug run --out-dir RUN -- python train.py`` with no ``--collections``/``--save-interval``/
``--include-regex`` (the first thing a user types) asks for the recommended preset: it writes the options'
configuration as usual and sets :data:`PRESET_ENV` to ``recommended``. The framework's zero-code attach
function, running in the script's process (where the framework, hence the preset's collections, is known),
builds its hook with :func:`configured_hook`: then the hook is ``HookClass.recommended(out_dir, ...)``, the
same collections and schedule as a script calling ``smd.Hook.recommended`` itself, so that
``smdebug rules run RUN`` has something to judge. The original's defaults (a few collections, every 500
steps) saved step 0 only in a run shorter than 500 steps, and every recommended rule said NotEvaluated.

Without a rule pack (smdebug-rules) nothing names the preset's collections: the hook falls back to the
configuration's defaults and says so once.
"""

from __future__ import annotations

import logging
import os
import re

# (light imports only: the `smdebug run` command reads the names below; the hook machinery is imported in
# the script's process, by the functions that build the hook)
logger = logging.getLogger("smdebug")

#: set by ``smdebug run`` in the script's environment: ``recommended`` asks for Hook.recommended's preset
PRESET_ENV = "SMDEBUG_RUN_PRESET"
RECOMMENDED = "recommended"
# a schedule key of HookParameters (plain or per mode, "train.save_interval"): the options gave a schedule,
# which replaces the preset's (as save_config does for Hook.recommended)
_SCHEDULE_KEY = re.compile(r"(^|\.)(save_interval|save_steps|start_step|end_step)$")


def preset_requested() -> bool:
    return os.environ.get(PRESET_ENV, "").strip().lower() == RECOMMENDED


def configured_hook(hook_class):
    """The process's ``hook_class`` hook for an unmodified script: the one that exists, else one built from
    the JSON configuration (``SMDEBUG_CONFIG_FILE_PATH``), with the recommended preset when ``smdebug run``
    asked for it. None when ``USE_SMDEBUG`` disables smdebug or there is no configuration."""
    from smdebug.core import singleton

    if not singleton.smdebug_enabled():
        return None
    current = singleton.current_hook()
    if isinstance(current, hook_class):
        return current
    if not preset_requested():
        return singleton.get_hook(hook_class, None, create_if_not_exists=True)
    try:
        return _recommended_hook(hook_class)  # (the constructor makes it the process's hook)
    except FileNotFoundError:
        return None


def _recommended_hook(hook_class):
    from smdebug.core.json_config import (apply_collection_configs, config_file_path, load_hook_config,
                                          read_config_file)
    from smdebug.core import singleton
    from smdebug.core.presets import recommended_collections
    from smdebug.exceptions import InvalidConfigurationError

    try:
        recommended_collections(hook_class.framework_name)
    except InvalidConfigurationError as e:
        from smdebug.core.save_config import DEFAULT_SAVE_INTERVAL

        logger.warning(
            "smdebug run: cannot use the recommended preset: %s Saving the hook's default configuration "
            "instead (every %s steps: a shorter run saves step 0 only); give --collections and --save-interval "
            "to choose.", str(e).rstrip(".") + ".", hook_class.default_save_interval or DEFAULT_SAVE_INTERVAL)
        return singleton.get_hook(hook_class, None, create_if_not_exists=True)
    path = config_file_path()
    kwargs = load_hook_config(path, default_save_interval=hook_class.default_save_interval)
    params = read_config_file(path).get("HookParameters") or {}
    if not any(_SCHEDULE_KEY.search(str(key)) for key in params):
        kwargs.pop("save_config", None)  # the preset's tapered schedule, losses and metrics at every step
    coll_configs = kwargs.pop("collection_configs", {})
    extra = kwargs.pop("include_collections", None) or []
    out_dir = kwargs.pop("out_dir")
    hook = hook_class.recommended(out_dir, include_collections=extra, **kwargs)
    apply_collection_configs(hook.get_collection, coll_configs, source=path)
    logger.info("smdebug run: the recommended preset: saving %s", ", ".join(hook.include_collections))
    return hook
