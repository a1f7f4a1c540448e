"""Whether a rule runner result is about the run the report shows, and about all of it.

A result document names the run it judged (``trial``: the path ``smdebug rules run`` was given) and how
far it got (``last_step``, ``steps_evaluated``). Nothing ties the file to the folder it lies in: one
copied from another run, or a ``--rules FILE`` of another run, was shown as this run's verdicts, and a
result written before the run grew read as a verdict on all of it. The report still shows the verdicts
(they may be just what the reader wants to compare), but says plainly what does not match.

Paths are compared as far as they can be: local paths resolved (links, ``..``), ``s3://`` ones as
written. A relative path in the document was relative to wherever the rule runner ran, which the report
cannot know: it matches when it resolves to this run from here, or when its names are the last ones of
this run's path. A run folder moved or copied along with its result names its old place: the steps are
compared as well, and the note says when they match.
"""

from __future__ import annotations

import os
from typing import List, Optional

from smdebug.core.storage.base import is_s3_path


def mismatches(doc_trial: Optional[str], last_step: Optional[int], steps_evaluated: Optional[int],
               trial) -> List[str]:
    """What in a result does not fit ``trial`` (a sentence each), or [] when all of it fits."""
    steps = trial.steps()
    notes = []
    other = _other_run(doc_trial, str(trial.path))
    if other:
        notes.append(other + _same_steps_hint(last_step, steps_evaluated, steps))
    notes += _step_notes(last_step, steps_evaluated, steps)
    return notes


def _other_run(doc_trial: Optional[str], here: str) -> Optional[str]:
    """The sentence saying the result is of another run, or None (the same run, or the document does not
    say which run it judged: a hand-written one)."""
    if not isinstance(doc_trial, str) or not doc_trial.strip() or same_run(doc_trial, here):
        return None
    shown_here = here if is_s3_path(here) else os.path.abspath(here)
    return f"these verdicts were computed for {doc_trial.strip()}, not this run ({shown_here})"


def same_run(doc_trial: str, here: str) -> bool:
    """Whether the path a result names (``doc_trial``) can be the run at ``here``."""
    doc_trial, here = doc_trial.strip(), here.strip()
    if is_s3_path(doc_trial):
        return is_s3_path(here) and doc_trial.rstrip("/") == here.rstrip("/")
    places = _places(here)
    if os.path.isabs(doc_trial):
        return not is_s3_path(here) and bool({os.path.normpath(doc_trial), os.path.realpath(doc_trial)} & places)
    if not is_s3_path(here) and os.path.realpath(doc_trial) in places:
        return True
    # (relative to a folder the report cannot know: its names ending this run's path are as close as it
    # gets; "." or "..", the runner run inside the run, name nothing to compare, and are taken as this run)
    names = [p for p in os.path.normpath(doc_trial).split(os.sep) if p not in ("", ".", "..")]
    return not names or any(p.rstrip("/").split("/")[-len(names):] == names for p in places)


def _places(here: str) -> set:
    """This run's path in the forms a result may name it: an s3:// one as written, a local one absolute
    and with its links resolved."""
    if is_s3_path(here):
        return {here.rstrip("/")}
    return {os.path.normpath(os.path.abspath(here)), os.path.realpath(here)}


def _same_steps_hint(last_step: Optional[int], steps_evaluated: Optional[int], steps: List[int]) -> str:
    """A run moved or copied with its result keeps its steps: say so when they match, so the reader can
    tell that case from a result of another run."""
    if steps and last_step == steps[-1] and steps_evaluated == len(steps):
        return (f" (it judged {steps_evaluated} step(s) up to step {last_step}, as many as this run has: "
                "if this run was moved or copied from there, they are its own)")
    return ""


def _step_notes(last_step: Optional[int], steps_evaluated: Optional[int], steps: List[int]) -> List[str]:
    if last_step is None or not steps:
        return []
    if last_step > steps[-1]:
        return [f"judged up to step {last_step}, but this run's steps end at {steps[-1]}: steps this run does "
                "not have"]
    if last_step < steps[-1]:
        return [f"judged up to step {last_step}; the run now has steps to {steps[-1]}: the verdicts say "
                "nothing of the later steps (run the rules again)"]
    if steps_evaluated is not None and steps_evaluated > len(steps):
        return [f"judged {steps_evaluated} steps; this run has {len(steps)}"]
    return []
