"""Legacy module (smdebug 1.0.x's ``smdebug.core.hook_utils``): the checks a hook makes of its output
paths. Not part of the modern API; see smdebug.core.legacy and docs/compatibility.md."""

from __future__ import annotations

import os
from typing import Optional

from smdebug.core.access_layer.utils import check_dir_exists
from smdebug.core.storage.base import as_path_str, is_s3_path
from smdebug.exceptions import SMDebugRuntimeError


def verify_and_get_out_dir(out_dir) -> str:
    """``out_dir`` (``~`` expanded), or SMDebugRuntimeError if it holds a finished run: a new run must not
    mix its data with that one's."""
    if out_dir is None:
        raise SMDebugRuntimeError("out_dir is a required argument")
    out_dir = as_path_str(out_dir)
    if not is_s3_path(out_dir):
        out_dir = os.path.expanduser(out_dir)
    if check_dir_exists(out_dir):
        raise SMDebugRuntimeError(
            f"The path {out_dir} already holds a finished run. Please provide a directory path that does not "
            "already exist.")
    return out_dir


def get_tensorboard_dir(export_tensorboard: bool, tensorboard_dir, out_dir) -> Optional[str]:
    """Where TensorBoard files go: ``tensorboard_dir`` if given (even without ``export_tensorboard``),
    else ``<out_dir>/tensorboard`` with ``export_tensorboard``, else nowhere."""
    if tensorboard_dir is not None:
        return os.path.expanduser(as_path_str(tensorboard_dir))
    if export_tensorboard:
        return os.path.join(as_path_str(out_dir), "tensorboard")
    return None
