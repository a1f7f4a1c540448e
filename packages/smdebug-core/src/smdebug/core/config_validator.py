"""Legacy module (smdebug 1.0.x's ``smdebug.core.config_validator``): whether a hook may be created in
this training environment (``USE_SMDEBUG`` not false, the framework and its smdebug plugin installed).
Not part of the modern API; see smdebug.core.legacy and docs/compatibility.md."""

from __future__ import annotations

import os

from smdebug.core.logger import get_logger
from smdebug.core.singleton import smdebug_enabled
from smdebug.core.utils import FRAMEWORK, is_framework_version_supported

logger = get_logger()

SupportedFrameworks = [FRAMEWORK.PYTORCH, FRAMEWORK.TENSORFLOW, FRAMEWORK.MXNET, FRAMEWORK.XGBOOST]
_config_validator = None


class ConfigValidator:
    def __init__(self, framework_type: FRAMEWORK):
        self._create_hook = smdebug_enabled()
        self._framework_type = framework_type

    def validate_training_job(self) -> bool:
        """True if a hook may be created; once False (unsupported framework), ``USE_SMDEBUG`` is set to
        False so every integration in the process backs off."""
        if not self._create_hook:
            return False
        if self._framework_type in SupportedFrameworks and is_framework_version_supported(self._framework_type) is False:
            self._create_hook = False
            logger.warning("Setting the USE_SMDEBUG flag to False")
            os.environ["USE_SMDEBUG"] = "False"
        return self._create_hook


def get_config_validator(framework: FRAMEWORK) -> ConfigValidator:
    global _config_validator
    if _config_validator is None:
        _config_validator = ConfigValidator(framework)
    return _config_validator


def reset_config_validator() -> None:
    global _config_validator
    _config_validator = None
