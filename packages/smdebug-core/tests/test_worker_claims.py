"""Two processes of a multi-worker job that resolve to one worker name (red-team pass 5, F2): the same
SMDEBUG_WORKER_NAME, or a launcher that gives every process rank 0. Before, both wrote every step under that
name and replaced each other's files without a word. Now each worker name is claimed
(``claims/<worker>.json``, see smdebug.core.out_dir): the second process logs one error and its hook is
disabled, training goes on, and the run holds one process's steps. A claim left by a process that is gone
does not block a restart. Real processes, real runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from _support import NumpyHook
from smdebug import SaveConfig
from smdebug.core.out_dir import worker_claim_key
from smdebug.trials import create_trial

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX processes")
LAUNCHER_VARS = ["RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "HOROVOD_RANK",
                 "HOROVOD_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "SMDEBUG_WORKER_NAME", "SMDEBUG_NUM_WORKERS",
                 "SMDEBUG_TEST_RANK", "SMDEBUG_TEST_WORLD_SIZE"]
STEPS = 8

# One process of the job: its identity only from the launcher's environment; it saves a value that says
# which process wrote it (``seed``), waits for the others to have begun (so that they overlap for sure),
# and reports whether its hook ended disabled. ``--die-at``: a crash (no close) when that step begins.
JOB = textwrap.dedent('''
    import json, os, sys, time
    import numpy as np
    from smdebug import SaveConfig
    from smdebug.core.collection import Collection
    from smdebug.core.hook import BaseHook

    class EnvHook(BaseHook):
        framework_name = "env-test"
        def default_collections(self):
            return [Collection("weights", include_regex=["^w"])]

    out, seed, barrier, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    die_at = int(sys.argv[5]) if len(sys.argv) > 5 else None
    hook = EnvHook(out_dir=out, save_config=SaveConfig(save_interval=1), include_collections=["weights"],
                   include_workers="all")
    for step in range(%d):
        if step == die_at:
            os._exit(3)
        hook.begin_step()
        hook.record("w", np.full(4, seed * 1000 + step, dtype=np.float64))
        hook.end_step()
        if step == 0 and n > 1:
            open(os.path.join(barrier, str(seed)), "w").close()
            deadline = time.time() + 60
            while len(os.listdir(barrier)) < n and time.time() < deadline:
                time.sleep(0.02)
    hook.close()
    print(json.dumps({"seed": seed, "worker": hook.worker, "disabled": hook.disabled}))
''' % STEPS)


@pytest.fixture(autouse=True)
def _quick_end(monkeypatch):
    monkeypatch.setenv("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")
    monkeypatch.setenv("SMDEBUG_MISSING_WORKERS_WAIT", "1")


def launch(tmp_path, out, envs, die_at=None):
    """One real process per environment in ``envs``, all at once; (results, stderr) per process."""
    script = tmp_path / "job.py"
    script.write_text(JOB)
    barrier = tmp_path / f"barrier-{time.monotonic_ns()}"
    barrier.mkdir()
    base = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS}
    procs = [subprocess.Popen([sys.executable, str(script), str(out), str(seed + 1), str(barrier), str(len(envs)),
                               *([str(die_at)] if die_at is not None else [])],
                              env={**base, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for seed, env in enumerate(envs)]
    results = []
    for p in procs:
        out_text, err = p.communicate(timeout=300)
        err = out_text + err  # (smdebug's log may go to either)
        if die_at is not None:
            assert p.returncode == 3, err[-3000:]
            results.append((None, err))
            continue
        assert p.returncode == 0, err[-3000:]
        results.append((json.loads(out_text.strip().splitlines()[-1]), err))
    return results


def values_of(out, worker):
    w = create_trial(str(out)).tensor("w")
    return {step: float(w.value(step, worker=worker)[0]) for step in w.steps(show_incomplete_steps=True)}


def check_one_writer(out, results, worker):
    """One process wrote, the other said why it does not, once, and trained to its end all the same."""
    writers = [r for r, _ in results if not r["disabled"]]
    refused = [(r, err) for r, err in results if r["disabled"]]
    assert len(writers) == 1 and len(refused) == 1, results
    _, err = refused[0]
    lines = [line for line in err.splitlines() if "already writes worker" in line]
    assert len(lines) == 1 and f"worker {worker!r}" in lines[0] and "Training continues" in lines[0], err
    seed = writers[0]["seed"]
    assert values_of(out, worker) == {step: seed * 1000 + step for step in range(STEPS)}  # never mixed
    assert not os.listdir(out / "claims")  # released at close


@pytest.mark.parametrize("envs", [
    [{"RANK": "0", "WORLD_SIZE": "2", "SMDEBUG_WORKER_NAME": "dup"},
     {"RANK": "1", "WORLD_SIZE": "2", "SMDEBUG_WORKER_NAME": "dup"}],
    [{"RANK": "0", "WORLD_SIZE": "2"}, {"RANK": "0", "WORLD_SIZE": "2"}],
], ids=["same-worker-name", "both-rank-0"])
def test_two_processes_with_one_worker_name(tmp_path, envs):
    out = tmp_path / "run"
    results = launch(tmp_path, out, envs)
    check_one_writer(out, results, "dup" if "SMDEBUG_WORKER_NAME" in envs[0] else "worker_0")


def test_distinct_workers_are_not_affected(tmp_path):
    out = tmp_path / "run"
    results = launch(tmp_path, out, [{"RANK": str(r), "WORLD_SIZE": "2"} for r in range(2)])
    assert not any(r["disabled"] for r, _ in results)
    trial = create_trial(str(out))
    assert trial.workers() == ["worker_0", "worker_1"] and trial.steps() == list(range(STEPS))
    assert trial.loaded_all_steps  # both ended: the claims folder is no worker of the run
    assert values_of(out, "worker_1") == {step: 2000 + step for step in range(STEPS)}


def test_a_restart_after_a_crash_takes_over_the_dead_process_claim(tmp_path):
    """The crashed process never released its claim; its pid is gone, so the claim is stale."""
    out = tmp_path / "run"
    env = {"RANK": "0", "WORLD_SIZE": "2", "SMDEBUG_WORKER_NAME": "w"}
    launch(tmp_path, out, [env], die_at=4)
    assert (out / worker_claim_key("w")).exists()
    (result, err), = launch(tmp_path, out, [env])
    assert not result["disabled"] and "taking over the claim of worker 'w'" in err, err
    assert values_of(out, "w") == {step: 1000 + step for step in range(STEPS)}


# --- claims planted by hand: another machine, a reused pid -----------------------------------------------
def _multi_worker_hook(out, monkeypatch):
    monkeypatch.setenv("SMDEBUG_TEST_RANK", "0")
    monkeypatch.setenv("SMDEBUG_TEST_WORLD_SIZE", "2")
    return NumpyHook(str(out), save_config=SaveConfig(save_interval=1), include_workers="all")


def _train(hook, steps=3):
    for step in range(steps):
        hook.begin_step()
        hook.record("loss", np.array([float(step)], dtype=np.float32))
        hook.end_step()
    hook.close()


def _plant(out, owner: dict, age: float = 0.0):
    path = out / worker_claim_key("worker_0")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(owner))
    if age:
        os.utime(path, (time.time() - age, time.time() - age))
    return path


def test_a_live_claim_from_another_machine_keeps_this_process_out(tmp_path, monkeypatch, smdebug_log):
    out = tmp_path / "run"
    planted = _plant(out, {"pid": 1, "host": "another-machine", "since": time.time()})
    hook = _multi_worker_hook(out, monkeypatch)
    _train(hook)
    assert hook.disabled
    said = [m for m in smdebug_log.messages() if "already writes worker" in m]
    assert len(said) == 1 and "pid 1 on another-machine" in said[0] and "SMDEBUG_CLAIM_STALE" in said[0]
    assert planted.exists() and not (out / "index").exists()  # the other's claim is left alone


def test_a_claim_from_another_machine_left_alone_is_stale(tmp_path, monkeypatch, smdebug_log):
    out = tmp_path / "run"
    _plant(out, {"pid": 1, "host": "another-machine"}, age=1000)  # not refreshed for 1000 s (> 300)
    hook = _multi_worker_hook(out, monkeypatch)
    _train(hook)
    assert not hook.disabled and len(list((out / "index").rglob("*_worker_0.json"))) == 3


def test_the_owner_keeps_its_claim_fresh(tmp_path, monkeypatch):
    monkeypatch.setenv("SMDEBUG_CLAIM_REFRESH", "0.2")
    out = tmp_path / "run"
    hook = _multi_worker_hook(out, monkeypatch)
    hook.begin_step()
    hook.record("loss", np.array([1.0], dtype=np.float32))
    claim = out / worker_claim_key("worker_0")
    os.utime(claim, (time.time() - 1000, time.time() - 1000))
    time.sleep(1.0)
    assert time.time() - claim.stat().st_mtime < 5
    assert json.loads(claim.read_text())["pid"] == os.getpid()
    hook.end_step()
    hook.close()
    assert not claim.exists()


def test_a_pid_now_used_by_another_process_is_stale(tmp_path, monkeypatch):
    """Same machine: the claim's pid is alive, but that process started at another time (pid reuse)."""
    import socket

    out = tmp_path / "run"
    _plant(out, {"pid": os.getppid(), "host": socket.gethostname(), "started": "1"})
    hook = _multi_worker_hook(out, monkeypatch)
    _train(hook)
    assert not hook.disabled


