"""Legacy module (smdebug 1.0.x's ``smdebug.core.access_layer.file``): a local file of a run, written
under a private ``.tmp`` name and renamed when closed, through the project's LocalStorage. Not part of the
modern API; see smdebug.core.legacy and docs/compatibility.md."""

from __future__ import annotations

import os

from smdebug.core.access_layer._access import WRITE_MODES, _TSAccess  # noqa: F401 - WRITE_MODES re-exported
from smdebug.core.storage.base import as_path_str
from smdebug.core.storage.local import TMP_SUFFIX, LocalStorage
from smdebug.core.storage.safe_fs import private_tmp_name

#: the suffix a file carries until it is complete
SMDEBUG_TEMP_PATH_SUFFIX = TMP_SUFFIX


def get_temp_path(file_path) -> str:
    """Where this thread writes a file before it gets its name (1.0.x: ``<path>.tmp``, one name shared by every
    writer; see :func:`smdebug.core.storage.safe_fs.private_tmp_name`)."""
    return private_tmp_name(as_path_str(file_path))


class TSAccessFile(_TSAccess):
    def __init__(self, path, mode):
        self.path = as_path_str(path)
        folder, name = os.path.split(os.path.abspath(self.path))
        os.makedirs(folder, exist_ok=True)
        super().__init__(LocalStorage(folder), name, mode)
