"""smdebug 1.0.x's functions of ``smdebug.core.json_config`` (re-exported there), over the project's
parser of the SageMaker hook configuration (``smdebug.core.json_config.parse_hook_config``), so a
configuration means the same thing whichever way it is read."""

from __future__ import annotations

import os
from typing import Dict, List, Optional

from smdebug.core.config_constants import (
    CONFIG_COLLECTION_CONFIG_KEY,
    CONFIG_COLLECTION_NAME_KEY,
    CONFIG_FILE_PATH_ENV_STR,
    DEFAULT_CONFIG_FILE_PATH,
    DEFAULT_SAGEMAKER_OUTDIR,
    DEFAULT_SAGEMAKER_TENSORBOARD_PATH,
    TENSORBOARD_CONFIG_FILE_PATH_ENV_STR,
)
from smdebug.core.json_config import (
    apply_collection_configs,
    parse_hook_config,
    read_config_file,
    tensorboard_local_path,
)
from smdebug.core.logger import get_logger
from smdebug.exceptions import SMDebugValueError



def get_json_config_as_dict(json_config_path=None) -> Dict:
    """The parsed configuration file: ``json_config_path``, else ``$SMDEBUG_CONFIG_FILE_PATH``, else the
    SageMaker default. FileNotFoundError if there is none."""
    path = json_config_path if json_config_path is not None else os.getenv(CONFIG_FILE_PATH_ENV_STR,
                                                                            DEFAULT_CONFIG_FILE_PATH)
    params = read_config_file(path)  # (as the hook reads it: bounded, no FIFO, repeated keys said)
    get_logger().info(f"Creating hook from json_config at {path}.")
    return params


def get_tensorboard_dir_from_json_config() -> Optional[str]:
    """The ``LocalPath`` of SageMaker's TensorBoard configuration file, if there is one."""
    path = os.getenv(TENSORBOARD_CONFIG_FILE_PATH_ENV_STR, DEFAULT_SAGEMAKER_TENSORBOARD_PATH)
    if not os.path.isfile(path):
        return None
    return tensorboard_local_path(path)


def collect_hook_config_params(params_dict: Dict) -> Dict:
    """The hook's settings from a parsed configuration: ``out_dir``, ``reduction_config``, ``save_config``,
    ``save_all``, ``include_regex``, ``include_workers``, ``export_tensorboard``, ``tensorboard_dir``,
    ``dry_run``, and ``save_config_modes`` (mode -> its schedule as a dict)."""
    kwargs = parse_hook_config(params_dict)
    save_config = kwargs["save_config"]
    return {
        "out_dir": kwargs["out_dir"],
        "reduction_config": kwargs["reduction_config"],
        "reduction_configs": {},
        "save_config": save_config,
        "save_configs": {},
        "save_config_modes": {m: s.to_json_dict() for m, s in save_config.mode_save_configs.items()}
        if save_config is not None else {},
        "save_all": kwargs["save_all"],
        "include_regex": kwargs["include_regex"],
        "include_workers": kwargs["include_workers"],
        "export_tensorboard": kwargs["export_tensorboard"],
        "tensorboard_dir": kwargs["tensorboard_dir"],
        "dry_run": kwargs["dry_run"],
        "collection_configs": kwargs["collection_configs"],
    }


def get_include_collections(params_dict: Dict) -> Optional[List[str]]:
    """The names listed in ``CollectionConfigurations`` (None when there are none)."""
    configs = params_dict.get(CONFIG_COLLECTION_CONFIG_KEY)
    if configs is None:
        return None
    names = []
    for config in configs:
        if not isinstance(config, dict) or CONFIG_COLLECTION_NAME_KEY not in config:
            raise SMDebugValueError(f"Must specify '{CONFIG_COLLECTION_NAME_KEY}' in JSON config.")
        names.append(config[CONFIG_COLLECTION_NAME_KEY])
    return names


def add_collections_to_manager(collection_manager, params_dict: Dict, hook_params: Optional[Dict] = None) -> None:
    """Create or update, in ``collection_manager``, every collection the configuration lists, with its
    regexes, histogram setting, reductions and save schedule (the hook's schedule under its own)."""
    configs = (hook_params or {}).get("collection_configs")
    if configs is None:
        configs = parse_hook_config(params_dict)["collection_configs"]
    apply_collection_configs(collection_manager.get, configs)


def create_hook_from_json_config(hook_cls, json_config_path=None, default_values=None):
    """``hook_cls.create_from_json_file(json_config_path)``."""
    return hook_cls.create_from_json_file(json_config_path)
