"""Where each file of a run lives, relative to the run's root (the trial directory).

```
collections/000000000/<worker>_collections.json
events/<STEP12>/<STEP12>_<worker>.tfevents
index/<STEP//1000 as 9 digits>/<STEP12>_<worker>.json
training_job_end.ts
stop_training.json          (only when a rule asked the job to stop)
workers_ended/<worker>      (multi-worker runs: each worker at close; the last one writes training_job_end.ts)
hook_failures/<worker>.json (only a hook that stopped saving or lost steps: why; see smdebug.core.hook_failures)
```
"""

from __future__ import annotations

import os
import re
from typing import Optional, Tuple

from smdebug.core.lazy import lazy_exports
from smdebug.exceptions import IndexReaderException

DEFAULT_WORKER_NAME = "worker_0"
COLLECTIONS_DIR = "collections/000000000"
DEFAULT_COLLECTIONS_FILE_NAME = "worker_0_collections.json"
END_OF_JOB_FILE = "training_job_end.ts"
CLAIM_FILE = "claim.smd"
#: written by the rule runner's StopTraining action; hooks stop at the next step boundary
STOP_SIGNAL_FILE = "stop_training.json"
WORKERS_ENDED_DIR = "workers_ended"
HOOK_FAILURES_DIR = "hook_failures"
INDEX_DIR = "index"
EVENTS_DIR = "events"
INDEX_STEPS_PER_FOLDER = 1000

# (ASCII digits only: int() also reads other scripts' digits, which would let "\u0661_worker_0.json" pass
# for step 1's index)
_STEP_FILE_RE = re.compile(r"(?:^|/)([0-9]+)_(.+)\.(json|csv|tfevents)$")
_COLLECTION_FILE_RE = re.compile(r"(?:^|/)collections/[^/]+/(.+)_collections\.(json|ts)$")
#: the largest step a run can hold: steps are int64 in the event records (Event.step) and in numpy columns
MAX_STEP = (1 << 63) - 1
# Characters no worker name read from a file name may hold: control characters (a newline, an escape
# sequence for the terminal that shows the name) and lone surrogates, which is how Python spells file-name
# bytes that are not UTF-8 (such a name cannot be printed, written to JSON or drawn).
_BAD_NAME_CHARS = re.compile("[\x00-\x1f\x7f\ud800-\udfff]")
# TF MirroredStrategy device names, serialised for file names ("/" -> "_", ":" -> "-").
_SERIALIZED_DEVICE_RE = re.compile(r"^_job-[^_/]+_replica-\d+_task-\d+_device-[A-Za-z_]+-\d+$")


def step_str(step: int) -> str:
    return format(step, "012")


def serialize_worker_name(worker: str) -> str:
    """Make a worker name safe for file names. Only device strings (with '/' or ':') change."""
    if "/" in worker or ":" in worker:
        return worker.replace("/", "_").replace(":", "-")
    return worker


def deserialize_worker_name(name: str) -> str:
    """Undo :func:`serialize_worker_name` for device strings only.

    The original de-serialised every name containing ``__`` or starting with ``_``, which corrupted
    names that legitimately contain ``_`` or ``-``; we only touch names shaped like a serialised TF
    device (``_job-worker_replica-0_task-1_device-GPU-6``).
    """
    if _SERIALIZED_DEVICE_RE.match(name):
        head, _, index = name.rpartition("-")
        parts = head.split("_")  # ['', 'job-worker', 'replica-0', 'task-1', 'device-GPU']
        return "/".join(p.replace("-", ":", 1) if p else "" for p in parts) + ":" + index
    return name


#: longest worker name (UTF-8 bytes, serialised) that fits in every file name of a run (255-byte limit)
MAX_WORKER_NAME_BYTES = 200


def worker_name_problem(worker) -> Optional[str]:
    """Why ``worker`` cannot name a worker's files, or None if it can.

    A name is accepted only if the reader gets it back from every file name it is part of (index, event
    and collections files), so what the hook writes is never a run the reader shows as empty: control
    characters (a newline ends the reader's file-name pattern), names too long for a file name, and
    names that read back differently are refused.
    """
    if not isinstance(worker, str) or not worker:
        return "it is empty or not a string"
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in worker):
        return "it contains control characters"
    if len(serialize_worker_name(worker).encode("utf-8", "surrogatepass")) > MAX_WORKER_NAME_BYTES:
        return f"it is longer than {MAX_WORKER_NAME_BYTES} bytes"
    try:
        back = {parse_step_file_name(index_file_name(0, worker))[1],
                parse_step_file_name(event_file_name(0, worker))[1],
                parse_collection_file_name(collections_file_name(worker))}
    except IndexReaderException:
        return "the reader cannot parse file names made from it"
    if back != {worker}:
        return f"the reader would read it back as {sorted(back)[0]!r}"
    return None


def worker_end_file_name(worker: str) -> str:
    return f"{WORKERS_ENDED_DIR}/{serialize_worker_name(worker)}"


def event_file_name(step: int, worker: str) -> str:
    s = step_str(step)
    return f"{EVENTS_DIR}/{s}/{s}_{serialize_worker_name(worker)}.tfevents"


def index_file_name(step: int, worker: str) -> str:
    return f"{INDEX_DIR}/{format(step // INDEX_STEPS_PER_FOLDER, '09')}/{step_str(step)}_{serialize_worker_name(worker)}.json"


