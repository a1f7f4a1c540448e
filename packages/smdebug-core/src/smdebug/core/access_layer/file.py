"""Legacy module (smdebug 1.0.x's ``smdebug.core.access_layer.file``): a local file of a run, written
under ``<path>.tmp`` and renamed when closed, through the project's LocalStorage. Not part of the
modern API; see smdebug.core.legacy and docs/compatibility.md."""

from __future__ import annotations

import os

from smdebug.core.access_layer._access import WRITE_MODES, _TSAccess  # noqa: F401 - WRITE_MODES re-exported
from smdebug.core.storage.base import as_path_str
from smdebug.core.storage.local import TMP_SUFFIX, LocalStorage

#: the suffix a file carries until it is complete
SMDEBUG_TEMP_PATH_SUFFIX = TMP_SUFFIX


def get_temp_path(file_path) -> str:
    """Where a file is written before it gets its name."""
    return as_path_str(file_path) + SMDEBUG_TEMP_PATH_SUFFIX


class TSAccessFile(_TSAccess):
    def __init__(self, path, mode):
        self.path = as_path_str(path)
        folder, name = os.path.split(os.path.abspath(self.path))
        os.makedirs(folder, exist_ok=True)
        super().__init__(LocalStorage(folder), name, mode)
