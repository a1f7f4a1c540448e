"""What ``smdebug run`` says when the script has ended: how many steps the run folder holds.

A run saved at step 0 only (the original's every-500-steps default on a shorter run) looked like a working
recording until ``smdebug rules run`` said NotEvaluated on every rule; saying it at once, with the way out,
saves the user a whole training run. Only local folders are counted (listing an S3 prefix after every run
would cost requests and time for a line of advice).
"""

from __future__ import annotations

import os
from typing import List, Optional

from smdebug.zero_code.preset import RECOMMENDED

_SHOWN_RUNS = 8  # step runs ("0-9", "10", "20") shown before "..."


def saved_steps(out_dir: str) -> Optional[List[int]]:
    """The sorted global steps with an index file (any worker) under the local run folder ``out_dir``; None
    for an S3 path or a folder that cannot be listed."""
    from smdebug.core.locations import INDEX_DIR, parse_step_file_name
    from smdebug.exceptions import IndexReaderException

    if out_dir.startswith("s3://"):
        return None
    index = os.path.join(out_dir, INDEX_DIR)
    if not os.path.isdir(out_dir):
        return []
    steps = set()
    try:
        for _, _, names in os.walk(index):
            for name in names:
                if not name.endswith(".json"):
                    continue  # (a writer's temporary file)
                try:
                    steps.add(parse_step_file_name(name)[0])
                except IndexReaderException:
                    continue
    except OSError:
        return None
    return sorted(steps)


def saved_steps_note(out_dir: str, preset: str) -> Optional[str]:
    """One or two lines for the end of ``smdebug run`` (None when the folder cannot be counted)."""
    from smdebug.core.names import step_runs

    steps = saved_steps(out_dir)
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
