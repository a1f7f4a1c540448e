"""``smdebug run`` waits, bounded, for the processes the script started that outlive it (Linux).

A launcher in the script (Lightning's DDP strategy) can start the job's other ranks as its children and exit
first; the command now reports once they have ended too (the Lightning job itself is in smdebug-torch's
test_trainers_zero_code.py). Here the script is a real process that starts a real child and exits at once:
the child's end is waited for and a failure of it is named; one that never ends is waited for at most
SMDEBUG_RUN_CHILDREN_WAIT seconds, named, and left running. The command's output goes to files: a pipe would
be held open by the child, and the test would wait for it instead of the command.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the wait needs Linux's subreaper")


def _smdebug_run(tmp_path, child_code, env=None):
    """``smdebug run`` of a script that starts ``python -c child_code`` (which outlives it) and exits; returns
    (exit status, stderr, seconds taken, the child's pid)."""
    pid_file = tmp_path / "child.pid"
    script = ("import subprocess, sys\n"
              f"p = subprocess.Popen([sys.executable, '-c', {child_code!r}])\n"
              f"open({str(pid_file)!r}, 'w').write(str(p.pid))\n")
    start = time.monotonic()
    with open(tmp_path / "out", "w") as out, open(tmp_path / "err", "w") as err:
        status = subprocess.call([sys.executable, "-m", "smdebug.cli", "run", "--out-dir", str(tmp_path / "run"),
                                  "--", sys.executable, "-c", script], stdout=out, stderr=err,
                                 env={**os.environ, **(env or {})}, timeout=120)
    return status, (tmp_path / "err").read_text(), time.monotonic() - start, int(pid_file.read_text())


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_child_that_outlives_the_script_is_waited_for_and_its_failure_named(tmp_path):
    mark = tmp_path / "child_done"
    status, err, _, pid = _smdebug_run(
        tmp_path, f"import sys, time; time.sleep(3); open({str(mark)!r}, 'w').close(); sys.exit(3)")
    assert status == 0, err  # (the exit status is the script's)
    assert mark.exists(), err  # the child had ended when the command returned
    assert not _alive(pid)
    assert f"waiting for the processes it started (pid {pid})" in err, err
    assert f"a process the script started (pid {pid}) exited with status 3" in err, err


def test_a_child_that_never_ends_is_waited_for_a_bounded_time_named_and_left_running(tmp_path):
    status, err, took, pid = _smdebug_run(tmp_path, "import time; time.sleep(120)",
                                          env={"SMDEBUG_RUN_CHILDREN_WAIT": "2"})
    try:
        assert status == 0, err
        assert 2 <= took < 30, took
        assert f"1 process the script started is still running (pid {pid}) after 2 s" in err, err
        assert _alive(pid)  # (not killed: it is the user's)
    finally:
        os.kill(pid, signal.SIGKILL)
