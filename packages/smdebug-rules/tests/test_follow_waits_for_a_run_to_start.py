"""`smdebug rules run RUN --follow` started before training, without --timeout, waits for the run to begin.

The README's way to judge a run live is to start the follower first. With no --timeout it said "no smdebug run
at RUN: the directory is empty" and exited 2 at once (probe 13b F2): the wait it passed to the trial was None,
which means "do not wait"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

pytest.importorskip("torch")

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts", "train_and_die.py")


@pytest.mark.parametrize("folder", ["empty", "missing"])
def test_a_follower_started_before_training_judges_the_run(tmp_path, folder):
    run = tmp_path / "run"
    if folder == "empty":
        run.mkdir()
    follower = subprocess.Popen([sys.executable, "-m", "smdebug.cli.main", "rules", "run", str(run), "--follow",
                                 "--rule", "ExplodingTensor", "--poll-interval", "0.5", "--json", "--no-progress"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(3)
        assert follower.poll() is None, follower.communicate()  # still waiting for the run to begin
        trained = subprocess.run([sys.executable, SCRIPT, str(run), "-1"], capture_output=True, text=True,
                                 timeout=240, env={**os.environ, "OMP_NUM_THREADS": "1"})
        assert trained.returncode == 0, trained.stderr
        out, err = follower.communicate(timeout=180)
    finally:
        if follower.poll() is None:
            follower.kill()
    assert follower.returncode == 0, err
    result = json.loads(out)
    assert result["training_ended"] and result["rules"][0]["status"] == "NoIssuesFound", result
    assert result["steps_evaluated"] == 120
