"""Worker identity without a framework (launcher environment variables, overrides) and many processes
writing one run, checked through a trial."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from smdebug.core.plugins import WorkerInfo
from smdebug.core.plugins.worker_env import apply_overrides, worker_from_env
from smdebug.trials import create_trial

JOB = Path(__file__).parent / "workers_job.py"
LAUNCHER_VARS = ["RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "HOROVOD_RANK",
                 "HOROVOD_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "SMDEBUG_WORKER_NAME", "SMDEBUG_NUM_WORKERS"]


@pytest.fixture
def clean_env(monkeypatch):
    for var in LAUNCHER_VARS:
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def launch(out, size, env_for_rank, steps=10, tensors=3, extra_args=lambda rank: [], crashing=()):
    """Start ``size`` real processes, as a launcher would, each with its own environment."""
    base = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS}
    procs = [subprocess.Popen([sys.executable, str(JOB), str(out), "--steps", str(steps), "--tensors", str(tensors),
                               *extra_args(rank)], env={**base, **env_for_rank(rank)}, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
             for rank in range(size)]
    results = []
    for rank, p in enumerate(procs):
        out_text, err = p.communicate(timeout=300)
        if rank in crashing:
            assert p.returncode == 3, err[-3000:]
            results.append(None)
            continue
        assert p.returncode == 0, err[-3000:]
        results.append(json.loads(out_text.strip().splitlines()[-1]))
    return results


# --- detection order -------------------------------------------------------------------------------------
@pytest.mark.parametrize("rank_var, size_var", [("RANK", "WORLD_SIZE"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
                                                ("HOROVOD_RANK", "HOROVOD_SIZE"), ("SLURM_PROCID", "SLURM_NTASKS")])
def test_each_launcher_is_recognised(clean_env, rank_var, size_var):
    clean_env.setenv(rank_var, "2")
    clean_env.setenv(size_var, "4")
    assert worker_from_env() == WorkerInfo(2, 4, "worker_2")


def test_launcher_order_and_bad_values(clean_env, caplog):
    clean_env.setenv("SLURM_PROCID", "1")
    clean_env.setenv("SLURM_NTASKS", "2")
    clean_env.setenv("RANK", "3")
    clean_env.setenv("WORLD_SIZE", "8")
    assert worker_from_env().rank == 3  # torchrun's variables come first
    clean_env.setenv("RANK", "x")
    assert worker_from_env() == WorkerInfo(1, 2)  # unusable pair skipped (with a warning)
    assert "ignoring RANK='x'" in caplog.text
    clean_env.setenv("RANK", "9")
    assert worker_from_env() == WorkerInfo(1, 2)  # rank outside the world size
    clean_env.delenv("SLURM_PROCID")
    assert worker_from_env() is None


def test_overrides(clean_env):
    clean_env.setenv("SMDEBUG_WORKER_NAME", "trainer-a")
    clean_env.setenv("SMDEBUG_NUM_WORKERS", "3")
    assert apply_overrides(WorkerInfo(1, 2)) == WorkerInfo(1, 3, "trainer-a")
    clean_env.setenv("SMDEBUG_NUM_WORKERS", "1")  # cannot hold rank 1: ignored
    assert apply_overrides(WorkerInfo(1, 2)) == WorkerInfo(1, 2, "trainer-a")


# --- real multi-process jobs -----------------------------------------------------------------------------
def test_env_var_launcher_two_processes(tmp_path):
    out = tmp_path / "run"
    results = launch(out, 2, lambda r: {"RANK": str(r), "WORLD_SIZE": "2"}, extra_args=lambda r: [])
    assert [r["worker"] for r in results] == ["worker_0", "worker_1"]
    trial = create_trial(str(out))
    assert trial.workers() == ["worker_0", "worker_1"] and trial.num_workers == 2
    np.testing.assert_array_equal(trial.tensor("w1").value(4, worker="worker_1"), np.full(8, 1_000_401.0))


def test_include_workers_one_keeps_rank_zero(tmp_path):
    out = tmp_path / "run"
    launch(out, 2, lambda r: {"OMPI_COMM_WORLD_RANK": str(r), "OMPI_COMM_WORLD_SIZE": "2"},
           extra_args=lambda r: ["--include-workers", "one"])
    trial = create_trial(str(out))
    assert trial.workers() == ["worker_0"] and trial.steps() == list(range(10))


def test_named_workers_by_override(tmp_path):
    out = tmp_path / "run"
    results = launch(out, 2, lambda r: {"HOROVOD_RANK": str(r), "HOROVOD_SIZE": "2",
                                        "SMDEBUG_WORKER_NAME": ["chief", "helper"][r]}, extra_args=lambda r: [])
    assert [r["worker"] for r in results] == ["chief", "helper"]
    assert create_trial(str(out)).workers() == ["chief", "helper"]


def test_workers_with_different_saved_steps(tmp_path):
    out = tmp_path / "run"
    launch(out, 2, lambda r: {"RANK": str(r), "WORLD_SIZE": "2"},
           extra_args=lambda r: ["--skip-steps", "3,4"] if r == 1 else [])
    trial = create_trial(str(out))
    w = trial.tensor("w0")
    assert w.workers(2) == ["worker_0", "worker_1"] and w.workers(3) == ["worker_0"]
    assert trial.steps() == list(range(10))


def test_stress_four_processes_hundreds_of_steps(tmp_path):
    """Every (step, worker, tensor) present exactly once and equal to what that process saved."""
    out = tmp_path / "run"
    steps, tensors, size = 300, 4, 4
    launch(out, size, lambda r: {"RANK": str(r), "WORLD_SIZE": str(size)}, steps=steps, tensors=tensors,
           extra_args=lambda r: [])
    index_files = sorted(p.name for p in (out / "index").rglob("*.json"))
    assert len(index_files) == len(set(index_files)) == steps * size
    trial = create_trial(str(out))
    assert trial.workers() == [f"worker_{r}" for r in range(size)]
    assert trial.steps() == list(range(steps))
    for t in range(tensors):
        tensor = trial.tensor(f"w{t}")
        assert tensor.steps() == list(range(steps))
        for step in range(steps):
            assert tensor.workers(step) == [f"worker_{r}" for r in range(size)]
            for r in range(size):
                np.testing.assert_array_equal(tensor.value(step, worker=f"worker_{r}"),
                                              np.full(8, r * 1_000_000 + step * 100 + t, dtype=np.float64))


def test_a_worker_that_dies_mid_run(tmp_path):
    """Its last steps never complete: the trial says so, waits are bounded, and the run can be read as
    ended on request."""
    out = tmp_path / "run"
    launch(out, 2, lambda r: {"RANK": str(r), "WORLD_SIZE": "2"},
           extra_args=lambda r: ["--die-at", "6", "--step-time", "0.1"] if r == 1 else [], crashing={1})
    trial = create_trial(str(out))
    assert not trial.loaded_all_steps  # the last worker never finished: no end marker
    complete = trial.steps()
    assert complete == list(range(len(complete))) and 3 <= len(complete) <= 6  # the dead worker's last write
    assert trial.steps(show_incomplete_steps=True) == list(range(10))
    with pytest.raises(TimeoutError):
        trial.wait_for_steps([9], timeout=1)
    assert trial.tensor("w0").workers(9) == ["worker_0"]
    trial.treat_as_ended()
    assert trial.steps() == list(range(10))
    np.testing.assert_array_equal(trial.tensor("w0").value(9), np.full(8, 900.0))


def test_a_worker_that_died_before_saving_anything_does_not_hang_the_trial(tmp_path, monkeypatch):
    monkeypatch.setenv("SMDEBUG_MISSING_WORKERS_WAIT", "1")
    out = tmp_path / "run"
    launch(out, 2, lambda r: {"RANK": str(r), "WORLD_SIZE": "2"},
           extra_args=lambda r: ["--die-at", "0"] if r == 1 else [], crashing={1})
    trial = create_trial(str(out))  # one collection file of two: bounded wait, then a warning
    assert trial.workers() == ["worker_0"] and not trial.loaded_all_steps
    assert trial.steps(show_incomplete_steps=True) == list(range(10))
    trial.treat_as_ended()
    assert trial.steps() == list(range(10))
