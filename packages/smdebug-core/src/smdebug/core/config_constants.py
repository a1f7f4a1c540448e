"""Legacy module (smdebug 1.0.x's ``smdebug.core.config_constants``): the constants scripts imported
from it, with the values the project uses (the same strings as 1.0.x). Not part of the modern API;
see smdebug.core.legacy and docs/compatibility.md."""

from smdebug.core.json_config import (
    CONFIG_FILE_PATH_ENV as CONFIG_FILE_PATH_ENV_STR,
    DEFAULT_CONFIG_FILE_PATH,
    DEFAULT_LOCAL_PATH as DEFAULT_SAGEMAKER_OUTDIR,
    DEFAULT_TENSORBOARD_CONFIG_FILE_PATH as DEFAULT_SAGEMAKER_TENSORBOARD_PATH,
    TENSORBOARD_CONFIG_FILE_PATH_ENV as TENSORBOARD_CONFIG_FILE_PATH_ENV_STR,
)
from smdebug.core.locations import (
    CLAIM_FILE as CLAIM_FILENAME,
    DEFAULT_COLLECTIONS_FILE_NAME,
    DEFAULT_WORKER_NAME,
    END_OF_JOB_FILE as END_OF_JOB_FILENAME,
)
from smdebug.core.state_store import DEFAULT_CHECKPOINT_CONFIG_FILE, METADATA_FILENAME

# keys of the SageMaker hook configuration (debughookconfig.json)
EXPORT_TENSORBOARD_KEY = "export_tensorboard"
TENSORBOARD_DIR_KEY = "tensorboard_dir"
CONFIG_REDUCTION_CONFIGS_KEY = "reduction_configs"
CONFIG_SAVE_CONFIGS_KEY = "save_configs"
CONFIG_OUTDIR_KEY = "LocalPath"
CONFIG_HOOK_PARAMS_KEY = "HookParameters"
CONFIG_COLLECTION_CONFIG_KEY = "CollectionConfigurations"
CONFIG_COLLECTION_NAME_KEY = "CollectionName"
CONFIG_COLLECTION_PARAMS_KEY = "CollectionParameters"
CONFIG_DRYRUN_KEY = "dry_run"
CONFIG_RDN_CFG_KEY = "reduction_config"
CONFIG_INCLUDE_REGEX_KEY = "include_regex"
CONFIG_INCLUDE_WORKERS_KEY = "include_workers"
CONFIG_SAVE_ALL_KEY = "save_all"

DEFAULT_SAGEMAKER_METRICS_PATH = "SAGEMAKER_METRICS_DIRECTORY"  # the environment variable naming it
CHECKPOINT_CONFIG_FILE_PATH_ENV_VAR = "CHECKPOINT_CONFIG_FILE_PATH"
CHECKPOINT_DIR_KEY = "LocalPath"
METADATA_FILENAME_S3_UPLOADED = "metadata.json.sagemaker-uploaded"
LATEST_GLOBAL_STEP_SEEN = "latest-global-step-seen"
LATEST_GLOBAL_STEP_SAVED = "latest-global-step-saved"
LATEST_MODE_STEP = "latest-mode-step"
TRAINING_RUN = "training-run"
LOG_DUPLICATION_THRESHOLD = 3

# environment variables a trial reads (see smdebug.trials.trial.Trial)
INCOMPLETE_STEP_WAIT_WINDOW_KEY = "SMDEBUG_INCOMPLETE_STEP_WAIT_WINDOW"
INCOMPLETE_STEP_WAIT_WINDOW_DEFAULT = 1000
MISSING_EVENT_FILE_RETRY_LIMIT_KEY = "SMDEBUG_MISSING_EVENT_FILE_RETRY_LIMIT"
MISSING_EVENT_FILE_RETRY_LIMIT = 100
TRAINING_END_DELAY_REFRESH_KEY = "SMDEBUG_TRAINING_END_DELAY_REFRESH"
TRAINING_END_DELAY_REFRESH_DEFAULT = 1

# the profiler report's telemetry (see smdebug.core.utils.setup_profiler_report)
PAPERMILL_EXECUTION_ENV_VAR = "PAPERMILL_EXECUTION"
PROFILER_REPORT_VERSION = "profiler_report_v1"
PROFILER_TELEMETRY_URL = "https://sm-profiler-report-{region}.s3.{region}.amazonaws.com"

DEFAULT_SAVED_COLLECTIONS = ["losses"]
