"""Opening runs for analysis: ``create_trial(path)``."""

from __future__ import annotations

import os

from smdebug.core.storage.base import is_s3_path
from smdebug.trials.trial import LocalTrial, S3Trial, Trial

__all__ = ["create_trial", "Trial", "LocalTrial", "S3Trial"]


def create_trial(path, name=None, profiler=False, output_dir="/opt/ml/processing/outputs/", **kwargs) -> Trial:
    """Open the run at ``path`` (a local directory or ``s3://bucket/prefix``).

    Keyword arguments go to :class:`~smdebug.trials.trial.Trial`: ``range_steps``, ``cache``,
    ``wait_for_collections``, ``skip_damaged``, ``poll_interval``, and for S3 runs ``cache_dir`` (a
    local directory that keeps downloaded index and tensor data for the next analysis).
    """
    if profiler:
        raise NotImplementedError("Profiler trials are not part of this smdebug")
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"create_trial needs a path string, got {type(path).__name__}")
    path = os.fspath(path).strip()
    if is_s3_path(path):
        if not path.endswith("/"):
            path += "/"
        name = name or os.path.basename(path.rstrip("/"))
        return S3Trial(name, path, **kwargs)
    path = os.path.expanduser(path)
    name = name or os.path.basename(os.path.normpath(path))
    return LocalTrial(name, path, **kwargs)
