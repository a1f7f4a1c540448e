"""Opening a path: no run there fails at once and says so; waiting for a run about to start is explicit.

Each case runs on a local directory and on an S3 prefix of a moto server (``run_loc``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

from _support import write_run
from smdebug.core.locations import CLAIM_FILE
from smdebug.exceptions import MissingCollectionFiles, NoSmdebugRun
from smdebug.trials import create_trial

HERE = os.path.dirname(__file__)
#: a path with no run must fail well inside this (the original waited forever, logging every 20 s)
FAST_S = 5.0


@pytest.fixture(autouse=True)
def fast_end_refresh(monkeypatch):
    monkeypatch.setenv("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")


def _fails_fast(path, match):
    start = time.monotonic()
    with pytest.raises(NoSmdebugRun, match=match) as info:
        create_trial(path)
    assert time.monotonic() - start < FAST_S
    assert str(info.value).startswith(f"no smdebug run at {path}")
    assert "wait_for_collections" in str(info.value)  # the way to wait instead is in the message
    return info.value


def test_a_path_that_does_not_exist(run_loc):
    missing = run_loc.sub("no/such/run")
    err = _fails_fast(str(missing), "does not exist" if not run_loc.is_s3 else "no object under this prefix")
    assert isinstance(err, MissingCollectionFiles)  # what code written for the original catches


def test_a_folder_that_is_not_a_run(run_loc):
    run_loc.write("notes.txt", "not a run")
    run_loc.write("data/train.csv", "1,2,3")
    _fails_fast(str(run_loc), "none of the files a hook writes" if not run_loc.is_s3 else "no object under")


def test_an_empty_directory_and_a_file(tmp_path):
    _fails_fast(str(tmp_path), "the directory is empty")
    (tmp_path / "f").write_text("x")
    _fails_fast(str(tmp_path / "f"), "a file, not a run directory")


def test_a_missing_bucket_is_named(moto_server):
    from smdebug.core.storage.errors import StorageBucketNotFound

    with pytest.raises(StorageBucketNotFound, match="no-such-bucket-smd"):
        create_trial("s3://no-such-bucket-smd/run")


def test_a_run_that_has_started_is_not_refused(run_loc):
    """A hook's claim is there, its collections not yet: a run starting, not 'no run'."""
    run_loc.write(CLAIM_FILE, str(os.getpid()))
    with pytest.raises(MissingCollectionFiles, match="has started") as info:
        create_trial(str(run_loc), wait_for_collections=0.3, poll_interval=0.05)
    assert not isinstance(info.value, NoSmdebugRun)


def test_an_explicit_wait_that_runs_out(run_loc):
    start = time.monotonic()
    with pytest.raises(NoSmdebugRun, match=r"after waiting 0.5s"):
        create_trial(str(run_loc.sub("later")), wait_for_collections=0.5, poll_interval=0.05)
    assert 0.5 <= time.monotonic() - start < FAST_S


def test_waiting_for_a_run_about_to_start(run_loc):
    """The trial is opened before the training process has created anything; it waits as asked."""
    code = textwrap.dedent(
        f"""
        import time
        from _support import NumpyHook, train_logistic_regression
        from smdebug import SaveConfig
        time.sleep(1.0)
        hook = NumpyHook(out_dir={str(run_loc)!r}, save_config=SaveConfig(save_interval=1))
        train_logistic_regression(hook, steps=4)
        hook.close()
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": HERE})
    try:
        trial = create_trial(str(run_loc), wait_for_collections=120, poll_interval=0.05)
        trial.wait_for_steps([3])
        assert trial.steps()[:4] == [0, 1, 2, 3]
    finally:
        assert proc.wait(timeout=120) == 0


def test_out_dir_is_the_path(run_loc):
    """The seed documents write create_trial(out_dir=...), the hooks' name for the same directory."""
    write_run(run_loc, range(2))
    trial = create_trial(out_dir=str(run_loc))
    assert trial.steps() == [0, 1] and trial.path.rstrip("/") == str(run_loc).rstrip("/")
    with pytest.raises(TypeError, match="not both"):
        create_trial(str(run_loc), out_dir=str(run_loc))
    with pytest.raises(TypeError, match="needs the run's path"):
        create_trial()


def test_cli_says_no_run_and_how_to_wait(run_loc, smdebug_cli, tmp_path):
    # (plot's output is a regular file: a device such as /dev/null is refused before the run is looked at)
    for command in (["ls"], ["show", "--step", "0"], ["plot", "-o", str(tmp_path / "loss.png")]):
        args = [command[0], str(run_loc.sub("nothing")), *(["loss"] if command[0] != "ls" else []), *command[1:]]
        out = smdebug_cli(*args, timeout=300)  # a wait would never end: the timeout is the check
        assert out.returncode == 2, out
        assert f"no smdebug run at {run_loc.sub('nothing')}" in out.stderr, out.stderr
        assert "--wait SECONDS" in out.stderr and "Traceback" not in out.stderr
        assert out.stdout == ""