def test_a_live_process_on_this_machine_keeps_its_claim(tmp_path, monkeypatch):
    import socket

    from smdebug.core.out_dir import process_start

    out = tmp_path / "run"
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        _plant(out, {"pid": sleeper.pid, "host": socket.gethostname(), "started": process_start(sleeper.pid)})
        hook = _multi_worker_hook(out, monkeypatch)
        _train(hook)
        assert hook.disabled
    finally:
        sleeper.kill()
        sleeper.wait()
    hook = _multi_worker_hook(out, monkeypatch)  # its process is gone now: the claim is stale
    _train(hook)
    assert not hook.disabled


# --- S3 (moto): a conditional PUT makes the claim --------------------------------------------------------
def test_moto_supports_the_conditional_put(s3_run):
    """The claim relies on If-None-Match: * (AWS S3 has it since 2024; moto 5 too)."""
    import boto3
    from botocore.exceptions import ClientError

    st = s3_run.storage
    client = boto3.client("s3")
    key = st._key("probe")
    client.put_object(Bucket=st.bucket, Key=key, Body=b"1", IfNoneMatch="*")
    with pytest.raises(ClientError) as e:
        client.put_object(Bucket=st.bucket, Key=key, Body=b"2", IfNoneMatch="*")
    assert e.value.response["Error"]["Code"] == "PreconditionFailed"


