"""Legacy package (smdebug 1.0.x's ``smdebug.core.access_layer``): file access of runs, as adapters over
``smdebug.core.storage``. Not part of the modern API; see smdebug.core.legacy and docs/compatibility.md.
The S3 classes load on first use (they need boto3)."""

from smdebug.core.access_layer.file import TSAccessFile
from smdebug.core.lazy import lazy_exports
from smdebug.core.access_layer.utils import (
    DEFAULT_GRACETIME_FOR_RULE_STOP_SEC,
    ENV_RULE_STOP_SIGNAL_FILENAME,
    check_dir_exists,
    has_training_ended,
    is_rule_signalled_gracetime_passed,
    training_has_ended,
)

__all__ = ["TSAccessFile", "TSAccessS3", "DEFAULT_GRACETIME_FOR_RULE_STOP_SEC", "ENV_RULE_STOP_SIGNAL_FILENAME",
           "check_dir_exists", "has_training_ended", "is_rule_signalled_gracetime_passed", "training_has_ended"]


__getattr__, __dir__ = lazy_exports(__name__, {"TSAccessS3": "smdebug.core.access_layer.s3"})  # needs boto3
