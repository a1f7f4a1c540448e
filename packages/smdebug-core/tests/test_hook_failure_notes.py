"""A hook that stopped saving leaves a note in its run (smdebug.core.hook_failures); readers say it.

The disk-full case itself (a real RLIMIT_FSIZE on a training process) is in test_resource_faults.py. Here:
a step whose files cannot be written (a file stands where its folder goes), what ``smdebug ls`` and
``trial.hook_failures()`` print, and notes written by anyone but a hook (garbage, huge, many, multi-line).
"""

from __future__ import annotations

import json
import os

import numpy as np
from smdebug import SaveConfig
from smdebug.core.hook_failures import MAX_NOTES
from smdebug.trials import create_trial


def _finished_run(path, steps=3):
    from _support import NumpyHook

    hook = NumpyHook(out_dir=str(path), save_config=SaveConfig(save_interval=1), include_collections=["losses"])
    for step in range(steps):
        hook.begin_step()
        hook.record("loss", np.array([1.0 / (step + 1)]))
        hook.end_step()
    hook.close()
    return str(path)


def test_a_healthy_run_has_no_note(tmp_path, smdebug_cli):
    run = _finished_run(tmp_path / "run")
    assert not os.path.exists(os.path.join(run, "hook_failures"))
    assert create_trial(run).hook_failures() == []
    shown = smdebug_cli("ls", run)
    assert shown.returncode == 0 and "warning" not in shown.stdout, shown.stdout + shown.stderr


def test_a_step_that_could_not_be_written_is_said_in_the_run(tmp_path):
    from _support import NumpyHook
    from smdebug.core.locations import event_file_name

    out = tmp_path / "run"
    hook = NumpyHook(out_dir=str(out), save_config=SaveConfig(save_interval=1), include_collections=["losses"])
    for step in range(6):
        if step == 3:
            hook.flush()
            # (a file where step 3's event folder goes: that step cannot be written, by root either)
            (out / event_file_name(3, "worker_0")).parent.write_text("in the way")
        hook.begin_step()
        hook.record("loss", np.array([float(step)]))
        hook.end_step()
    hook.close()
    assert not hook.disabled  # (one step lost, the others saved: the hook went on)
    trial = create_trial(str(out))
    assert trial.steps() == [0, 1, 2, 4, 5]
    notes = trial.hook_failures()
    assert len(notes) == 1 and notes[0].startswith("worker_0: steps 3 never reached the run (")
    assert "regular file, not a folder" in notes[0] and "stopped" not in notes[0], notes


def test_notes_are_said_by_ls_and_kept_short(tmp_path, smdebug_cli):
    run = _finished_run(tmp_path / "run")
    folder = os.path.join(run, "hook_failures")
    os.makedirs(folder)
    with open(os.path.join(folder, "worker_0.json"), "w") as f:
        json.dump({"worker": "worker_0", "stopped_at_step": 2, "failure": "OSError: disk\nFAKE LINE " + "x" * 5000,
                   "lost_steps": "0-1", "lost_reason": "bucket gone"}, f)
    notes = create_trial(run).hook_failures()
    assert len(notes) == 1
    assert "\n" not in notes[0] and len(notes[0]) < 1000, notes  # (a newline would fake an output line)
    assert "stopped saving at step 2" in notes[0] and "steps 0-1 never reached the run (bucket gone)" in notes[0]
    shown = smdebug_cli("ls", run)
    assert shown.returncode == 0, shown.stderr
    warned = [line for line in shown.stdout.splitlines() if line.strip().startswith("warning: worker_0")]
    assert len(warned) == 1 and "FAKE LINE" in warned[0], shown.stdout


def test_hostile_notes_are_bounded_and_never_raise(tmp_path):
    run = _finished_run(tmp_path / "run")
    folder = os.path.join(run, "hook_failures")
    os.makedirs(folder)
    with open(os.path.join(folder, "a.json"), "wb") as f:
        f.write(b"{not json")
    with open(os.path.join(folder, "b.json"), "wb") as f:
        f.write(b"[" * 50_000)  # (nesting a JSON parser recurses into)
    with open(os.path.join(folder, "c.json"), "wb") as f:
        f.write(b" " * (1 << 20))  # larger than any note a hook writes
    with open(os.path.join(folder, "d.json"), "w") as f:
        json.dump({"stopped_at_step": True, "failure": 7}, f)  # (wrong types: nothing to say)
    for i in range(MAX_NOTES + 5):
        with open(os.path.join(folder, f"w{i:03d}.json"), "w") as f:
            json.dump({"worker": f"w{i}", "failure": "boom"}, f)
    notes = create_trial(run).hook_failures()
    assert len(notes) == MAX_NOTES + 1 and notes[-1].startswith("... and 9 more notes"), notes[-3:]
    assert notes[0].endswith("an unreadable note (not one a hook writes)")
    assert notes[1].endswith("an unreadable note (not one a hook writes)")
    assert "cannot be read" in notes[2] and notes[3].endswith("a note that says nothing"), notes[:4]


def test_the_report_says_it_on_the_run_card(tmp_path, smdebug_cli):
    import html
    import re

    run = _finished_run(tmp_path / "run")
    os.makedirs(os.path.join(run, "hook_failures"))
    with open(os.path.join(run, "hook_failures", "worker_0.json"), "w") as f:
        json.dump({"worker": "worker_0", "stopped_at_step": 2, "failure": "OSError: <b>disk</b> full"}, f)
    out = smdebug_cli("report", run, "-o", str(tmp_path / "r.html"))
    assert out.returncode == 0, out.stderr
    page = (tmp_path / "r.html").read_text()
    card = re.search(r'<section id="run".*?</section>', page, re.S).group(0)
    assert "<b>disk</b>" not in card  # (escaped: a note is text from the run folder)
    warned = re.search(r"<th>warning</th><td>([^<]*)</td>", card)
    assert warned and html.unescape(warned.group(1)).startswith(
        "worker_0: the hook stopped saving at step 2 (OSError: <b>disk</b> full)"), card


def test_a_note_is_written_and_read_on_s3_too(run_loc):
    """The note goes through the run's storage (a real S3 endpoint on loopback: moto server), as every file."""
    from smdebug.core.hook_failures import failure_note, note_key

    run = _finished_run(run_loc.path)
    assert create_trial(run).hook_failures() == []
    run_loc.storage.write_atomic(note_key("worker_1"), failure_note(
        "worker_1", 7, "writing to the bucket: StorageAccessDenied: AccessDenied", [3, 4, 5], "timed out"))
    notes = create_trial(run).hook_failures()
    assert notes == ["worker_1: the hook stopped saving at step 7 (writing to the bucket: StorageAccessDenied: "
                     "AccessDenied); nothing after it was saved; steps 3-5 never reached the run (timed out)"], notes
