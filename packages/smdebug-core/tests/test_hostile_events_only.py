"""A run folder holding events but neither collections nor index files (both removed, or a link where a folder
was), with no end marker, opened without asking to wait: a hook writes its collections before anything of a step,
so none is coming. create_trial waited for them for ever (the slow vandalism test hung on such a folder); it now
waits SMDEBUG_MISSING_WORKERS_WAIT seconds at most, then says what is missing."""

import os
import shutil
import time

import pytest

from smdebug.exceptions import MissingCollectionFiles
from smdebug.trials import create_trial

from _hostile import write_simple_run


@pytest.mark.parametrize("events", ["folder", "link"])
def test_a_run_of_events_alone_is_refused_after_a_bounded_wait(tmp_path, monkeypatch, events):
    monkeypatch.setenv("SMDEBUG_MISSING_WORKERS_WAIT", "1")
    run = write_simple_run(tmp_path / "run")
    for name in ("collections", "index", "training_job_end.ts"):
        path = os.path.join(run, name)
        shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
    if events == "link":  # (the events folder moved aside and a link left in its place)
        os.rename(os.path.join(run, "events"), os.path.join(run, "events.x"))
        os.symlink(str(tmp_path), os.path.join(run, "events"))
    start = time.monotonic()
    with pytest.raises(MissingCollectionFiles, match="no collection file after waiting 1s"):
        create_trial(run)
    assert time.monotonic() - start < 30
