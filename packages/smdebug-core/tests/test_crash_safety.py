"""Crash safety: a training process killed with SIGKILL at random moments leaves a run whose every
visible step is complete and readable; SIGTERM and a normal interpreter exit flush and close the run.

The default run kills 5 processes; ``test_sigkill_many`` (marked ``slow``) kills 60. Run it with
``pytest --run-slow -m slow packages/smdebug-core/tests/test_crash_safety.py``.
"""

from __future__ import annotations

import os
import random
import signal
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from _fault_check import check_files_on_disk, check_trial, start_child

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def _wait_ready(proc, timeout=60.0):
    line = proc.stdout.readline()
    assert line.strip() == "READY", (line, proc.stderr.read() if proc.poll() is not None else "")


def kill_at_random(out_dir, seed):
    """Start a training child, SIGKILL it at a random moment, check what it left. Returns the steps."""
    rng = random.Random(seed)
    proc = start_child(out_dir)
    try:
        _wait_ready(proc)
        time.sleep(rng.uniform(0.0, 0.6))
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    assert not os.path.exists(os.path.join(out_dir, "training_job_end.ts"))
    steps = check_files_on_disk(out_dir)
    check_trial(out_dir, steps)
    return steps


def _kill_many(tmp_path, n, workers):
    with ThreadPoolExecutor(workers) as pool:
        results = list(pool.map(lambda i: kill_at_random(str(tmp_path / f"run{i}"), 1000 + i), range(n)))
    # The kills must land while steps are being written, not only before the first one.
    assert sum(1 for steps in results if steps) >= n // 2, results
    return results


def test_sigkill_at_random_moments(tmp_path):
    results = _kill_many(tmp_path, 5, 5)
    assert len(results) == 5


@pytest.mark.slow
def test_sigkill_many(tmp_path):
    results = _kill_many(tmp_path, 60, 8)
    total = sum(len(s) for s in results)
    print(f"\n60 SIGKILLs survived; {total} steps written before the kills, all readable")


def test_sigterm_flushes_and_closes(tmp_path):
    out = str(tmp_path / "run")
    proc = start_child(out)
    _wait_ready(proc)
    for _ in range(5):  # let a few steps happen
        assert proc.stdout.readline().startswith("STEP")
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    # The process still dies of SIGTERM (what its parent expects), after the hook closed the run.
    assert proc.returncode == -signal.SIGTERM, stderr
    assert os.path.exists(os.path.join(out, "training_job_end.ts")), stderr
    # The signal may land between two records of a step: that step is saved with what it had.
    steps = check_files_on_disk(out, partial_last_step=True)
    assert len(steps) >= 5
    trial = check_trial(out, steps, partial_last_step=True)
    assert trial.loaded_all_steps


@pytest.mark.slow
def test_sigterm_at_random_moments(tmp_path):
    """SIGTERM lands anywhere, also while the training thread holds the writer's lock in ``record``
    (the handler closes the hook on that thread: a plain lock hung the process there for good)."""
    rng = random.Random(os.environ.get("SMDEBUG_FAULT_SEED", "19"))
    for i in range(20):
        out = str(tmp_path / f"run{i}")
        proc = start_child(out)
        _wait_ready(proc)
        time.sleep(rng.uniform(0.0, 0.3))
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=60)
        assert proc.returncode == -signal.SIGTERM, stderr
        steps = check_files_on_disk(out, partial_last_step=True)
        if steps:  # (a signal before the first step leaves no run)
            check_trial(out, steps, partial_last_step=True)
    print("\n20 SIGTERMs at random moments: every process closed its run and died of SIGTERM")


def test_normal_exit_without_close_flushes(tmp_path):
    out = str(tmp_path / "run")
    proc = start_child(out, "--steps", 12)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    assert "TRAINING DONE 12" in stdout
    assert os.path.exists(os.path.join(out, "training_job_end.ts"))
    assert check_files_on_disk(out) == list(range(12))
    check_trial(out, list(range(12)))


def test_crashed_run_waits_are_bounded(tmp_path):
    """A run with no end marker: waiting for a step that never comes ends with TimeoutError, and after
    treat_as_ended() it ends with NoMoreData, never hanging."""
    from smdebug.exceptions import NoMoreData
    from smdebug.trials import create_trial

    out = str(tmp_path / "run")
    proc = start_child(out)
    _wait_ready(proc)
    for _ in range(10):
        proc.stdout.readline()
    time.sleep(0.3)  # let the writer thread put a few steps on disk
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    trial = create_trial(out, wait_for_collections=2.0, poll_interval=0.05)
    t0 = time.monotonic()
    with pytest.raises(TimeoutError):
        trial.wait_for_steps([10**6], timeout=0.5)
    assert time.monotonic() - t0 < 5
    trial.treat_as_ended()
    last = trial.steps()[-1]
    with pytest.raises(NoMoreData) as info:
        trial.wait_for_steps([10**6])
    assert info.value.last_step == last


_FORKED_WORKER_SCRIPT = r"""
import multiprocessing as mp, signal, sys, threading, time
sys.path.insert(0, sys.argv[2])
from _support import NumpyHook

def worker(ready, never):
    # A pool worker as MXNet's DataLoader has them: a thread of the framework's own (its engine) and a main
    # thread waiting for work in a semaphore. The main thread blocks SIGTERM here so that the signal is
    # sure to land on the other thread (the kernel may pick any thread that does not block it).
    threading.Thread(target=time.sleep, args=(600,), daemon=True).start()
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    ready.set()
    never.acquire()

if __name__ == "__main__":
    hook = NumpyHook(out_dir=sys.argv[1])  # installs the hook's SIGTERM handler in this process
    ctx = mp.get_context("fork")
    ready, never = ctx.Event(), ctx.Semaphore(0)
    child = ctx.Process(target=worker, args=(ready, never))
    child.start()
    assert ready.wait(30)
    child.terminate()  # SIGTERM, what multiprocessing.Pool.terminate() sends its workers
    child.join(20)
    print("EXITCODE", child.exitcode, flush=True)
    if child.exitcode is None:
        child.kill()
        child.join()
    hook.close()
"""


def test_forked_worker_dies_of_sigterm_whichever_thread_takes_it(tmp_path):
    """A process forked from one with a hook (DataLoader workers, multiprocessing pools) dies of SIGTERM at
    once: the hook's Python-level handler is not inherited. With it, a worker whose main thread waited in
    a semaphore while another thread took the signal never died, and Pool.terminate() (Gluon's DataLoader
    when deleted) waited for it forever."""
    import subprocess

    script = tmp_path / "forked_worker.py"
    script.write_text(_FORKED_WORKER_SCRIPT)
    proc = subprocess.run([sys.executable, str(script), str(tmp_path / "run"), os.path.dirname(__file__)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert f"EXITCODE {-signal.SIGTERM}" in proc.stdout, (proc.stdout, proc.stderr)
