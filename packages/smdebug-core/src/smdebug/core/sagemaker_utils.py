"""Legacy module (smdebug 1.0.x's ``smdebug.core.sagemaker_utils``). Not part of the modern API; see
smdebug.core.legacy and docs/compatibility.md."""

import os


def is_sagemaker_job() -> bool:
    """True inside a SageMaker training job (SageMaker always sets ``TRAINING_JOB_NAME``); the hooks
    then leave the run's end marker to SageMaker."""
    return "TRAINING_JOB_NAME" in os.environ
