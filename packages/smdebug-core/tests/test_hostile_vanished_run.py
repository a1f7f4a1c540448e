"""A run whose files are all removed while a trial opens it: the trial said nothing for ever (it waited for the
collections of a run that no longer exists; the slow vandalism test hung on one). It now fails as on a path with
no run, at the next look."""

from __future__ import annotations

import os
import threading
import time

import pytest

from smdebug.exceptions import NoSmdebugRun
from smdebug.trials import create_trial


def test_a_run_emptied_while_it_is_opened_is_no_run(tmp_path):
    run = tmp_path / "run"
    (run / "index" / "000000000").mkdir(parents=True)  # a run that has begun: its index folder, no collections
    (run / "index" / "000000000" / "000000000000_worker_0.json").write_text("{}")

    def empty_it():
        time.sleep(0.5)
        for root, dirs, files in os.walk(run, topdown=False):
            for f in files:
                os.unlink(os.path.join(root, f))
            for d in dirs:
                os.rmdir(os.path.join(root, d))

    thread = threading.Thread(target=empty_it)
    thread.start()
    started = time.monotonic()
    try:
        with pytest.raises(NoSmdebugRun, match="empty"):
            create_trial(str(run))
    finally:
        thread.join()
    assert time.monotonic() - started < 20
