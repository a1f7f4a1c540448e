"""Entry point of smdebug-torch (group ``smdebug.frameworks``, name ``pytorch``).

This module is imported during plugin discovery, even where PyTorch is not installed: it must import
nothing but smdebug's plugin API. smdebug checks ``FRAMEWORK_IMPORT`` and skips the plugin when that
module cannot be found. The hooks below look torch up in ``sys.modules``: a value can only be a torch
tensor, and torch.distributed can only be initialised, if something else imported torch already.
"""

import sys

from smdebug.core.plugins import FrameworkInfo, WorkerInfo, hookimpl
from smdebug.exceptions import SMDebugTypeError

FRAMEWORK_IMPORT = "torch"

FRAMEWORK = FrameworkInfo(
    name="pytorch",
    module="smdebug.pytorch",
    import_name=FRAMEWORK_IMPORT,
    # Strings, resolved on first use: the classes (and torch) are never imported here.
    hook_classes={"Hook": "smdebug.pytorch.hook:Hook"},
    default_collections=("losses",),
    description="PyTorch: forward/backward hooks on torch.nn.Module",
    zero_code="smdebug.pytorch.zero_code:attach",
)


@hookimpl
def smdebug_register_frameworks(register):
    register(FRAMEWORK)


@hookimpl
def smdebug_tensor_to_numpy(value):
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(value, torch.Tensor):
        return None
    tensor = value.detach()
    if tensor.is_meta:
        raise SMDebugTypeError("a tensor on the 'meta' device has a shape but no values")
    if tensor.is_quantized:  # (numpy has no quantized dtypes: the values it stands for, as floats)
        tensor = tensor.dequantize()
    if tensor.layout != torch.strided:  # sparse tensors
        tensor = tensor.to_dense()
    tensor = tensor.cpu().resolve_conj().resolve_neg()
    try:
        return tensor.numpy()
    except TypeError:  # dtypes numpy lacks (bfloat16, float8...): widen to float32
        return tensor.float().numpy()


@hookimpl
def smdebug_detect_worker(framework):
    """torch.distributed if initialised, else Horovod for PyTorch if ``hvd.init()`` was called."""
    if framework not in (None, FRAMEWORK.name):
        return None
    torch = sys.modules.get("torch")
    dist = getattr(torch, "distributed", None)
    if dist is not None and dist.is_available() and dist.is_initialized():
        return WorkerInfo(rank=dist.get_rank(), size=dist.get_world_size())
    hvd = sys.modules.get("horovod.torch")
    if hvd is not None and getattr(hvd, "is_initialized", lambda: False)():
        return WorkerInfo(rank=hvd.rank(), size=hvd.size())
    return None
