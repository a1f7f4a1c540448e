"""Run-level helpers at the module path the original used (``smdebug.core.access_layer.utils``): the
end-of-training marker, whether a directory holds a finished run, and SageMaker's rule stop signal.
Local paths, ``s3://`` paths and path-like objects (``pathlib.Path``, ``py.path.local``) all work."""

from __future__ import annotations

import os
import time

from smdebug.core.locations import END_OF_JOB_FILE
from smdebug.core.logger import get_logger
from smdebug.core.storage.base import as_path_str, is_s3_path
from smdebug.core.storage.factory import get_storage, storage_for_file

END_OF_JOB_FILENAME = END_OF_JOB_FILE
#: SageMaker names the rule stop signal file (relative to the run) in this environment variable
ENV_RULE_STOP_SIGNAL_FILENAME = "SAGEMAKER_ENV_RULE_STOP_SIGNAL_FILE"
DEFAULT_GRACETIME_FOR_RULE_STOP_SEC = 60

logger = get_logger()


def has_training_ended(trial_prefix) -> bool:
    """True if the run at ``trial_prefix`` has its end marker."""
    return get_storage(trial_prefix).exists(END_OF_JOB_FILE)


def training_has_ended(trial_prefix) -> None:
    """Write the end marker of a run (hooks do this at close). Not on SageMaker, which writes it."""
    if "TRAINING_JOB_NAME" in os.environ:
        logger.debug("Not writing the end marker of %s: SageMaker writes it", trial_prefix)
        return
    get_storage(trial_prefix).write_atomic(END_OF_JOB_FILE, b"")


def file_exists(file_path) -> bool:
    storage, name = storage_for_file(file_path)
    return storage.exists(name)


def check_dir_exists(path) -> bool:
    """True if ``path`` holds a run that has ended (so a new run must not write there)."""
    path = as_path_str(path).strip()
    if not is_s3_path(path) and not os.path.exists(os.path.expanduser(path)):
        return False
    return has_training_ended(path)


def delete_s3_prefixes(bucket: str, keys) -> None:
    """Delete every object under each prefix of ``keys`` in ``bucket``."""
    from smdebug.core.access_layer.s3handler import DeleteRequest, S3Handler

    S3Handler.delete_prefixes([DeleteRequest(bucket, key) for key in ([keys] if isinstance(keys, str) else keys)])


def _rule_stop_grace_seconds() -> float:
    # (a finite number of seconds, not below 0: "nan" or "inf" made the grace never pass, with no word)
    from smdebug.core.env_settings import env_float

    return env_float("rule_stop_grace_time_secs", DEFAULT_GRACETIME_FOR_RULE_STOP_SEC, minimum=0)


def is_rule_signalled_gracetime_passed(trial_prefix) -> bool:
    """SageMaker's rule stop signal: a file (named by ``SAGEMAKER_ENV_RULE_STOP_SIGNAL_FILE``, relative to
    the run) holding the time, in seconds since the epoch, at which a rule asked the job to stop. True
    once ``rule_stop_grace_time_secs`` (60) have passed since then, or if the file cannot be read as such
    a time (stop rather than train on); False without the variable or the file."""
    name = os.environ.get(ENV_RULE_STOP_SIGNAL_FILENAME)
    if not name:
        return False
    storage = get_storage(trial_prefix)
    try:
        raw = storage.read(name)
    except FileNotFoundError:
        return False
    except OSError as e:
        logger.info("Could not read the rule stop signal %s (%s); stopping", storage.full_path(name), e)
        return True
    try:
        signalled_at = int(raw.decode("utf-8").strip())
        # (a number of seconds past what a float holds is no time: adding the grace raised OverflowError)
        return time.time() > float(signalled_at) + _rule_stop_grace_seconds()
    except (UnicodeDecodeError, ValueError, OverflowError):
        logger.info("The rule stop signal %s does not hold a time (%r); stopping", storage.full_path(name), raw[:100])
        return True
