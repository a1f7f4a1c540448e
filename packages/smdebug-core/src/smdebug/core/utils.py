"""Legacy module (smdebug 1.0.x's ``smdebug.core.utils``): the helpers scripts and notebooks imported
from it, as thin adapters over the project's own code (paths and worker names: ``smdebug.core.locations``
and ``smdebug.core.storage``; arrays: ``smdebug.core.tfevent.tensor_codec``). Not part of the modern
API; see smdebug.core.legacy and docs/compatibility.md.
"""

from __future__ import annotations

import bisect
import importlib.util
import json
import os
import re
import shutil
import socket
import urllib.parse
from enum import Enum
from functools import lru_cache
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from smdebug.core.config_constants import (
    CLAIM_FILENAME,
    CONFIG_FILE_PATH_ENV_STR,
    DEFAULT_SAGEMAKER_OUTDIR,
    DEFAULT_SAGEMAKER_TENSORBOARD_PATH,
    PAPERMILL_EXECUTION_ENV_VAR,
    PROFILER_REPORT_VERSION,
    PROFILER_TELEMETRY_URL,
    TENSORBOARD_CONFIG_FILE_PATH_ENV_STR,
)
from smdebug.core.error_handling_agent import ErrorHandlingAgent
from smdebug.core.locations import (
    COLLECTIONS_DIR,
    EVENTS_DIR,
    parse_collection_file_name,
    parse_step_file_name,
)
from smdebug.core.logger import get_logger
from smdebug.core.storage.base import as_path_str, parse_s3_path
from smdebug.core.storage.factory import get_storage
from smdebug.core.tfevent.tensor_codec import make_numpy_array  # noqa: F401 - re-exported
from smdebug.exceptions import SMDebugNotImplementedError, SMDebugRuntimeError, SMDebugValueError

logger = get_logger()
#: the decorator of smdebug.core.error_handling_agent, as 1.0.x exposed it here
error_handling_agent = ErrorHandlingAgent.get_error_handling_agent()


class FRAMEWORK(Enum):
    PYTORCH = "pytorch"
    TENSORFLOW = "tensorflow"
    MXNET = "mxnet"
    XGBOOST = "xgboost"


# (the framework's module, the smdebug plugin's module)
_FRAMEWORK_MODULES = {
    FRAMEWORK.PYTORCH: ("torch", "smdebug.pytorch"),
    FRAMEWORK.TENSORFLOW: ("tensorflow", "smdebug.tensorflow"),
    FRAMEWORK.MXNET: ("mxnet", "smdebug.mxnet"),
    FRAMEWORK.XGBOOST: ("xgboost", "smdebug.xgboost"),
}


@lru_cache(maxsize=None)
def is_framework_version_supported(framework_type: FRAMEWORK) -> bool:
    """True when the framework and its smdebug plugin are installed (each plugin declares the framework
    versions it supports in its package metadata, so an installed pair is a supported one)."""
    modules = _FRAMEWORK_MODULES.get(framework_type)
    if modules is None:
        raise SMDebugNotImplementedError(f"No such framework type {framework_type}")
    try:
        return all(importlib.util.find_spec(m) is not None for m in modules)
    except (ImportError, ValueError):
        return False


# ------------------------------------------------------------------------------------------------
# paths
# ------------------------------------------------------------------------------------------------
def is_s3(path) -> Tuple[bool, Optional[str], Optional[str]]:
    """``(True, bucket, key)`` for ``s3://bucket/key``, else ``(False, None, None)``."""
    path = as_path_str(path)
    if not path.startswith("s3://"):
        return False, None, None
    bucket, key = parse_s3_path(path)
    return True, bucket, key


def ensure_dir(file_path, is_file: bool = True) -> None:
    """Create the directory of ``file_path`` (or ``file_path`` itself with ``is_file=False``)."""
    file_path = as_path_str(file_path)
    directory = os.path.dirname(file_path) if is_file else file_path
    if directory:
        os.makedirs(directory, exist_ok=True)


def get_path_to_collections(directory) -> str:
    """``<directory>/collections/000000000/`` (with the trailing separator)."""
    return os.path.join(as_path_str(directory), COLLECTIONS_DIR, "")


def get_path_to_events_directory(path) -> str:
    return os.path.join(as_path_str(path), EVENTS_DIR, "")


def get_relative_event_file_path(path) -> str:
    """The last three components of an event file path (``events/<step>/<file>``)."""
    parts = Path(as_path_str(path)).parts
    if len(parts) < 3 or parts[-3] not in ("events", "tensorboard"):
        raise SMDebugRuntimeError(f"Invalid path: {path}, should contain either 'events' or 'tensorboard'")
    return os.path.join(*parts[-3:])


def get_immediate_subdirectories(a_dir) -> List[str]:
    return [e.name for e in os.scandir(as_path_str(a_dir)) if e.is_dir()]


