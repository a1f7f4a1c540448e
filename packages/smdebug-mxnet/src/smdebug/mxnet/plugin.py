"""Entry point of smdebug-mxnet (group ``smdebug.frameworks``, name ``mxnet``).

This module is imported during plugin discovery, even where MXNet is not installed: it must
import nothing but smdebug's plugin API. smdebug checks ``FRAMEWORK_IMPORT`` and skips the plugin when
that module cannot be found.
"""

from smdebug.core.plugins import FrameworkInfo, hookimpl

FRAMEWORK_IMPORT = "mxnet"

FRAMEWORK = FrameworkInfo(
    name="mxnet",
    module="smdebug.mxnet",
    import_name=FRAMEWORK_IMPORT,
    # Strings, resolved on first use: the classes (and mxnet) are never imported here.
    hook_classes={"Hook": "smdebug.mxnet.hook:Hook"},
    default_collections=("losses",),
    description="MXNet Gluon: forward hooks on gluon.Block",
)


@hookimpl
def smdebug_register_frameworks(register):
    register(FRAMEWORK)
