"""Horovod for TensorFlow: a real `horovodrun -np 2 -H localhost:2 --gloo` job (horovod.tensorflow, Keras 3,
the KerasHook in a GradientTape loop; see hvd_worker.py), read with one trial.

Runs in the `horovod_tf` nox session, which builds Horovod 0.28.1 for TensorFlow 2.21 once
(tools/build_horovod.py --framework tf) and caches the wheel; elsewhere these tests are skipped.
"""

import os
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("horovod.tensorflow", reason="Horovod is installed by the `horovod_tf` nox session only")

from smdebug_test_support.horovod import run_horovod_job  # noqa: E402
from smdebug.trials import create_trial  # noqa: E402

WORKER = Path(__file__).parent / "hvd_worker.py"
STEPS = 5


def horovodrun(out, *args):
    # TF_CONFIG would make the workers a MultiWorkerMirroredStrategy cluster; TF's start-up chatter would
    # fill their logs.
    return run_horovod_job(WORKER, [out, "--steps", STEPS, *args], drop_env=("RANK", "WORLD_SIZE", "TF_CONFIG"),
                           extra_env={"TF_CPP_MIN_LOG_LEVEL": "2"})


def test_horovod_all_workers(tmp_path):
    out = tmp_path / "run"
    results = horovodrun(out, "--include-workers", "all")
    # The plugin answered from horovod.tensorflow, and the hook named each process by Horovod's rank.
    for rank in (0, 1):
        assert results[rank]["detected"] == [rank, 2]
        assert results[rank]["worker"] == f"worker_{rank}" and results[rank]["num_workers"] == 2

    trial = create_trial(str(out))
    steps = list(range(STEPS))
    assert trial.workers() == ["worker_0", "worker_1"] and trial.num_workers == 2
    assert trial.steps() == steps
    assert trial.loaded_all_steps  # the run is marked ended, by the last worker to finish
    assert (out / "training_job_end.ts").exists()

    loss, grad, weight = (trial.tensor(n) for n in ("loss", "gradients/mlp/out/kernel", "mlp/out/kernel"))
    for tensor in (loss, grad, weight):
        for step in steps:
            assert tensor.workers(step) == ["worker_0", "worker_1"]
    for rank in (0, 1):
        worker = f"worker_{rank}"
        saved = loss.values(worker=worker)
        assert sorted(saved) == steps  # every step of this worker, from its own files
        # each worker's own loss, on its own shard of data
        np.testing.assert_allclose([float(saved[s]) for s in steps], results[rank]["losses"], rtol=1e-6)
    assert not np.allclose(results[0]["losses"], results[1]["losses"])

    for step in steps:
        # DistributedGradientTape averaged the gradients: both workers saved the same, the mean of their own.
        g0, g1 = grad.value(step, worker="worker_0"), grad.value(step, worker="worker_1")
        np.testing.assert_array_equal(g0, g1)
        mean = (np.array(results[0]["local_grads"][step]) + np.array(results[1]["local_grads"][step])) / 2
        np.testing.assert_allclose(g0, mean, rtol=1e-5, atol=1e-7)
        # rank 0's initial weights were broadcast (the ranks seeded differently) and every update was the
        # same: the weights are identical at each step.
        np.testing.assert_array_equal(weight.value(step, worker="worker_0"), weight.value(step, worker="worker_1"))
    assert not np.allclose(weight.value(0, worker="worker_0"), weight.value(STEPS - 1, worker="worker_0"))


def test_horovod_one_worker(tmp_path):
    out = tmp_path / "run"
    results = horovodrun(out, "--include-workers", "one")
    assert [results[r]["worker"] for r in (0, 1)] == ["worker_0", "worker_1"]
    trial = create_trial(str(out))
    assert trial.workers() == ["worker_0"] and trial.steps() == list(range(STEPS)) and trial.loaded_all_steps
    assert sorted(os.listdir(out / "collections" / "000000000")) == ["worker_0_collections.json"]
