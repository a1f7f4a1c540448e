"""The SageMaker hook configuration file (``debughookconfig.json``) turned into hook arguments.

```
{"LocalPath": "/opt/ml/output/tensors",
 "HookParameters": {"save_interval": "10", "train.save_interval": "5", "reductions": "mean,abs_l2_norm", ...},
 "CollectionConfigurations": [{"CollectionName": "weights", "CollectionParameters": {"save_interval": "2"}}]}
```

Every value may be a string, as SageMaker passes them. Differences from the original, on purpose:
``save_steps`` may be a JSON list as well as a comma string; ``dry_run`` and ``include_collections`` in
HookParameters are honoured; ``save_raw_tensor``/``save_shape`` work without ``reductions``; collections
listed without their own interval inherit the hook's interval (for XGBoost that is 10, not 500);
unknown keys are reported in a warning instead of being silently dropped.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Dict, Optional

from smdebug.core.lazy import lazy_exports
from smdebug.core.storage.safe_fs import read_regular
from smdebug.core.collection import CollectionKeys
from smdebug.core.logger import get_logger
from smdebug.core.modes import ModeKeys
from smdebug.core.reduction_config import ReductionConfig, _as_bool
from smdebug.core.save_config import SaveConfig, SaveConfigMode
from smdebug.core.names import shown as _shown
from smdebug.exceptions import InvalidConfigurationError

DEFAULT_CONFIG_FILE_PATH = "/opt/ml/input/config/debughookconfig.json"
DEFAULT_LOCAL_PATH = "/opt/ml/output/tensors"
CONFIG_FILE_PATH_ENV = "SMDEBUG_CONFIG_FILE_PATH"
TENSORBOARD_CONFIG_FILE_PATH_ENV = "TENSORBOARD_CONFIG_FILE_PATH"
DEFAULT_TENSORBOARD_CONFIG_FILE_PATH = "/opt/ml/input/config/tensorboardoutputconfig.json"

_SCHEDULE_KEYS = ("save_interval", "save_steps", "start_step", "end_step")
_MODE_PREFIXES = {"train.": ModeKeys.TRAIN, "eval.": ModeKeys.EVAL, "predict.": ModeKeys.PREDICT,
                  "global.": ModeKeys.GLOBAL}
_HOOK_KEYS = {"save_all", "include_regex", "include_workers", "export_tensorboard", "tensorboard_dir",
              "reductions", "save_raw_tensor", "save_shape", "dry_run", "include_collections"}
_COLLECTION_KEYS = {"include_regex", "save_histogram", "reductions", "save_raw_tensor", "save_shape"}


def config_file_path(json_file_path: Optional[str] = None) -> str:
    return json_file_path or os.environ.get(CONFIG_FILE_PATH_ENV) or DEFAULT_CONFIG_FILE_PATH


def _csv_list(value, what: str):
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [v.strip() for v in value]
    raise InvalidConfigurationError(f"{what} must be a comma-separated string, got {_shown(value)}")


def _regex_list(value, what: str, source) -> list:
    """:func:`_csv_list` of regular expressions, each compiled here as the hook will compile it (``re``'s
    syntax, at most ``MAX_PATTERN_LENGTH`` characters: ``smdebug.core.run_regex``): a bad one is a
    configuration error naming the file and the key. Checked with ``re`` only, a pattern of 100,000
    characters passed, and the collection it reached raised SMDebugTypeError quoting all of it."""
    from smdebug.core.run_regex import PatternError, compile_pattern

    patterns = _csv_list(value, what)
    for pattern in patterns:
        try:
            re.compile(pattern)  # (re's syntax, which code-made collections use, and no more)
            compile_pattern(pattern)  # (None, not an error, for one too costly to compile: set aside later)
        except (re.error, PatternError) as e:
            raise InvalidConfigurationError(
                f"{source}: {what}: {pattern[:200]!r}{'...' if len(pattern) > 200 else ''} is not a valid regex "
                f"({str(e)[:300]})") from None
    return patterns


def _bool(value, what: str) -> bool:
    try:
        return _as_bool(value, what)
    except Exception:
        raise InvalidConfigurationError(f"{what} must be true or false, got {_shown(value)}") from None


def _check_keys(params: dict, where: str) -> None:
    allowed = set(_SCHEDULE_KEYS) | {p + k for p in _MODE_PREFIXES for k in _SCHEDULE_KEYS}
    allowed |= _HOOK_KEYS if where == "HookParameters" else _COLLECTION_KEYS
    unknown = sorted(set(params) - allowed)
    if unknown:
        get_logger().warning("Ignoring unknown keys %s in %s of the hook configuration", unknown, where)


def _schedule(params: dict, mode: ModeKeys) -> Dict[str, Any]:
    """The schedule keys set in ``params`` for ``mode`` (mode-prefixed keys win over plain ones)."""
    prefix = mode.name.lower() + "."
    out = {}
    for key in _SCHEDULE_KEYS:
        if prefix + key in params:
            out[key] = params[prefix + key]
        elif key in params:
            out[key] = params[key]
    return out


def _save_config(layers, default_interval: Optional[int]) -> Optional[SaveConfig]:
    """Resolve the schedule of each mode from ``layers`` (lowest priority first). None if nothing set."""
    if not any(layers):
        return None
    modes = {}
    for mode in ModeKeys:
        merged: Dict[str, Any] = {}
        for layer in layers:
            merged.update(_schedule(layer, mode))
        if "save_interval" not in merged and default_interval is not None:
            merged["save_interval"] = default_interval
        try:
            modes[mode] = SaveConfigMode(**merged)
            problem = modes[mode].problem()  # (a schedule that could never save)
        except Exception as e:
            raise InvalidConfigurationError(f"Invalid save schedule for mode {mode.name}: {e}") from None
        if problem is not None:
            raise InvalidConfigurationError(f"Invalid save schedule for mode {mode.name}: {problem}")
    return SaveConfig(mode_save_configs=modes)


def _reduction_config(params: dict, where: str) -> Optional[ReductionConfig]:
    if not any(k in params for k in ("reductions", "save_raw_tensor", "save_shape")):
        return None
    reductions = params.get("reductions") or ""
    if not isinstance(reductions, str):
        reductions = ",".join(_csv_list(reductions, f"{where}.reductions"))
    raw_default = not reductions  # without reductions the raw tensor is what there is to save
    try:
        return ReductionConfig.from_csv(
            reductions,
            save_raw_tensor=_bool(params.get("save_raw_tensor", raw_default), f"{where}.save_raw_tensor"),
            save_shape=_bool(params.get("save_shape", False), f"{where}.save_shape"),
        )
    except InvalidConfigurationError:
        raise
    except Exception as e:
        raise InvalidConfigurationError(f"Invalid reductions in {where}: {e}") from None


def parse_hook_config(data: dict, default_save_interval: Optional[int] = None, source: str = "hook config") -> dict:
    """Turn the parsed JSON document into keyword arguments for a hook constructor.

    Returns the hook kwargs plus ``collection_configs``: name -> dict of Collection attributes to set.
    """
    if not isinstance(data, dict):
        raise InvalidConfigurationError(f"{source}: the configuration must be a JSON object")
    params = data.get("HookParameters") or {}
    if not isinstance(params, dict):
        raise InvalidConfigurationError(f"{source}: HookParameters must be an object")
    _check_keys(params, "HookParameters")
    # Only a missing (or null) LocalPath means SageMaker's default. An empty one used to fall through
    # `or` to the default too, so the run was silently written to /opt/ml instead of being refused.
    out_dir = data.get("LocalPath")
    if out_dir is None:
        out_dir = DEFAULT_LOCAL_PATH
    elif not isinstance(out_dir, str):
        raise InvalidConfigurationError(f"{source}: LocalPath must be a string, got {type(out_dir).__name__}")
    elif not out_dir.strip():
        raise InvalidConfigurationError(f"{source}: LocalPath is empty: give the directory (or s3:// path) to save to")
    kwargs: Dict[str, Any] = {"out_dir": out_dir}
    kwargs["include_regex"] = _regex_list(params.get("include_regex"), "include_regex", source) or None
    kwargs["save_all"] = _bool(params.get("save_all", False), "save_all")
    kwargs["dry_run"] = _bool(params.get("dry_run", False), "dry_run")
    workers = str(params.get("include_workers", "one")).strip().lower()
    if workers not in ("one", "all"):
        raise InvalidConfigurationError(f"{source}: include_workers must be 'one' or 'all', got {_shown(workers)}")
    kwargs["include_workers"] = workers
    kwargs["export_tensorboard"] = _bool(params.get("export_tensorboard", False), "export_tensorboard")
    kwargs["tensorboard_dir"] = params.get("tensorboard_dir")
    if kwargs["tensorboard_dir"] is not None and not isinstance(kwargs["tensorboard_dir"], str):
        raise InvalidConfigurationError(f"{source}: tensorboard_dir must be a string")
    kwargs["reduction_config"] = _reduction_config(params, "HookParameters")
    hook_save_config = _save_config([params], default_save_interval)
    kwargs["save_config"] = hook_save_config
    include_collections = _csv_list(params.get("include_collections"), "include_collections")

    coll_configs: Dict[str, dict] = {}
    entries = data.get("CollectionConfigurations") or []
    if not isinstance(entries, list):
        raise InvalidConfigurationError(f"{source}: CollectionConfigurations must be a list")
    for entry in entries:
        if not isinstance(entry, dict) or not entry.get("CollectionName"):
            raise InvalidConfigurationError(f"{source}: every CollectionConfigurations entry needs a CollectionName")
        name = entry["CollectionName"]
        if not isinstance(name, str):
            raise InvalidConfigurationError(f"{source}: CollectionName must be a string, got {name!r}"[:500])
        cparams = entry.get("CollectionParameters") or {}
        if not isinstance(cparams, dict):
            raise InvalidConfigurationError(f"{source}: CollectionParameters of {name} must be an object")
        _check_keys(cparams, f"collection {name}")
        cfg: Dict[str, Any] = {}
        regex = _regex_list(cparams.get("include_regex"), f"{name}.include_regex", source)
        if regex:
            cfg["include_regex"] = regex
        if "save_histogram" in cparams:
            cfg["save_histogram"] = _bool(cparams["save_histogram"], f"{name}.save_histogram")
        rc = _reduction_config(cparams, f"collection {name}")
        if rc is not None:
            cfg["reduction_config"] = rc
        # Every listed collection gets a full schedule: its own keys over the hook's.
        cfg["save_config"] = _save_config([params, cparams], default_save_interval) or SaveConfig(
            save_interval=default_save_interval
        )
        coll_configs[name] = cfg
        if name not in include_collections:
            include_collections.append(name)
    if kwargs["include_regex"] and CollectionKeys.DEFAULT not in include_collections:
        include_collections.append(CollectionKeys.DEFAULT)
    if kwargs["save_all"] and CollectionKeys.ALL not in include_collections:
        include_collections.append(CollectionKeys.ALL)
    kwargs["include_collections"] = include_collections or None
    kwargs["collection_configs"] = coll_configs
    return kwargs


def apply_collection_configs(get_collection, coll_configs: Dict[str, dict], source: str = "") -> None:
    """Set what :func:`parse_hook_config` says of each collection (its ``collection_configs``) on the
    collection ``get_collection(name)`` returns (created if missing).

    The patterns of a configuration file are matched in bounded time (``smdebug.core.run_regex``), as a
    run's own are: the file is written by whoever launches the job, and a pattern that backtracks for minutes
    on a module's name (``(a|a)+$``) stopped training before its first step."""
    from smdebug.core.run_regex import Budget

    budget = Budget(source or "the hook configuration")
    for name, cfg in coll_configs.items():
        coll = get_collection(name)
        if "include_regex" in cfg:
            coll.match_in_bounded_time(budget)
            coll.include(cfg["include_regex"])
        for attr in ("save_histogram", "reduction_config", "save_config"):
            if attr in cfg:
                setattr(coll, attr, cfg[attr])


