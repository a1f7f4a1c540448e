"""Is there an smdebug run at a path? Asked once when a trial opens a path with no collection file yet.

A hook's first write leaves one of these behind (its claim, then collections, index files and events;
at the end the end marker). A path with none of them is not a run, or not yet one: the trial then fails
at once instead of waiting for files that may never come, unless the caller asked to wait.
"""

from __future__ import annotations

import os
from typing import Optional

from smdebug.core.locations import (
    CLAIM_FILE,
    COLLECTIONS_DIR,
    END_OF_JOB_FILE,
    EVENTS_DIR,
    INDEX_DIR,
    WORKERS_ENDED_DIR,
)
from smdebug.core.storage.base import Storage, is_s3_path

#: files and folders a hook writes into its run (any one of them: a run, or one starting)
RUN_FILES = (CLAIM_FILE, END_OF_JOB_FILE)
RUN_FOLDERS = (COLLECTIONS_DIR.split("/")[0], INDEX_DIR, EVENTS_DIR, WORKERS_ENDED_DIR)


def missing_run_reason(storage: Storage, path: str) -> Optional[str]:
    """Why ``path`` holds no smdebug run, or None when something a hook writes is there.

    Local paths: one ``stat`` and one directory listing. S3: one request per marker until one is found
    (at most six small requests, only for a prefix that is not a run).
    """
    if not is_s3_path(path):
        local = os.path.abspath(os.path.expanduser(path.strip()))
        if not os.path.exists(local):
            return "the directory does not exist"
        if not os.path.isdir(local):
            return "it is a file, not a run directory"
        try:
            names = set(os.listdir(local))
        except OSError as e:
            return f"the directory cannot be listed ({e.strerror or e})"
        if names & (set(RUN_FILES) | set(RUN_FOLDERS)):
            return None
        return "the directory is empty" if not names else _no_marker_text()
    for folder in RUN_FOLDERS:
        if storage.has_folder(folder):
            return None
    for name in RUN_FILES:
        if storage.exists(name):
            return None
    return "no object under this prefix is one smdebug writes (" + _marker_list() + ")"


def _marker_list() -> str:
    return ", ".join(f"{f}/" for f in RUN_FOLDERS[:3]) + f" or {END_OF_JOB_FILE}"


def _no_marker_text() -> str:
    return f"the directory holds none of the files a hook writes ({_marker_list()})"

