"""Horovod for PyTorch: a real `horovodrun -np 2 -H localhost:2` job with the hook, read with one trial.

Runs in the `horovod` nox session, which builds Horovod 0.28.1 for PyTorch 2.x once (tools/build_horovod.py)
and caches the wheel; elsewhere these tests are skipped.
"""

import os
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("horovod.torch", reason="Horovod is installed by the `horovod` nox session only")

from smdebug_test_support.horovod import run_horovod_job  # noqa: E402
from smdebug.trials import create_trial  # noqa: E402

WORKER = Path(__file__).parent / "hvd_worker.py"


def horovodrun(out, *args):
    return run_horovod_job(WORKER, [out, *args])


def test_horovod_all_workers(tmp_path):
    out = tmp_path / "run"
    results = horovodrun(out, "--include-workers", "all")
    assert [results[r]["worker"] for r in (0, 1)] == ["worker_0", "worker_1"]
    assert {r["size"] for r in results.values()} == {2}
    trial = create_trial(str(out))
    assert trial.workers() == ["worker_0", "worker_1"] and trial.num_workers == 2
    assert trial.steps() == list(range(6)) and trial.loaded_all_steps
    loss = trial.tensor("CrossEntropyLoss_output_0")
    for rank in (0, 1):  # each worker's own loss, as it computed it
        saved = [float(loss.value(s, worker=f"worker_{rank}")) for s in range(6)]
        np.testing.assert_allclose(saved, results[rank]["losses"], rtol=1e-6)
    # Gradients are allreduced by Horovod, so weights stay identical across workers.
    weight = trial.tensor_names(collection="weights")[0]
    np.testing.assert_array_equal(trial.tensor(weight).value(5, worker="worker_0"),
                                  trial.tensor(weight).value(5, worker="worker_1"))


def test_horovod_one_worker(tmp_path):
    out = tmp_path / "run"
    horovodrun(out, "--include-workers", "one")
    trial = create_trial(str(out))
    assert trial.workers() == ["worker_0"] and trial.steps() == list(range(6))
    assert sorted(os.listdir(out / "collections" / "000000000")) == ["worker_0_collections.json"]
