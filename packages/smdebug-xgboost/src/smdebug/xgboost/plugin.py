"""Entry point of smdebug-xgboost (group ``smdebug.frameworks``, name ``xgboost``).

This module is imported during plugin discovery, even where XGBoost is not installed: it must
import nothing but smdebug's plugin API. smdebug checks ``FRAMEWORK_IMPORT`` and skips the plugin when
that module cannot be found.
"""

from smdebug.core.plugins import FrameworkInfo, hookimpl

FRAMEWORK_IMPORT = "xgboost"

FRAMEWORK = FrameworkInfo(
    name="xgboost",
    module="smdebug.xgboost",
    import_name=FRAMEWORK_IMPORT,
    # Strings, resolved on first use: the classes (and xgboost) are never imported here.
    hook_classes={"Hook": "smdebug.xgboost.hook:Hook"},
    default_collections=("metrics",),
    description="XGBoost: a training callback",
)


@hookimpl
def smdebug_register_frameworks(register):
    register(FRAMEWORK)
