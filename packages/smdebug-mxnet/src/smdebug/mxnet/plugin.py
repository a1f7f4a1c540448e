"""Entry point of smdebug-mxnet (group ``smdebug.frameworks``, name ``mxnet``).

This module is imported during plugin discovery, even where MXNet is not installed: it must import
nothing but smdebug's plugin API. smdebug checks ``FRAMEWORK_IMPORT`` and skips the plugin when that
module cannot be found. The hooks below look mxnet (and Horovod) up in ``sys.modules``: a value can
only be an MXNet array, and Horovod can only be running, if something else imported them already.
"""

import sys

from smdebug.core.plugins import FrameworkInfo, WorkerInfo, hookimpl

FRAMEWORK_IMPORT = "mxnet"

FRAMEWORK = FrameworkInfo(
    name="mxnet",
    module="smdebug.mxnet",
    import_name=FRAMEWORK_IMPORT,
    # Strings, resolved on first use: the classes (and mxnet) are never imported here.
    hook_classes={"Hook": "smdebug.mxnet.hook:Hook"},
    default_collections=("losses",),
    description="MXNet Gluon: forward hooks on gluon.Block, gradients from Parameter.grad()",
    zero_code="smdebug.mxnet.zero_code:attach",
)


@hookimpl
def smdebug_register_frameworks(register):
    register(FRAMEWORK)


@hookimpl
def smdebug_tensor_to_numpy(value):
    mx = sys.modules.get("mxnet")
    nd = getattr(mx, "nd", None)
    if nd is None or not isinstance(value, nd.NDArray):  # mx.np.ndarray is an NDArray subclass
        return None
    if value.stype != "default":  # row_sparse / csr
        value = value.tostype("default")
    out = value.asnumpy()
    if out.dtype.kind == "V":  # bfloat16 comes back as a structured uint16 type: widen to float32
        out = value.astype("float32").asnumpy()
    return out


@hookimpl
def smdebug_detect_worker(framework):
    if framework not in (None, FRAMEWORK.name):
        return None
    hvd = sys.modules.get("horovod.mxnet")
    if hvd is None:
        return None
    try:
        initialized = getattr(hvd, "is_initialized", None)
        if initialized is not None and not initialized():
            return None
        return WorkerInfo(rank=int(hvd.rank()), size=int(hvd.size()))
    except ValueError:  # Horovod imported but hvd.init() not called
        return None
