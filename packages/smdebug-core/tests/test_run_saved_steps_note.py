"""The closing note of ``smdebug run`` (how many steps the run folder holds) on folders it did not make alone:
an ``index/`` holding folders nested past Python's recursion limit ended the command with a RecursionError
traceback and exit status 1 after the script had succeeded, and steps of an earlier unfinished run in the folder
(or an index file planted where the writer never puts one) were counted as saved by this run (probe 14c s2
F1/F2). Runs are written by the real step writer."""

from __future__ import annotations

import os
import time

from _hostile import nest_folders, remove_nested, write_simple_run
from smdebug.zero_code.saved_steps import saved_steps, saved_steps_note


def test_folders_nested_past_the_recursion_limit_are_not_walked(tmp_path):
    run = write_simple_run(tmp_path / "run", steps=range(3))
    index = os.path.join(run, "index")
    nest_folders(index, 1200)
    try:
        assert saved_steps(run) == [0, 1, 2]
    finally:
        remove_nested(index)  # (pytest's clean-up recurses once per level)


def test_only_the_steps_written_since_the_start_and_where_the_writer_puts_them_count(tmp_path):
    run = write_simple_run(tmp_path / "run", steps=range(30))
    stray = os.path.join(run, "index", "stray")
    os.makedirs(stray)
    open(os.path.join(stray, "000000099999_worker_0.json"), "w").close()
    misplaced = os.path.join(run, "index", "000000000", "000000005000_worker_0.json")
    open(misplaced, "w").close()
    assert saved_steps(run) == list(range(30))  # (neither planted file is a step the writer saved)

    old = time.time() - 3600
    for folder, _, names in os.walk(os.path.join(run, "index")):
        for name in names:
            os.utime(os.path.join(folder, name), (old, old))
    started = time.time() - 1.0
    write_simple_run(run, steps=range(12))  # (a second run into the same folder: steps 0-11 rewritten)
    assert saved_steps(run, since=started) == list(range(12))
    assert "saved 12 steps (0-11)" in saved_steps_note(run, "recommended", since=started)
