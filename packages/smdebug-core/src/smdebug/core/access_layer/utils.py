"""Helpers kept at the module path the original used (``smdebug.core.access_layer.utils``)."""

from smdebug.core.locations import END_OF_JOB_FILE
from smdebug.core.storage.base import get_storage


def has_training_ended(trial_prefix: str) -> bool:
    """True if the run at ``trial_prefix`` (local or s3://) has its end marker."""
    return get_storage(trial_prefix).exists(END_OF_JOB_FILE)


def training_has_ended(trial_prefix: str) -> None:
    """Write the end marker of a run (hooks do this at close)."""
    get_storage(trial_prefix).write_atomic(END_OF_JOB_FILE, b"")