MAX_CONFIG_BYTES = 16 << 20


def load_hook_config(json_file_path: Optional[str] = None, default_save_interval: Optional[int] = None) -> dict:
    path = config_file_path(json_file_path)
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        raise FileNotFoundError(f"Hook configuration file not found: {path}") from None
    except (OSError, ValueError) as e:
        # Unreadable is not absent: os.path.exists said False for a link loop, a name too long or a folder
        # that may not be entered, and get_hook made no hook at all (training ran without a word)
        shown = path if len(path) <= 300 else path[:300] + "..."
        raise InvalidConfigurationError(f"Hook configuration {shown} cannot be read: "
                                        f"{getattr(e, 'strerror', None) or e}") from None
    kwargs = parse_hook_config(read_config_file(path), default_save_interval, source=path)
    _apply_sagemaker_tensorboard(kwargs)
    return kwargs


def read_config_file(path: str, what: str = "Hook configuration"):
    """The JSON document of a configuration file (``what`` names it in messages), read the one way every
    reader of the SageMaker configuration files shares (the hook's, the legacy 1.0.x functions'): a regular
    file of sane size only (a FIFO there would block the training script for good), one warning per key
    given twice in one object (:func:`_warn_duplicates`). FileNotFoundError when there is none;
    InvalidConfigurationError when it cannot be read or is not JSON."""
    try:
        raw = read_regular(path, limit=MAX_CONFIG_BYTES)
    except FileNotFoundError:
        raise
    except (OSError, ValueError) as e:  # (UnsafeFileError is an OSError; permission denied is one too)
        raise InvalidConfigurationError(f"{what} {path}: {e}") from None
    duplicates: Dict[str, int] = {}
    try:
        data = json.loads(raw, object_pairs_hook=_pairs_noting_duplicates(duplicates))
    except (ValueError, UnicodeDecodeError, RecursionError) as e:  # RecursionError: absurd nesting
        raise InvalidConfigurationError(f"{what} {path} is not valid JSON: {e}"[:1000]) from None
    _warn_duplicates(duplicates, f"{what} {path}")
    return data


