"""An index file of a live run that is no JSON document yet, as a run folder watched through a copy shows one
being copied (cp, scp, rsync --inplace, a network file system), is read once it is complete (probe 14c F5).

A hook writes its index files whole (a rename), but a copier writes a file in place, in its own order: for a few
seconds the newest step's file -- or any step's -- is cut short. A live trial gave up on the whole run at once
("Empty/Corrupt Index File"), and a follower with it. Now, while the run has not ended, such a file modified
recently is left unread and looked at again at the next refresh, for at most the wait a missing event file gets
(SMDEBUG_MISSING_EVENT_FILE_RETRY_LIMIT x poll_interval); after that, or once the run has ended, it is damage as
before. The runs are written by the real writer; only the index file under copy is cut short."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from smdebug.core.locations import END_OF_JOB_FILE
from smdebug.exceptions import IndexReaderException
from smdebug.trials import create_trial

from _hostile import index_path
from _support import write_run


def _live_run(root, steps=5) -> str:
    write_run(str(root), range(steps), end=False)
    return str(root)


def _cut_short(path: str) -> bytes:
    """Leave the first third of ``path`` (as a copier halfway through it does); its whole content returned."""
    whole = open(path, "rb").read()
    with open(path, "wb") as f:
        f.write(whole[: len(whole) // 3])
    return whole


def test_the_newest_index_being_copied_is_read_once_complete_and_an_ended_runs_is_damage(tmp_path):
    run = _live_run(tmp_path / "run")
    newest = index_path(run, 4)
    whole = _cut_short(newest)
    trial = create_trial(run)  # (it refused the whole run)
    assert trial.steps() == [0, 1, 2, 3]
    assert trial.tensor("w").value(3).tolist() == [3, 3, 3]
    with open(newest, "wb") as f:  # the copy is complete
        f.write(whole)
    assert trial.steps() == [0, 1, 2, 3, 4]
    assert trial.tensor("w").value(4).tolist() == [4, 4, 4]

    # a run that has ended is read as it is: a file cut short is damage at once
    _cut_short(newest)
    open(os.path.join(run, END_OF_JOB_FILE), "w").close()
    with pytest.raises(IndexReaderException, match="Empty/Corrupt Index File") as e:
        create_trial(run).tensor("w").value(4)
    assert e.value.step == 4


def test_an_earlier_steps_file_being_copied_holds_back_the_workers_later_steps(tmp_path):
    """A copier goes in its own order: step 2's file cut short while 3 and 4 are whole. The worker's later steps
    wait with it, so the trial never lists past a step it has not read."""
    run = _live_run(tmp_path / "run")
    whole = _cut_short(index_path(run, 2))
    trial = create_trial(run)
    assert trial.steps() == [0, 1]
    with open(index_path(run, 2), "wb") as f:
        f.write(whole)
    assert trial.steps() == [0, 1, 2, 3, 4]
    assert [trial.tensor("w").value(s)[0] for s in trial.steps()] == [0, 1, 2, 3, 4]


def test_a_file_untouched_for_the_wait_is_damage(tmp_path, monkeypatch):
    """The wait is by the file's modification time: one not modified for the whole wait is no file being
    written."""
    monkeypatch.setenv("SMDEBUG_MISSING_EVENT_FILE_RETRY_LIMIT", "10")  # x poll_interval 1 s: a 10 s wait
    run = _live_run(tmp_path / "run")
    newest = index_path(run, 4)
    _cut_short(newest)
    trial = create_trial(run, poll_interval=1)
    assert trial.steps() == [0, 1, 2, 3]
    old = time.time() - 11
    os.utime(newest, (old, old))
    with pytest.raises(IndexReaderException, match="Empty/Corrupt Index File") as e:
        trial.steps()
    assert e.value.step == 4


def test_a_file_dated_ahead_of_the_clock_is_waited_for_only_as_long(tmp_path, monkeypatch):
    """A file dated in the future (another machine's clock) looks just modified for as long as the skew lasts:
    the trial's own clock ends the wait too."""
    monkeypatch.setenv("SMDEBUG_MISSING_EVENT_FILE_RETRY_LIMIT", "2")  # x poll_interval 0.1 s: a 0.2 s wait
    run = _live_run(tmp_path / "run")
    newest = index_path(run, 4)
    _cut_short(newest)
    ahead = time.time() + 365 * 86400
    os.utime(newest, (ahead, ahead))
    trial = create_trial(run, poll_interval=0.1)
    assert trial.steps() == [0, 1, 2, 3]
    time.sleep(0.3)
    with pytest.raises(IndexReaderException, match="Empty/Corrupt Index File"):
        trial.steps()


def test_skipping_damage_skips_it_only_after_the_wait(tmp_path, monkeypatch):
    monkeypatch.setenv("SMDEBUG_MISSING_EVENT_FILE_RETRY_LIMIT", "10")
    run = _live_run(tmp_path / "run")
    newest = index_path(run, 4)
    whole = _cut_short(newest)
    trial = create_trial(run, poll_interval=1, skip_damaged=True)
    assert trial.steps() == [0, 1, 2, 3] and trial.skipped_damaged == 0
    old = time.time() - 11
    os.utime(newest, (old, old))
    assert trial.steps() == [0, 1, 2, 3] and trial.skipped_damaged == 1
    with open(newest, "wb") as f:  # (skipped for good: read as damage, as any damaged file is)
        f.write(whole)
    write_run(run, [5], end=False)
    assert trial.steps() == [0, 1, 2, 3, 5]
    assert np.array_equal(trial.tensor("w").value(5), [5, 5, 5])
