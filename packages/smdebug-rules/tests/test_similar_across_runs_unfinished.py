"""SimilarAcrossRuns against a run that never ends (its job killed: no end marker, half its steps).

Judged afterwards, the rule waited for ever for the other run to reach the steps it compares; now nothing is
waited for and the steps past the other run's last are said not to have been compared. Followed, the wait is
the runner's timeout."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip("torch")

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts", "train_and_die.py")
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def train(out, die_at):
    done = subprocess.run([sys.executable, SCRIPT, out, str(die_at)], env=ENV, capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == (0 if die_at < 0 else -signal.SIGKILL), done.stderr
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The same seeded training twice: one finished, one killed at step 60 of 120."""
    base = tmp_path_factory.mktemp("similar")
    return train(str(base / "finished"), -1), train(str(base / "killed"), 60)


def judge(run, other, *args):
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "smdebug.cli.main", "rules", "run", run, "--rule",
                           "SimilarAcrossRuns", "--other-trials", other, "--json", "--no-progress", *args],
                          capture_output=True, text=True, timeout=120)
    return done.returncode, json.loads(done.stdout), time.monotonic() - start


def test_judged_afterwards_nothing_is_waited_for_and_the_uncompared_steps_are_said(runs):
    finished, killed = runs
    code, result, took = judge(finished, killed)
    rule = result["rules"][0]
    assert rule["status"] == "NoIssuesFound", rule  # the steps both runs have are equal (same seeds)
    assert code == 0
    assert "had not reached TRAIN step" in rule["detail"] and "not compared" in rule["detail"], rule
    assert 0 < rule["steps_evaluated"] < result["steps_evaluated"], rule
    assert took < 60, took


def test_a_run_that_has_no_step_of_the_base_run_yet_is_not_evaluated(runs, tmp_path):
    finished, _ = runs
    early = train(str(tmp_path / "early"), 15)  # killed at step 15: judged from step 20, it has none of them
    code, result, _ = judge(finished, early, "--start-step", "20")
    rule = result["rules"][0]
    assert rule["status"] == "NotEvaluated", rule
    assert code == 3
    assert "had not reached TRAIN step" in rule["detail"], rule


def test_followed_it_waits_no_longer_than_the_timeout(runs):
    finished, killed = runs
    code, result, took = judge(finished, killed, "--follow", "--timeout", "3", "--poll-interval", "0.5")
    rule = result["rules"][0]
    assert rule["status"] == "NoIssuesFound" and "had not reached TRAIN step" in rule["detail"], rule
    assert took < 60, took
