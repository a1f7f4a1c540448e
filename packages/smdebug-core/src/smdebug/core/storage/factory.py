"""Which :class:`~smdebug.core.storage.base.Storage` serves a path: ``s3://bucket/prefix`` the S3 backend
(needs boto3, imported only then), anything else the local file system. The backends import the
interface in ``base``; only this module knows them all."""

from __future__ import annotations

import os
from typing import Optional, Tuple

from smdebug.core.storage.base import Storage, as_path_str, is_s3_path
from smdebug.exceptions import SMDebugNotImplementedError


def get_storage(path: str, cache_dir: Optional[str] = None) -> Storage:
    """Storage for a run at ``path`` (local directory or ``s3://bucket/prefix``).

    ``cache_dir``: keep downloaded index and event data of a remote run on local disk (ignored for
    local paths). ``path`` may be path-like (``pathlib.Path``, ``py.path.local``).
    """
    path = as_path_str(path)
    if is_s3_path(path):
        try:
            from smdebug.core.storage.s3 import S3Storage  # type: ignore[import-not-found]
        except ImportError:
            raise SMDebugNotImplementedError(
                f"Cannot open {path}: S3 storage is not available in this installation "
                "(install boto3: pip install 'smdebug-core[s3]')"
            ) from None
        return S3Storage(path, cache_dir=cache_dir)
    from smdebug.core.storage.local import LocalStorage

    return LocalStorage(os.path.expanduser(path.strip()))


def storage_for_file(path) -> Tuple[Storage, str]:
    """``(storage of the file's folder, the file's key in it)`` for a local path or ``s3://bucket/key``."""
    path = as_path_str(path).strip()
    if is_s3_path(path):
        folder, _, name = path.rstrip("/").rpartition("/")
        return get_storage(folder + "/"), name
    folder, name = os.path.split(os.path.abspath(os.path.expanduser(path)))
    return get_storage(folder), name
