"""What ``smdebug run`` says when the script has ended: how many steps the run folder holds.

A run saved at step 0 only (the original's every-500-steps default on a shorter run) looked like a working
recording until ``smdebug rules run`` said NotEvaluated on every rule; saying it at once, with the way out,
saves the user a whole training run. Only local folders are counted (listing an S3 prefix after every run
would cost requests and time for a line of advice).
"""

from __future__ import annotations

import os
import re
from typing import List, Optional

from smdebug.zero_code.preset import RECOMMENDED

_SHOWN_RUNS = 8  # step runs ("0-9", "10", "20") shown before "..."
_STEP_FOLDER = re.compile(r"[0-9]{9}")  # (index/000000000/: the writer's folder of a thousand steps)


def saved_steps(out_dir: str, since: Optional[float] = None) -> Optional[List[int]]:
    """The sorted global steps with an index file (any worker) where the writer puts them in the local run
    folder ``out_dir`` (``index/<9 digits>/``), written at or after ``since`` (a time.time(); None: any); None
    for an S3 path or a folder that cannot be listed.

    Only the two levels the writer makes are listed: a folder nested thousands deep in ``index/`` made a
    walk of every level raise RecursionError. ``since`` leaves out the steps of an earlier run that never
    ended in the same folder, which this command did not save."""
    from smdebug.core.locations import INDEX_DIR, index_file_name, parse_step_file_name
    from smdebug.exceptions import IndexReaderException

    if out_dir.startswith("s3://"):
        return None
    index = os.path.join(out_dir, INDEX_DIR)
    if not os.path.isdir(out_dir):
        return []
    steps = set()
    try:
        with os.scandir(index) as folders:
            subfolders = [f.path for f in folders if _STEP_FOLDER.fullmatch(f.name) and f.is_dir(follow_symlinks=False)]
        for folder in subfolders:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if not entry.name.endswith(".json"):
                        continue  # (a writer's temporary file)
                    try:
                        step, worker = parse_step_file_name(entry.name)
                        if index_file_name(step, worker) != f"{INDEX_DIR}/{os.path.basename(folder)}/{entry.name}":
                            continue  # (not where the writer puts that step: not a step it saved)
                        if since is None or entry.stat(follow_symlinks=False).st_mtime >= since:
                            steps.add(step)
                    except (IndexReaderException, OSError):
                        continue
    except FileNotFoundError:
        return []
    except OSError:
        return None
    return sorted(steps)


def saved_steps_note(out_dir: str, preset: str, since: Optional[float] = None) -> Optional[str]:
    """One or two lines for the end of ``smdebug run`` (None when the folder cannot be counted): the steps
    saved at or after ``since`` (when the command started)."""
    from smdebug.core.names import step_runs

    steps = saved_steps(out_dir, since)
    if steps is None:
        return None
    if not steps:
        return (f"smdebug run: no step was saved in {out_dir} (the script ran no model smdebug attached to, "
                "or the hook stopped: see the messages above)")
    runs = step_runs(steps)
    shown = ", ".join(runs[:_SHOWN_RUNS]) + (", ..." if len(runs) > _SHOWN_RUNS else "")
    count = f"{len(steps)} step{'s' if len(steps) != 1 else ''} ({shown})"
    if len(steps) == 1:
        if preset == RECOMMENDED:
            why = "the script ran one step, or the preset could not be used: see the messages above"
        else:
            why = ("the run was shorter than the save interval; drop --collections/--save-interval for the "
                   "recommended preset (dense at first, then sparser), or give a smaller --save-interval")
        return (f"smdebug run: {out_dir} holds {count} only: rules compare steps and will say NotEvaluated "
                f"({why})")
    note = f"smdebug run: saved {count} in {out_dir}; judge them with: smdebug rules run {out_dir}"
    if preset != RECOMMENDED:
        note += ("\nsmdebug run: only the collections asked for were saved: rules that read others will say "
                 "NotEvaluated (--preset recommended saves what they all read)")
    return note
