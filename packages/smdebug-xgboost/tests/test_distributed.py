"""A real two-worker XGBoost job: XGBoost's tracker and two processes joined by xgboost.collective on
127.0.0.1, read back with one trial."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import xgboost as xgb
from xgboost.tracker import RabitTracker

import smdebug.xgboost as smd

HERE = os.path.dirname(os.path.abspath(__file__))


def launch(out_dir, include_workers, world=2, stop_at=-1, env=None):
    tracker = RabitTracker(n_workers=world, host_ip="127.0.0.1", timeout=120)
    tracker.start()
    args = json.dumps(tracker.worker_args())
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": HERE, **(env or {})}
    procs = [subprocess.Popen([sys.executable, os.path.join(HERE, "dist_worker.py"), args, out_dir, include_workers,
                               str(stop_at)],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(world)]
    outs = [p.communicate(timeout=180) for p in procs]
    assert [p.returncode for p in procs] == [0] * world, "\n".join(o[1] for o in outs)
    tracker.wait_for(60)
    results = [json.loads(o[0].strip().splitlines()[-1]) for o in outs]
    return sorted(results, key=lambda r: r["rank"])


def test_every_worker_writes_its_own_files(tmp_path):
    out = str(tmp_path / "run")
    results = launch(out, "all")
    assert [(r["rank"], r["world"], r["worker"], r["num_workers"]) for r in results] == [
        (0, 2, "worker_0", 2), (1, 2, "worker_1", 2)]
    assert results[0]["gain"] == results[1]["gain"]  # one model, built together
    trial = smd.create_trial(out)
    assert trial.workers() == ["worker_0", "worker_1"] and trial.num_workers == 2
    assert trial.steps() == [0, 1, 2]
    assert sorted(os.listdir(os.path.join(out, "collections", "000000000"))) == [
        "worker_0_collections.json", "worker_1_collections.json"]
    rmse = trial.tensor("train-rmse")
    assert rmse.workers(2) == ["worker_0", "worker_1"]
    # the metric is evaluated over both shards: every worker reports the same value
    assert rmse.value(2, worker="worker_0") == rmse.value(2, worker="worker_1")
    for name in ("trees/Gain", "trees/Feature", "feature_importance/gain/f0"):
        np.testing.assert_array_equal(trial.tensor(name).value(2, worker="worker_0"),
                                      trial.tensor(name).value(2, worker="worker_1"))
    # labels and SHAP values come from each worker's own rows
    labels0 = trial.tensor("labels").value(1, worker="worker_0")
    labels1 = trial.tensor("labels").value(1, worker="worker_1")
    assert labels0.shape == labels1.shape == (100,) and not np.array_equal(labels0, labels1)
    assert trial.tensor("average_shap/f0").value(1, worker="worker_0") != \
        trial.tensor("average_shap/f0").value(1, worker="worker_1")


def test_only_worker_0_writes_by_default_and_a_stop_signal_stops_every_worker(tmp_path):
    out = str(tmp_path / "run")
    # Worker 0 plays a rule asking to stop at iteration 2. Worker 1 polls for the signal only every 30 s:
    # without the hooks agreeing it would carry on alone and fail in its next allreduce.
    results = launch(out, "one", stop_at=2)
    assert [r["worker"] for r in results] == ["worker_0", "worker_1"]
    assert [r["rounds"] for r in results] == [3, 3]  # of 50
    assert results[0]["stop_requested"]
    trial = smd.create_trial(out)
    assert trial.workers() == ["worker_0"] and trial.num_workers == 1
    assert trial.steps() == [0, 1, 2]
    assert trial.tensor("train-rmse").workers(0) == ["worker_0"]
    assert os.listdir(os.path.join(out, "collections", "000000000")) == ["worker_0_collections.json"]


def test_worker_detection_follows_the_collective(monkeypatch):
    from smdebug.core.plugins import manager

    manager.reset_for_tests()
    try:
        assert manager.detect_worker("xgboost").name == "worker_0"  # not distributed: a single worker
        monkeypatch.setattr(xgb.collective, "is_distributed", lambda: True)
        monkeypatch.setattr(xgb.collective, "get_rank", lambda: 3)
        monkeypatch.setattr(xgb.collective, "get_world_size", lambda: 4)
        worker = manager.detect_worker("xgboost")
        assert (worker.rank, worker.size, worker.name) == (3, 4, "worker_3")
        assert manager.detect_worker(None).name == "worker_3"
        assert manager.detect_worker("tensorflow").size == 1  # another framework's hook gets no answer here

        def broken():
            raise RuntimeError("communicator is gone")

        monkeypatch.setattr(xgb.collective, "is_distributed", broken)
        assert manager.detect_worker("xgboost").name == "worker_0"
    finally:
        manager.reset_for_tests()
