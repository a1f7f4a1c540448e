"""A run whose training job died (killed, out of memory, a lost machine) has no end marker and never gets one:
``smdebug rules run`` said InProgress (exit 4) about it for ever, judging only the steps every worker had
written, with no way to ask for a final verdict from the command line. ``--ended`` (``run_rules(...,
ended=True)``) judges what the run holds as a finished run; without it the not-final sentence says so.

The jobs here are real: a PyTorch training process that kills itself with SIGKILL mid-training (no handler, no
atexit), alone or as one rank of a two-process gloo job whose other rank trains to the end."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip("torch")

from smdebug.exceptions import SMDebugValueError  # noqa: E402
from smdebug.rules import run_rules  # noqa: E402
from smdebug.rules.results import IN_PROGRESS  # noqa: E402
from smdebug_test_support.ctrl_c import sigint_as_a_terminal_gives_it  # noqa: E402

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts", "train_and_die.py")
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "GLOO_SOCKET_IFNAME": "lo"}


def rules_run(run, *args):
    done = subprocess.run([sys.executable, "-m", "smdebug.cli.main", "rules", "run", run, "--json", "--no-progress",
                           *args], capture_output=True, text=True, timeout=300)
    return done.returncode, (json.loads(done.stdout) if done.stdout.strip() else None), done.stderr


@pytest.fixture(scope="module")
def killed_run(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("killed") / "run")
    done = subprocess.run([sys.executable, SCRIPT, out, "80"], env=ENV, capture_output=True, text=True, timeout=240)
    assert done.returncode == -signal.SIGKILL, done.stderr
    return out


@pytest.fixture(scope="module")
def one_rank_killed(tmp_path_factory):
    base = tmp_path_factory.mktemp("ddp")
    out, init = str(base / "run"), str(base / "init")
    procs = [subprocess.Popen([sys.executable, SCRIPT, out, "30" if rank == 1 else "-1", init, str(rank), "2"],
                              env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for rank in (0, 1)]
    codes = [p.wait(timeout=240) for p in procs]
    assert codes == [0, -signal.SIGKILL], [codes, [p.stdout.read()[-2000:] for p in procs]]
    return out


def last_written_step(run) -> int:
    # (a file the SIGKILL caught mid-write is left as <name>.tmp: not written, and no reader takes it)
    return max(int(name[:12]) for folder in os.listdir(os.path.join(run, "index"))
               for name in os.listdir(os.path.join(run, "index", folder)) if not name.endswith(".tmp"))


def test_a_killed_run_is_not_final_and_says_how_to_judge_it(killed_run):
    code, result, err = rules_run(killed_run)
    assert code == 4 and result["status"] == IN_PROGRESS, (code, err)
    assert "--ended" in result["not_final"] and not result["read_as_ended"]


def test_ended_judges_a_killed_run_as_finished(killed_run):
    code, result, err = rules_run(killed_run, "--ended")
    # a final verdict: 0, 1, or 3 (OscillatingLoss needs 100 loss saves; the job died near step 75, the last
    # steps its writer had flushed vary from run to run, and with them whether SlowConvergence fires)
    assert code in (0, 1, 3) and result["status"] != IN_PROGRESS, (code, err)
    assert result["training_ended"] and result["read_as_ended"] and result["not_final"] is None
    # every step the job wrote before it died (the writer's last steps may have died with it)
    assert result["last_step"] == last_written_step(killed_run) >= 40
    slow = next(r for r in result["rules"] if r["name"] == "SlowConvergence")  # judged at the end of training
    assert slow["steps_evaluated"] == 1, slow
    table = subprocess.run([sys.executable, "-m", "smdebug.cli.main", "rules", "run", killed_run, "--ended",
                            "--no-progress"], capture_output=True, text=True, timeout=300).stdout
    assert "read as ended (--ended)" in table.splitlines()[0], table


def test_ended_reads_every_step_of_a_job_whose_other_rank_finished(one_rank_killed):
    # rank 0 trained its 120 steps and ended; rank 1 died at step 30: the run waits for rank 1 for ever and
    # judges only the steps both wrote
    code, result, err = rules_run(one_rank_killed)
    assert code == 4 and result["last_step"] < 30, (code, result and result["last_step"], err)
    # which worker the run waits for is said: the one that died
    assert "worker_1 has not ended while its other workers have" in result["not_final"], result["not_final"]
    assert "--ended" in result["not_final"]
    code, result, err = rules_run(one_rank_killed, "--ended")
    assert code in (0, 1) and result["read_as_ended"], (code, err)
    assert result["last_step"] == 119 == last_written_step(one_rank_killed) and result["steps_evaluated"] == 120


def test_ended_and_follow_contradict_each_other(killed_run):
    code, result, err = rules_run(killed_run, "--ended", "--follow")
    assert code == 2 and result is None and "--ended" in err and "Traceback" not in err
    with pytest.raises(SMDebugValueError, match="cannot be followed"):
        run_rules(killed_run, ended=True, follow=True)


def test_following_a_dead_run_until_ctrl_c_says_the_exit_status_it_returns(killed_run):
    # the verdict of what was read is InProgress (4), the command's status is the shell's 130: the table's
    # last line said "exit status 4" while the command exited 130
    proc = subprocess.Popen([sys.executable, "-m", "smdebug.cli.main", "rules", "run", killed_run, "--follow",
                             "--no-progress", "--rule", "ExplodingTensor"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=sigint_as_a_terminal_gives_it)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and "following" not in (proc.stderr.readline() or ""):
            pass
        time.sleep(2)  # (reading the run's steps)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130, (out, err)
    assert out.strip().splitlines()[-1] == "result: InProgress (exit status 130: the verdict's is 4)", out


# A Ctrl-C whose KeyboardInterrupt lands inside a __del__ (an object freed while the run is read) is printed as
# "Exception ignored" and dropped by Python; following a dead run then went on polling for ever. The followed
# process frees such an object at its first idle poll, and the Ctrl-C it sends itself there must still end it.
DROPPED_CTRL_C = """
import sys, time
from smdebug.rules import run_rules
from smdebug_test_support.ctrl_c import PressesCtrlCWhileFreed

polls = []
def on_progress(result):
    polls.append(time.monotonic())
    if len(polls) == 1:
        PressesCtrlCWhileFreed()

started = time.monotonic()
result = run_rules(sys.argv[1], ["ExplodingTensor"], follow=True, timeout=60, poll_interval=0.2,
                   on_progress=on_progress)
print(result.interrupted, round(time.monotonic() - started), len(polls))
"""


def test_a_ctrl_c_that_python_dropped_still_stops_following(killed_run):
    done = subprocess.run([sys.executable, "-c", DROPPED_CTRL_C, killed_run], capture_output=True, text=True,
                          timeout=240, preexec_fn=sigint_as_a_terminal_gives_it)
    assert done.returncode == 0, done.stderr
    assert "Exception ignored" in done.stderr and "KeyboardInterrupt" in done.stderr  # (it was dropped)
    interrupted, seconds, polls = done.stdout.split()
    assert interrupted == "True" and int(seconds) < 30, (done.stdout, done.stderr[-2000:])
