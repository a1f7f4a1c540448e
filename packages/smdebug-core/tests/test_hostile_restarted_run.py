"""A job restarted from a checkpoint into the run folder a trial follows (red team 11).

The restarted job writes steps the following trial read already (same file names, new records) and may
write steps it never had. A trial made afterwards reads the folder as it is; the following trial must agree
with it, not call the rewritten steps corrupt (it said 'Truncated record') nor miss the new lower steps.
Runs are written by the real step writer, on a local folder and on S3 (moto over HTTP).
"""

from __future__ import annotations

import numpy as np
import pytest

from _support import write_run


def _first_job(loc, steps):
    write_run(loc, steps, end=False, tensors=lambda s, w: {"w": np.full(3, s, np.float32)})


def _restarted_job(loc, steps, end=False):
    # another layout than the first job's (a new tensor first, so every old record location is wrong)
    write_run(loc, steps, end=end, tensors=lambda s, w: {"a_new": np.arange(40, dtype=np.float64),
                                                          "w": np.full(3, 1000 + s, np.float32)})


def test_steps_rewritten_by_a_restarted_job_read_as_a_new_trial_reads_them(run_loc, smdebug_log):
    from smdebug.trials import create_trial

    _first_job(run_loc, range(0, 8))
    follower = create_trial(str(run_loc))
    assert follower.tensor("w").value(3).tolist() == [3, 3, 3]
    _restarted_job(run_loc, range(3, 11))  # restarted from the checkpoint of step 3

    fresh = create_trial(str(run_loc))
    for step in (3, 6, 7, 9):
        assert follower.tensor("w").value(step).tolist() == fresh.tensor("w").value(step).tolist() \
            == [1000 + step] * 3
        assert "a_new" in follower.tensor_names(step=step)
    assert follower.tensor("w").value(2).tolist() == [2, 2, 2]  # (before the checkpoint: the first job's)
    said = [m for m in smdebug_log.messages() if "written again" in m]
    assert len(said) == 1 and "restarted" in said[0], smdebug_log.messages()


def test_all_values_of_a_rewritten_run_at_once(run_loc):
    from smdebug.trials import create_trial

    _first_job(run_loc, range(0, 6))
    follower = create_trial(str(run_loc))
    _restarted_job(run_loc, range(2, 9), end=True)
    values = follower.tensor("w").values()
    assert {s: v[0] for s, v in values.items()} == {0: 0, 1: 1, **{s: 1000 + s for s in range(2, 9)}}


def test_lower_steps_written_after_the_trial_read_past_them_are_read(run_loc, monkeypatch):
    from smdebug.trials import create_trial

    monkeypatch.setenv("SMDEBUG_RESTART_CHECK_INTERVAL", "0")
    _first_job(run_loc, range(0, 40, 10))
    follower = create_trial(str(run_loc))
    assert follower.steps() == [0, 10, 20, 30]
    _restarted_job(run_loc, range(5, 50, 5))  # restarted at step 5, saving every 5 steps
    fresh = create_trial(str(run_loc))
    assert follower.steps() == fresh.steps() == [0] + list(range(5, 50, 5))
    assert follower.tensor("w").value(15).tolist() == [1015] * 3


def test_a_damaged_step_of_a_live_run_is_still_damage(run_loc, smdebug_log):
    """The index unchanged, the event file cut short: the error stays, and no reload is said."""
    from smdebug.core.locations import event_file_name
    from smdebug.exceptions import EventFileCorrupted
    from smdebug.trials import create_trial

    _first_job(run_loc, range(0, 4))
    follower = create_trial(str(run_loc))
    key = event_file_name(2, "worker_0")
    run_loc.write(key, run_loc.read(key)[:10])
    with pytest.raises(EventFileCorrupted):
        follower.tensor("w").value(2)
    with pytest.raises(EventFileCorrupted):
        follower.tensor("w").values()
    assert not [m for m in smdebug_log.messages() if "written again" in m]
