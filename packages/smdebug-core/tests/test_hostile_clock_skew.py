"""Clocks that disagree: a run's end markers are dated by the clock of the machine (or the S3 service) that
wrote them, which may run ahead of the reader's. A run is written by the real hook; only the markers' dates
are changed afterwards, as a skewed clock (or anyone with write access to the folder) would date them."""

from __future__ import annotations

import os
import time

from _support import NumpyHook, train_logistic_regression
from smdebug import SaveConfig
from smdebug.trials import create_trial

YEAR = 365 * 86400


def one_of_two_workers(root, monkeypatch, steps=5) -> str:
    """A run whose collections say 2 workers, written and ended by worker_0 alone (no end marker)."""
    monkeypatch.setenv("SMDEBUG_TEST_RANK", "0")
    monkeypatch.setenv("SMDEBUG_TEST_WORLD_SIZE", "2")
    hook = NumpyHook(out_dir=str(root), save_config=SaveConfig(save_interval=1), include_workers="all",
                     include_collections=["weights", "gradients", "losses", "biases"])
    train_logistic_regression(hook, steps=steps)
    hook.close()
    monkeypatch.delenv("SMDEBUG_TEST_RANK")
    monkeypatch.delenv("SMDEBUG_TEST_WORLD_SIZE")
    assert os.listdir(os.path.join(root, "workers_ended")) == ["worker_0"]
    assert not os.path.exists(os.path.join(root, "training_job_end.ts"))
    return str(root)


def test_worker_end_markers_dated_in_the_future_do_not_keep_the_run_open_for_ever(tmp_path, monkeypatch):
    run = one_of_two_workers(tmp_path / "run", monkeypatch)
    marker = os.path.join(run, "workers_ended", "worker_0")
    future = time.time() + YEAR
    os.utime(marker, (future, future))
    monkeypatch.setenv("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")
    monkeypatch.setenv("SMDEBUG_ENDED_WORKERS_WAIT", "1")
    trial = create_trial(run, wait_for_collections=0.1)
    assert not trial.loaded_all_steps  # just seen ended: a late worker is still waited for
    # The trial's own watch counts: once it has seen every worker ended for the wait, the run has ended,
    # whatever date the markers carry (before: their age read 0 for a year, "still training" all along).
    deadline = time.monotonic() + 20
    while not trial.loaded_all_steps and time.monotonic() < deadline:
        time.sleep(0.2)
        trial.refresh_data()
    assert trial.loaded_all_steps and trial.steps() == [0, 1, 2, 3, 4]


def test_the_time_left_to_wait_for_a_missing_worker_is_told(tmp_path, monkeypatch):
    run = one_of_two_workers(tmp_path / "run", monkeypatch)
    monkeypatch.setenv("SMDEBUG_ENDED_WORKERS_WAIT", "3600")
    trial = create_trial(run, wait_for_collections=0.1)
    assert not trial.loaded_all_steps
    assert 3000 < trial.ended_wait_left <= 3600, trial.ended_wait_left