def index_prefix_for_step(step: int) -> str:
    """The key of an index file of ``step`` with an empty worker name: sorts before every worker's file."""
    return f"{INDEX_DIR}/{format(step // INDEX_STEPS_PER_FOLDER, '09')}/{step_str(step)}_"


def collections_file_name(worker: str) -> str:
    return f"{COLLECTIONS_DIR}/{serialize_worker_name(worker)}_collections.json"


def parse_step_file_name(path: str):
    """(global step, worker) from an index or event file path; IndexReaderException if it is not one."""
    m = _STEP_FILE_RE.search(path)
    if m is None:
        raise IndexReaderException(f"Invalid File Found: {_not_a_step_file(path)}", path)
    step = int(m.group(1))
    if step > MAX_STEP:
        raise IndexReaderException(f"Invalid File Found: step {m.group(1)[:40]} is larger than a step can be",
                                   path)
    if _BAD_NAME_CHARS.search(m.group(2)):
        raise IndexReaderException("Invalid File Found: the worker name holds control characters or bytes that "
                                   "are not UTF-8", path)
    return step, deserialize_worker_name(m.group(2))


def _not_a_step_file(path: str) -> str:
    """Why ``path``'s name is not a step file's, for the message: the name is the problem, not the file's
    content (a name with bytes that are not UTF-8, shown escaped, says so: it is the likeliest cause)."""
    from smdebug.core.names import clipped  # (repr below escapes them: control characters, lone surrogates)

    name = path.rpartition("/")[2]
    reason = f"the file name {clipped(name, 120)!r} is not a step's file name (<step>_<worker>.json or .tfevents)"
    if _BAD_NAME_CHARS.search(name):
        reason += " (it holds control characters or bytes that are not UTF-8, shown escaped)"
    return reason


def index_file_problem(key: str, step: int, worker: str) -> Optional[str]:
    """Why the index file at ``key`` (relative to the run root) is not where a writer puts the index of
    ``step`` of ``worker`` (parsed from its name), or None. Every writer, the original's too, puts it at
    :func:`index_file_name`; a file elsewhere (another folder, a step without its zero padding) would be
    taken for that step and replace what the real index says."""
    expected = index_file_name(step, worker)
    if key.rpartition(".")[0] == expected.rpartition(".")[0]:  # (.json, or the .csv some readers accept)
        return None
    return f"Invalid File Found: the index of step {step} of worker {worker!r} belongs at {expected}"


#: what a run's own layout holds at its root: folders, then files (see the module's docstring)
RUN_FOLDERS = (EVENTS_DIR, INDEX_DIR, "collections", WORKERS_ENDED_DIR, HOOK_FAILURES_DIR)
_RUN_FILES = (END_OF_JOB_FILE, CLAIM_FILE, STOP_SIGNAL_FILE)


def run_part_at(path: str) -> Optional[Tuple[str, str]]:
    """``(run folder, part)`` when the local ``path`` is, or is inside, a part of a run's own layout
    (``events``, ``index``, ``collections``, ``workers_ended``, the end-of-job, claim and stop files) of a
    folder that holds a run (``index`` and ``events`` folders, or
    ``collections/000000000``), else None. A command told to write its output there would overwrite what
    the run's hook wrote and its readers read."""
    real = os.path.realpath(path)
    parent = os.path.dirname(real)
    head = real
    while parent != head:
        part = os.path.relpath(real, parent).split(os.sep)[0]
        if part in RUN_FOLDERS or part in _RUN_FILES:
            if (os.path.isdir(os.path.join(parent, COLLECTIONS_DIR))
                    or (os.path.isdir(os.path.join(parent, INDEX_DIR))
                        and os.path.isdir(os.path.join(parent, EVENTS_DIR)))):
                return parent, part
        head, parent = parent, os.path.dirname(parent)
    return None


def run_output_refusal(path: str, run: str, part: str) -> str:
    """What a command says when told to write its output at ``path``, inside ``part`` of the ``run`` it
    belongs to (see :func:`run_part_at`): one wording for local paths and S3 keys."""
    kind = "folder" if part in RUN_FOLDERS else "file"
    return (f"refusing to write {path}: it is in the {part!r} {kind} of the run {run}, which the run's hook "
            f"wrote; write the output outside the run's {', '.join(RUN_FOLDERS)} folders")


def parse_collection_file_name(path: str) -> str:
    m = _COLLECTION_FILE_RE.search(path)
    if m is None or _BAD_NAME_CHARS.search(m.group(1)):
        raise IndexReaderException("Invalid collections file name", path)
    return deserialize_worker_name(m.group(1))



def is_index_file(path: str) -> bool:
    return path.endswith(".json") or path.endswith(".csv")


#: smdebug 1.0.x's location classes (legacy adapters over the functions above, loaded on use; the
#: legacy module imports this one, never the other way round)
__getattr__, __dir__ = lazy_exports(__name__, {
    name: "smdebug.core.legacy.locations"
    for name in ("IndexFileLocationUtils", "TensorFileLocation", "TensorboardFileLocation", "EventFileLocation",
                 "TensorLocation", "TensorShape", "STEP_NUMBER_FORMATTING_LENGTH")
})
