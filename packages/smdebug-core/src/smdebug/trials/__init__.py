"""Opening runs for analysis: ``create_trial(path)``."""

from __future__ import annotations

import os

from smdebug.core.names import printable
from smdebug.core.storage.base import is_s3_path
from smdebug.exceptions import SMDebugTypeError, SMDebugValueError
from smdebug.trials.trial import LocalTrial, S3Trial, Trial

__all__ = ["create_trial", "Trial", "LocalTrial", "S3Trial"]


def create_trial(path=None, name=None, profiler=False, output_dir="/opt/ml/processing/outputs/", *, out_dir=None,
                 **kwargs) -> Trial:
    """Open the run at ``path`` (a local directory or ``s3://bucket/prefix``).

    ``out_dir=`` is accepted for ``path`` (the hooks' name for the same directory, which smdebug's own
    documents have long used here). A path that holds no run raises
    :class:`~smdebug.exceptions.NoSmdebugRun` at once; to wait for a run that is about to start, pass
    ``wait_for_collections=SECONDS`` (``float('inf')``: no limit).

    Keyword arguments go to :class:`~smdebug.trials.trial.Trial`: ``range_steps``, ``cache``,
    ``wait_for_collections``, ``skip_damaged``, ``poll_interval``, and for S3 runs ``cache_dir`` (a
    local directory that keeps downloaded index and tensor data for the next analysis).
    """
    if out_dir is not None:
        if path is not None:
            raise SMDebugTypeError("create_trial takes the run's path once: give path or out_dir=, not both")
        path = out_dir
    if path is None:
        raise SMDebugTypeError("create_trial() needs the run's path: create_trial('/path/to/run') (or out_dir=...)")
    if profiler:
        raise NotImplementedError("Profiler trials are not part of this smdebug")
    if not isinstance(path, (str, os.PathLike)):
        raise SMDebugTypeError(f"create_trial needs a path string, got {type(path).__name__}")
    if name is not None and not isinstance(name, str):  # (a trial's name is shown and compared as text)
        raise SMDebugTypeError(f"create_trial: name must be a string, got {type(name).__name__}")
    path = os.fsdecode(os.fspath(path)).strip()
    if not path:  # (os.path would read "" as the current directory, which nobody meant)
        raise SMDebugValueError("create_trial: the run's path is empty (give '.' for the current directory)")
    if "\x00" in path:  # (every file call would raise ValueError: embedded null byte)
        raise SMDebugValueError(f"create_trial: the path {path!r} contains a NUL character")
    if is_s3_path(path):
        if not path.endswith("/"):
            path += "/"
        name = name or printable(os.path.basename(path.rstrip("/")))
        return S3Trial(name, path, **kwargs)
    path = os.path.expanduser(path)
    name = name or printable(os.path.basename(os.path.normpath(path)))  # (a name to show: always text)
    return LocalTrial(name, path, **kwargs)