def _pairs_noting_duplicates(duplicates: Dict[str, int]):
    """A ``json.loads`` ``object_pairs_hook``: objects as dicts (the last of a repeated key wins, as plain
    ``json.loads`` has it), counting in ``duplicates`` every key given more than once in one object."""

    def pairs(items):
        out = {}
        for key, value in items:
            if key in out:
                duplicates[key] = duplicates.get(key, 1) + 1
            out[key] = value
        return out

    return pairs


def _warn_duplicates(duplicates: Dict[str, int], where: str) -> None:
    """One warning per key given twice in one object of a configuration file (``LocalPath`` twice moved
    the run to the second path without a word)."""
    for key, count in list(duplicates.items())[:20]:
        shown = repr(key) if len(key) <= 200 else repr(key[:200]) + "..."
        get_logger().warning("smdebug: %s gives the key %s %d times in one object; the last one is used.",
                             where, shown, count)
    if len(duplicates) > 20:
        get_logger().warning("smdebug: %s repeats %d more keys.", where, len(duplicates) - 20)


def tensorboard_local_path(path: str) -> Optional[str]:
    """The ``LocalPath`` of SageMaker's TensorBoard configuration file at ``path`` (None: not given), read
    as :func:`read_config_file` reads; InvalidConfigurationError when it is not a JSON object with a string
    there."""
    data = read_config_file(path, "TensorBoard configuration")
    if not isinstance(data, dict):
        raise InvalidConfigurationError(f"TensorBoard configuration {path}: the configuration must be a JSON object")
    local = data.get("LocalPath")
    if local is not None and not isinstance(local, str):
        raise InvalidConfigurationError(f"TensorBoard configuration {path}: LocalPath must be a string")
    return local