def test_two_processes_with_one_worker_name_on_s3(tmp_path, s3_run):
    env = {"WORLD_SIZE": "2", "SMDEBUG_WORKER_NAME": "dup"}
    results = launch(tmp_path, str(s3_run), [{**env, "RANK": "0"}, {**env, "RANK": "1"}])
    writers = [r for r, _ in results if not r["disabled"]]
    assert len(writers) == 1, results
    assert sum("already writes worker 'dup'" in err for _, err in results) == 1
    w = create_trial(str(s3_run)).tensor("w")
    assert {s: float(w.value(s, worker="dup")[0]) for s in w.steps(show_incomplete_steps=True)} == {
        s: writers[0]["seed"] * 1000 + s for s in range(STEPS)}
    assert not s3_run.keys("claims")


def test_a_stale_claim_on_s3_is_taken_over(s3_run, monkeypatch, smdebug_log):
    s3_run.write(worker_claim_key("worker_0"), json.dumps({"pid": 1, "host": "another-machine"}))
    hook = _multi_worker_hook(s3_run, monkeypatch)
    _train(hook)
    assert hook.disabled and not s3_run.keys("index")
    monkeypatch.setenv("SMDEBUG_S3_CLAIM_STALE", "0")  # the other owner stopped refreshing its claim
    hook = _multi_worker_hook(s3_run, monkeypatch)
    _train(hook)
    assert not hook.disabled and len(s3_run.keys("index")) == 3
