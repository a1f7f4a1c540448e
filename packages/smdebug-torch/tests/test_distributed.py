"""Real two-process torch.distributed (gloo on 127.0.0.1) jobs read back with one trial (launched by dist_jobs)."""

import os

import numpy as np

import dist_jobs
import smdebug.pytorch as smd


def launch(out_dir, include_workers, skip_step=-1, world=2):
    dist_jobs.launch("dist_worker.py", [out_dir, include_workers, skip_step], world=world)


def test_all_workers_write_their_own_files(tmp_path):
    out = str(tmp_path / "run")
    launch(out, "all", skip_step=3)
    trial = smd.create_trial(out)
    assert trial.workers() == ["worker_0", "worker_1"] and trial.num_workers == 2
    assert trial.steps() == [0, 1, 2, 3, 4]
    marker = trial.tensor("rank_marker")
    assert marker.workers(2) == ["worker_0", "worker_1"]
    assert marker.workers(3) == ["worker_0"]  # rank 1 skipped its marker at step 3
    np.testing.assert_array_equal(marker.value(2, worker="worker_1"), [102, 102])
    np.testing.assert_array_equal(marker.value(4, worker="worker_0"), [4, 4])
    # DDP keeps replicas identical: both workers saved the same weights, different losses
    w = trial.tensor("MLP_fc1.weight")
    np.testing.assert_array_equal(w.value(4, worker="worker_0"), w.value(4, worker="worker_1"))
    loss = trial.tensor("CrossEntropyLoss_output_0")
    assert loss.value(0, worker="worker_0") != loss.value(0, worker="worker_1")
    assert sorted(os.listdir(os.path.join(out, "collections", "000000000"))) == [
        "worker_0_collections.json", "worker_1_collections.json"]


def test_only_rank_zero_writes_by_default(tmp_path):
    out = str(tmp_path / "run")
    launch(out, "one")
    trial = smd.create_trial(out)
    assert trial.workers() == ["worker_0"] and trial.num_workers == 1
    assert trial.tensor("rank_marker").workers(1) == ["worker_0"]
    assert not any("worker_1" in f for _, _, files in os.walk(out) for f in files)
