"""Entry point of smdebug-xgboost (group ``smdebug.frameworks``, name ``xgboost``).

This module is imported during plugin discovery, even where XGBoost is not installed: it must
import nothing but smdebug's plugin API. smdebug checks ``FRAMEWORK_IMPORT`` and skips the plugin when
that module cannot be found. Worker detection looks XGBoost up in ``sys.modules``: its collective can
only be running if something else imported xgboost already.
"""

import sys

from smdebug.core.plugins import FrameworkInfo, WorkerInfo, hookimpl

FRAMEWORK_IMPORT = "xgboost"

FRAMEWORK = FrameworkInfo(
    name="xgboost",
    module="smdebug.xgboost",
    import_name=FRAMEWORK_IMPORT,
    # Strings, resolved on first use: the classes (and xgboost) are never imported here.
    hook_classes={"Hook": "smdebug.xgboost.hook:Hook"},
    default_collections=("metrics",),
    description="XGBoost: a training callback",
    zero_code="smdebug.xgboost.zero_code:attach",
)


@hookimpl
def smdebug_register_frameworks(register):
    register(FRAMEWORK)


@hookimpl
def smdebug_detect_worker(framework):
    """``worker_<rank>`` of a distributed XGBoost job (``xgboost.collective``: a tracker, Dask, Spark...)."""
    if framework not in (None, FRAMEWORK.name):
        return None
    collective = sys.modules.get("xgboost.collective")
    if collective is None:
        return None
    try:
        if not collective.is_distributed():
            return None
        return WorkerInfo(rank=collective.get_rank(), size=collective.get_world_size())
    except Exception:  # noqa: BLE001 - a communicator being torn down: answer as a single worker
        return None