def _apply_sagemaker_tensorboard(kwargs: dict) -> None:
    """On SageMaker (TRAINING_JOB_NAME set) the TensorBoard location comes from its own config file."""
    if "TRAINING_JOB_NAME" not in os.environ:
        return
    kwargs["export_tensorboard"] = False
    kwargs["tensorboard_dir"] = None
    path = os.environ.get(TENSORBOARD_CONFIG_FILE_PATH_ENV, DEFAULT_TENSORBOARD_CONFIG_FILE_PATH)
    if os.path.exists(path):
        local = tensorboard_local_path(path)
        if local:
            kwargs["export_tensorboard"] = True
            kwargs["tensorboard_dir"] = local


#: smdebug 1.0.x's functions and constants of this module (legacy adapters, loaded on use; the legacy
#: module imports this one, never the other way round)
__getattr__, __dir__ = lazy_exports(__name__, {
    name: "smdebug.core.legacy.json_config"
    for name in ("CONFIG_FILE_PATH_ENV_STR", "DEFAULT_SAGEMAKER_OUTDIR", "DEFAULT_SAGEMAKER_TENSORBOARD_PATH",
                 "TENSORBOARD_CONFIG_FILE_PATH_ENV_STR", "get_json_config_as_dict",
                 "get_tensorboard_dir_from_json_config", "collect_hook_config_params", "get_include_collections",
                 "add_collections_to_manager", "create_hook_from_json_config")
})
