"""A hook that stopped saving, or whose training died, says so inside its run, for whoever reads the run later.

A hook that cannot save (a full disk, lost credentials, a bucket deleted under it, an internal error) logs
one error and stops saving while training goes on; a remote store that was too slow may also have lost some
steps. That log is the training job's: a trial opened later saw a finished run of fewer steps (or none) and
judged it as if it were whole -- "the run has no steps", or a verdict on a run cut short, with nothing saying
why. So at close, such a hook writes one small note per worker::

    hook_failures/<worker>.json   {"worker": ..., "stopped_at_step": 37, "failure": "...",
                                   "lost_steps": "12-15", "lost_reason": "...",
                                   "ended_by": "raised an unhandled XGBoostError: ...", "last_step": 125}

``ended_by`` is the other way a run is cut short: the hook was closed at exit after an exception nobody
caught, or by SIGTERM (see :mod:`smdebug.core.process_exit`). The end marker is still written (nothing
more will come), but the run did not reach the end its training loop meant to, and a verdict of "no issues"
on it must not read as one on a finished training.

Trials read the notes back as sentences (:func:`read_failure_notes`; ``trial.hook_failures()``) that the
CLI and the rule runner print. The note is best effort: on a disk that is full, it may not fit either (the
training log still has the error). Readers of the original smdebug ignore the folder.
"""

from __future__ import annotations

import json
from typing import List, Optional, Sequence, Tuple

from smdebug.core.locations import HOOK_FAILURES_DIR, serialize_worker_name
from smdebug.core.names import step_runs
from smdebug.core.run_info import is_step

#: a note is a few hundred bytes; anything larger was not written by a hook (read no further)
MAX_NOTE_BYTES = 64 * 1024
#: notes read per run (a run folder anyone could fill with files: the rest are counted)
MAX_NOTES = 32
_TEXT_LIMIT = 300


def note_key(worker: str) -> str:
    return f"{HOOK_FAILURES_DIR}/{serialize_worker_name(worker)}.json"


def failure_note(worker: str, stopped_at_step: Optional[int], failure: Optional[str],
                 lost_steps: Sequence[int] = (), lost_reason: Optional[str] = None,
                 ended_by: Optional[str] = None, last_step: Optional[int] = None) -> bytes:
    """The note of one worker's hook: where and why it stopped saving, the steps that never arrived, and how
    its training process ended when that was not normally."""
    lost = step_runs(sorted(lost_steps))
    doc = {"worker": worker, "stopped_at_step": stopped_at_step, "failure": failure,
           "lost_steps": ", ".join(lost[:20]) + (f", ... ({len(lost) - 20} more runs)" if len(lost) > 20 else ""),
           "lost_reason": lost_reason}
    if ended_by:
        doc.update(ended_by=ended_by, last_step=last_step)
    return json.dumps(doc).encode()


def _text(value, limit: int = _TEXT_LIMIT) -> Optional[str]:
    """A note's string as one short line (a hostile note may hold newlines that would fake output lines)."""
    if not isinstance(value, str) or not value.strip():
        return None
    one_line = " ".join(value.split())
    return one_line if len(one_line) <= limit else one_line[:limit] + "..."


def describe_note(raw: bytes, key: str) -> str:
    """One sentence from a note's bytes; a note that is not one a hook writes is said to be unreadable."""
    return _read_note(raw, key)[0]


def _read_note(raw: bytes, key: str) -> Tuple[str, bool]:
    """(the note as one sentence, whether it says the training process ended abnormally)."""
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError):
        doc = None
    if not isinstance(doc, dict):
        return f"{_text(key)}: an unreadable note (not one a hook writes)", False
    worker = _text(doc.get("worker"), 100) or _text(key.rsplit("/", 1)[-1], 100)
    parts = []
    ended_by = _text(doc.get("ended_by"))
    if ended_by:
        last = doc.get("last_step")
        at = f"at step {last} " if is_step(last) else ""
        parts.append(f"training did not end normally: {at}the process {ended_by}")
    step, failure = doc.get("stopped_at_step"), _text(doc.get("failure"))
    if failure:
        # (a step is a 64-bit number: a note holding 4,000 digits printed them all)
        at = f" at step {step}" if is_step(step) else ""
        parts.append(f"the hook stopped saving{at} ({failure}); nothing after it was saved")
    lost = _text(doc.get("lost_steps"))
    if lost:
        why = _text(doc.get("lost_reason"))
        parts.append(f"steps {lost} never reached the run" + (f" ({why})" if why else ""))
    if not parts:
        return f"{worker}: a note that says nothing", False
    return f"{worker}: " + "; ".join(parts), bool(ended_by)


def read_failure_notes(storage) -> List[str]:
    """The notes of the run ``storage`` is rooted at, as sentences (none: an empty list). Never raises for
    what the folder holds: a note that cannot be read is said to be unreadable."""
    return [text for text, _ in read_notes(storage)]


def read_notes(storage) -> List[Tuple[str, bool]]:
    """Each note of the run as (sentence, whether it says the training process ended abnormally); a note
    or folder that cannot be read is a sentence saying so (not taken for an abnormal end)."""
    try:
        keys = [k for k in storage.list(HOOK_FAILURES_DIR, skip_unreadable=True) if k.endswith(".json")]
    except OSError:  # (StorageError and UnreadableFileError are OSErrors)
        return [(f"{HOOK_FAILURES_DIR}/ cannot be listed: a hook may have stopped saving (see the training log)",
                 False)]
    out: List[Tuple[str, bool]] = []
    try:
        notes = storage.read_files(keys[:MAX_NOTES], MAX_NOTE_BYTES)
    except OSError as e:  # (a store that stalls or fails on them: the notes are said unread, the run still read)
        return [(f"{HOOK_FAILURES_DIR}/ holds {len(keys)} note(s) that cannot be read ({_text(str(e), 200)}): a "
                 "hook may have stopped saving (see the training log)", False)]
    for key, raw in zip(keys[:MAX_NOTES], notes):
        if isinstance(raw, Exception):
            out.append((f"{_text(key)}: a note that cannot be read ({_text(str(raw), 200)})", False))
        else:
            out.append(_read_note(raw, key))
    if len(keys) > MAX_NOTES:
        out.append((f"... and {len(keys) - MAX_NOTES} more notes in {HOOK_FAILURES_DIR}/", False))
    return out