def list_files_in_directory(directory, file_regex=None) -> List[str]:
    files = []
    for root, _, names in os.walk(as_path_str(directory)):
        files += [os.path.join(root, f) for f in names if file_regex is None or re.match(file_regex, f)]
    return files


def list_collection_files_in_directory(directory) -> List[str]:
    return list_files_in_directory(directory, file_regex=re.compile(r".*_?collections\.json$"))


def remove_file_if_exists(file_path) -> None:
    try:
        os.remove(as_path_str(file_path))
    except FileNotFoundError:
        pass


# ------------------------------------------------------------------------------------------------
# worker names in file names
# ------------------------------------------------------------------------------------------------
def parse_worker_name_from_file(filename) -> str:
    """The worker of an index or event file (``.../000000000012_worker_2.json`` -> ``worker_2``);
    IndexReaderException for anything else (a ``.tmp`` file, say)."""
    return parse_step_file_name(as_path_str(filename))[1]


def get_worker_name_from_collection_file(filename) -> str:
    """The worker of a collections file (``.../collections/000000000/worker_1_collections.json``)."""
    return parse_collection_file_name(as_path_str(filename))


def serialize_tf_device(device: str) -> str:
    """A TF device string as it appears in file names (``/device:GPU:0`` -> ``_device-GPU-0``)."""
    return device.replace("/", "_").replace(":", "-")


def deserialize_tf_device(device_name: str) -> str:
    """The inverse of :func:`serialize_tf_device`, for a name known to be a serialized device. (Worker
    names read from files go through ``parse_worker_name_from_file``, which only turns names shaped
    like a device back, so ``my_worker-1`` stays as it is.)"""
    return device_name.replace("_", "/").replace("-", ":")


def get_tb_worker() -> str:
    """A name for a TensorBoard writer that no other process uses."""
    return f"{os.getpid()}_{socket.gethostname()}"


def get_distributed_worker() -> Optional[int]:
    """This process's rank in a distributed job, or None when it is not one of several workers."""
    from smdebug.core.plugins import manager

    info = manager.detect_worker()
    return info.rank if info.size > 1 else None


def get_node_id() -> str:
    rank = get_distributed_worker()
    return f"{rank if rank is not None else os.getpid()}-{socket.gethostname()}".replace("_", "-")


