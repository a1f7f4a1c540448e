"""A run of two workers whose both ``workers_ended/`` markers are there but whose end marker is not (two ranks ending
together can each list the folder before the other's marker lands, and then neither writes it): the run has
ended, and a reader says so, not "still training" for ever (a DDP run's rules stayed InProgress, and a rule
comparing with it waited for its steps until the test timeout)."""

import os

from smdebug.core.locations import END_OF_JOB_FILE, WORKERS_ENDED_DIR
from smdebug.trials import create_trial

from _support import write_run


def test_a_run_whose_every_worker_ended_has_ended_without_its_marker(tmp_path):
    root = str(tmp_path / "run")
    write_run(root, range(3), workers=("worker_0", "worker_1"), num_workers=2, end=False)
    os.makedirs(os.path.join(root, WORKERS_ENDED_DIR), exist_ok=True)
    open(os.path.join(root, WORKERS_ENDED_DIR, "worker_0"), "w").close()
    trial = create_trial(root)
    assert not trial.loaded_all_steps  # one worker still writing, as far as a reader can tell
    open(os.path.join(root, WORKERS_ENDED_DIR, "worker_1"), "w").close()
    trial.refresh_data()
    assert trial.loaded_all_steps and not os.path.exists(os.path.join(root, END_OF_JOB_FILE))
    assert trial.steps() == [0, 1, 2]
