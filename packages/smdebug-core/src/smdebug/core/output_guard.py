"""Where a command's output must never go: into a run's own files, on local disk or on S3.

``smdebug rules run --output``, ``smdebug export tensorboard`` and the like write where the user says. A
path inside a run's ``index/``, ``events/``, ``collections/`` or ``workers_ended/`` folder, or at its
end-of-job, claim or stop file, would replace what the run's hook wrote (rule results written over
``index/.../000000000000_worker_0.json`` left step 0 unreadable). Local paths are checked by
:func:`smdebug.core.locations.run_part_at`; S3 keys are names, not paths, so a prefix holds a run when
anything lies under its ``collections/`` or ``index/`` folder.
"""

from __future__ import annotations

from typing import Optional, Tuple

from smdebug.core.locations import COLLECTIONS_DIR, INDEX_DIR, RUN_FOLDERS, _RUN_FILES, run_output_refusal, run_part_at
from smdebug.core.storage.base import is_s3_path, parse_s3_path


def run_part_of(path: str) -> Optional[Tuple[str, str]]:
    """``(run, part)`` when ``path`` (local or ``s3://``) is, or is inside, a part of a run's own layout
    (see :func:`~smdebug.core.locations.run_part_at`), else None."""
    if not is_s3_path(path):
        return run_part_at(path)
    from smdebug.core.storage.factory import get_storage

    bucket, key = parse_s3_path(path)
    parts = key.split("/")
    for i, part in enumerate(parts):
        if part not in RUN_FOLDERS and part not in _RUN_FILES:
            continue
        run = f"s3://{bucket}/" + "/".join(parts[:i])
        storage = get_storage(run)
        # two cheap listings (one key each) per component that names a run part, never the whole run
        if storage.has_folder(COLLECTIONS_DIR) or storage.has_folder(INDEX_DIR):
            return run.rstrip("/"), part
    return None


def is_event_file_key(path: str) -> bool:
    """A TensorBoard or run event file's name: training data that a page or a picture would replace."""
    return ".tfevents" in path.rstrip("/").rpartition("/")[2]


def refuse_run_output(path: str) -> None:
    """SMDebugValueError if ``path`` is inside a run's own files (local or S3) or names an event file."""
    from smdebug.exceptions import SMDebugValueError

    inside = run_part_of(path)
    if inside is not None:
        run, part = inside
        raise SMDebugValueError(run_output_refusal(path, run, part))
    if is_s3_path(path) and is_event_file_key(path):
        raise SMDebugValueError(f"refusing to write {path}: it is a TensorBoard event file; write the output "
                                "elsewhere")