def is_first_process(path, is_dir: bool = True) -> bool:
    """True for the one process that claims ``path`` first (a ``claim.smd`` file in the directory, or the
    file ``path`` itself with ``is_dir=False``), created atomically. Always True for S3 paths (1.0.x
    never claimed S3 runs this way; hooks claim them with a conditional PUT)."""
    path = as_path_str(path)
    if path.startswith("s3://"):
        return True
    folder, name = (path, CLAIM_FILENAME) if is_dir else os.path.split(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    return get_storage(folder).create_exclusive(name, str(os.getpid()).encode())


def remove_claim_file(path) -> None:
    path = as_path_str(path)
    if not path.startswith("s3://"):
        remove_file_if_exists(os.path.join(path, CLAIM_FILENAME))


# ------------------------------------------------------------------------------------------------
# small helpers
# ------------------------------------------------------------------------------------------------
def match_inc(tname: str, include) -> bool:
    """True if any regex of ``include`` matches anywhere in ``tname``."""
    return any(re.search(inc, tname) for inc in include)


def split(comma_separated_string: str) -> List[str]:
    """``"foo, bar,b az"`` -> ``["foo", "bar", "b az"]``."""
    return [x.strip() for x in comma_separated_string.split(",")]


def merge_two_dicts(x: Dict, y: Dict) -> Dict:
    """``{**x, **y}``: y's values win."""
    return {**x, **y}


def flatten(lis) -> list:
    out = []
    for item in lis:
        out.extend(flatten(item) if isinstance(item, list) else [item])
    return out


def load_json_as_dict(s):
    if s is None or s == str(None):
        return None
    if isinstance(s, str):
        return json.loads(s)
    if isinstance(s, dict):
        return s
    raise SMDebugValueError("parameter must be either str or dict")


def index(sorted_list, elem) -> int:
    i = bisect.bisect_left(sorted_list, elem)
    if i != len(sorted_list) and sorted_list[i] == elem:
        return i
    raise SMDebugValueError(f"Could not find {elem} in the list")


def get_region() -> Optional[str]:
    region = os.environ.get("AWS_REGION")
    return region if region and region.strip() else None


def step_in_range(range_steps, step) -> bool:
    begin, end = range_steps
    return (begin is None or int(step) >= int(begin)) and (end is None or int(step) < int(end))


def size_and_shape(t):
    if isinstance(t, (bytes, str)):
        return len(t), [len(t)]
    return t.nbytes, t.shape


def validate_custom_tensor_value(tensor_value, make_numpy_fn) -> bool:
    try:
        make_numpy_fn(tensor_value)
    except TypeError:
        return False
    return True


def check_smmodelparallel_training() -> bool:
    """True when SageMaker's model-parallel library drives this job (``SM_HPS`` names partitions)."""
    try:
        params = json.loads(os.environ.get("SM_HPS") or "{}").get("mp_parameters") or {}
    except (ValueError, AttributeError, RecursionError):  # (RecursionError: nesting deeper than json parses)
        return False
    return isinstance(params, dict) and ("partitions" in params or "pipeline_parallel_degree" in params)


# ------------------------------------------------------------------------------------------------
# the profiler report's telemetry (called by SageMaker's profiler report notebooks)
# ------------------------------------------------------------------------------------------------
def get_aws_region_from_processing_job_arn(processing_job_arn: str) -> str:
    return processing_job_arn.split(":")[3]


def _prepare_telemetry_url(processing_job_arn: str) -> str:
    region = get_aws_region_from_processing_job_arn(processing_job_arn)
    query = urllib.parse.urlencode({"x-artifact-id": PROFILER_REPORT_VERSION, "x-arn": processing_job_arn},
                                   safe=":/+")
    return f"{PROFILER_TELEMETRY_URL.format(region=region)}/?{query}"


def setup_profiler_report(processing_job_arn, opt_out: bool = False) -> None:
    """The profiler report's usage ping: one GET of the report's telemetry URL (an S3 endpoint of the
    job's region), unless ``opt_out`` or ``PAPERMILL_EXECUTION`` is set (reports run by papermill). Only
    the report notebooks call this; failures to connect are ignored, and without ``requests`` installed
    nothing is sent."""
    if opt_out or not processing_job_arn or os.getenv(PAPERMILL_EXECUTION_ENV_VAR):
        return
    try:
        import requests
    except ImportError:
        return
    try:
        requests.get(_prepare_telemetry_url(processing_job_arn), timeout=5)
    except requests.exceptions.RequestException:
        pass


# ------------------------------------------------------------------------------------------------
# test helpers 1.0.x shipped here
# ------------------------------------------------------------------------------------------------
class SagemakerSimulator:
    """Pretend to be inside a SageMaker job: writes a hook configuration (``json_file_contents``) and a
    TensorBoard configuration, and sets the environment variables SageMaker sets; undone on exit."""

    def __init__(self, json_config_path="/tmp/zcc_config.json", tensorboard_dir="/tmp/tensorboard",
                 training_job_name="sm_job", json_file_contents="{}", cleanup=True):
        self.out_dir = DEFAULT_SAGEMAKER_OUTDIR
        self.json_config_path = json_config_path
        self.tb_json_config_path = DEFAULT_SAGEMAKER_TENSORBOARD_PATH
        self.tensorboard_dir = tensorboard_dir
        self.training_job_name = training_job_name
        self.json_file_contents = json_file_contents
        self.cleanup = cleanup

    def __enter__(self):
        if self.cleanup:
            shutil.rmtree(self.out_dir, ignore_errors=True)
        shutil.rmtree(self.json_config_path, ignore_errors=True)
        tb_parent = os.path.dirname(self.tb_json_config_path)
        shutil.rmtree(tb_parent, ignore_errors=True)
        os.environ[CONFIG_FILE_PATH_ENV_STR] = self.json_config_path
        os.environ[TENSORBOARD_CONFIG_FILE_PATH_ENV_STR] = self.tb_json_config_path
        os.environ["TRAINING_JOB_NAME"] = self.training_job_name
        with open(self.json_config_path, "w") as f:
            f.write(self.json_file_contents)
        os.makedirs(tb_parent, exist_ok=True)
        with open(self.tb_json_config_path, "w") as f:
            json.dump({"LocalPath": self.tensorboard_dir}, f)
        return self

    def __exit__(self, *args):
        if self.cleanup:
            remove_file_if_exists(self.json_config_path)
            remove_file_if_exists(self.tb_json_config_path)
            for var in (CONFIG_FILE_PATH_ENV_STR, "TRAINING_JOB_NAME", TENSORBOARD_CONFIG_FILE_PATH_ENV_STR):
                os.environ.pop(var, None)


class ScriptSimulator:
    """A fresh ``out_dir`` (and ``tensorboard_dir``) for the block, removed on exit."""

    def __init__(self, out_dir="/tmp/test", tensorboard_dir=None):
        self.out_dir = out_dir
        self.tensorboard_dir = tensorboard_dir

    def __enter__(self):
        self._clean()
        return self

    def __exit__(self, *args):
        self._clean()

    def _clean(self):
        shutil.rmtree(self.out_dir, ignore_errors=True)
        if self.tensorboard_dir:
            shutil.rmtree(self.tensorboard_dir, ignore_errors=True)
