"""`smdebug run` attaches to unmodified Lightning and Hugging Face Trainer scripts (tests/scripts), in real
processes: Lightning with one device and with its DDP strategy (two processes, gloo on 127.0.0.1), the
Hugging Face Trainer with gradient accumulation."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import smdebug.pytorch as smd

from _zero_code_runs import smdebug_run

SCRIPTS = Path(__file__).parent / "scripts"
TRAIN, EVAL = smd.modes.TRAIN, smd.modes.EVAL




def test_lightning_script_unmodified(tmp_path):
    pytest.importorskip("lightning")
    out, proc = smdebug_run(tmp_path, "lightning_train.py", "1")
    assert "global_step 4" in proc.stdout  # the script's own output
    trial = smd.create_trial(out)
    assert trial.workers() == ["worker_0"]
    assert trial.steps(mode=TRAIN) == [0, 1, 2, 3] and trial.steps(mode=EVAL) == [0, 1]
    # the callback came from Lightning's callbacks factory: the loss training_step returned and what the
    # module logs (self.log), the gradients at the optimizer step
    assert trial.tensor("loss_output_0").steps(mode=TRAIN) == [0, 1, 2, 3]
    assert trial.tensor("train_loss").steps(mode=TRAIN) == [0, 1, 2, 3]
    assert trial.tensor("val_loss").steps(mode=EVAL) == [0, 1]
    for step in range(4):
        assert trial.tensor("train_loss").value(step, mode=TRAIN) == pytest.approx(
            trial.tensor("loss_output_0").value(step, mode=TRAIN), rel=1e-6)
    w, g = trial.tensor("Net_fc1.weight"), trial.tensor("gradient/Net_fc1.weight")
    for step in range(3):  # SGD, lr 0.1
        np.testing.assert_allclose(w.value(step + 1, mode=TRAIN),
                                   w.value(step, mode=TRAIN) - 0.1 * g.value(step, mode=TRAIN), rtol=1e-5, atol=1e-6)


def test_lightning_ddp_two_processes_unmodified(tmp_path):
    """Lightning's DDP strategy on CPU starts the second process itself (running the script again); both
    get the callback, each rank writes its own worker's files (include_workers "all")."""
    pytest.importorskip("lightning")
    out, proc = smdebug_run(tmp_path, "lightning_train.py", "2", hook_parameters={"include_workers": "all"})
    # each rank's own line, whole (both ranks write to the one stdout the test reads)
    assert {"rank 0 global_step 4", "rank 1 global_step 4"} <= set(proc.stdout.splitlines()), proc.stdout[-2000:]
    trial = smd.create_trial(out)
    assert trial.workers() == ["worker_0", "worker_1"]
    # limit_train_batches=4 is per rank (the distributed sampler gives each half the data): 4 optimizer
    # steps, numbered alike on both
    assert trial.steps(mode=TRAIN) == [0, 1, 2, 3]
    grads = trial.tensor("gradient/Net_fc1.weight")
    losses = trial.tensor("loss_output_0")
    for step in range(4):
        # DDP averages the gradients over the ranks: the same on both; each rank's loss is of its own batch
        np.testing.assert_allclose(grads.value(step, mode=TRAIN, worker="worker_0"),
                                   grads.value(step, mode=TRAIN, worker="worker_1"), rtol=1e-6)
        assert losses.value(step, mode=TRAIN, worker="worker_0") != losses.value(step, mode=TRAIN, worker="worker_1")
    # the same weights on both ranks at every step
    w = trial.tensor("Net_fc1.weight")
    np.testing.assert_array_equal(w.value(3, mode=TRAIN, worker="worker_0"), w.value(3, mode=TRAIN, worker="worker_1"))


def test_smdebug_run_returns_once_every_ddp_rank_has_ended(tmp_path):
    """Lightning's DDP launcher starts rank 1 as the script's child and leaves it running when rank 0's process
    ends: `smdebug run` waited for rank 0 only, returned (and counted the steps) while rank 1 was still in the
    job, and a run read at once had no end marker and rank 1's last steps missing. It now returns once every
    process the script started has ended. Rank 1 stays 8 s after its training here. The command's output goes
    to files, not pipes: a pipe's end of file waits for rank 1 too (it holds the pipe), in the test instead of
    in the command."""
    pytest.importorskip("lightning")
    out = tmp_path / "run"
    config = tmp_path / "hook.json"
    config.write_text(json.dumps({"LocalPath": str(out),
                                  "HookParameters": {"save_interval": "1", "include_workers": "all"},
                                  "CollectionConfigurations": [{"CollectionName": "losses"}]}))
    launcher = {"MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK", "NODE_RANK", "GROUP_RANK"}
    env = {**{k: v for k, v in os.environ.items() if k not in launcher}, "OMP_NUM_THREADS": "1"}
    with open(tmp_path / "stdout", "w") as stdout, open(tmp_path / "stderr", "w") as stderr:
        status = subprocess.call([sys.executable, "-m", "smdebug.cli.main", "run", "--config", str(config), "--",
                                  sys.executable, str(SCRIPTS / "lightning_late_rank.py"), "8"],
                                 stdout=stdout, stderr=stderr, env=env, cwd=tmp_path, timeout=600)
    # read the moment the command has returned
    lines = (tmp_path / "stdout").read_text().splitlines()
    ended = (out / "training_job_end.ts").exists()
    trial = smd.create_trial(str(out))
    losses = trial.tensor("loss_output_0")
    workers = {step: sorted(losses.workers(step, mode=TRAIN)) for step in losses.steps(mode=TRAIN)}
    stderr = (tmp_path / "stderr").read_text()
    assert status == 0, stderr[-5000:]
    assert {"rank 0 exiting", "rank 1 exiting"} <= set(lines), lines[-20:]
    assert ended and trial.loaded_all_steps, stderr[-3000:]
    assert workers == {step: ["worker_0", "worker_1"] for step in range(4)}, workers
    assert "waiting for the processes it started" in stderr  # (a wait is said, not silent)


def test_transformers_script_unmodified(tmp_path):
    pytest.importorskip("transformers")
    out, proc = smdebug_run(tmp_path, "transformers_train.py", str(tmp_path / "trainer"),
                            collections=("weights", "gradients", "losses", "metrics"))
    done = re.search(r"done: global_step=(\d+) eval_loss=([\d.]+)", proc.stdout)
    assert done and done.group(1) == "3", proc.stdout[-2000:]
    trial = smd.create_trial(out)
    # one TRAIN step per optimizer step (2 micro-batches each), 2 evaluation batches
    assert trial.steps(mode=TRAIN) == [0, 1, 2] and trial.steps(mode=EVAL) == [0, 1]
    for name in ("loss_output_0", "loss_output_1", "loss", "learning_rate"):
        assert trial.tensor(name).steps(mode=TRAIN) == [0, 1, 2], name
    assert trial.tensor("eval_loss").steps(mode=EVAL) == [1]
    assert trial.tensor("eval_loss").value(1, mode=EVAL).item() == pytest.approx(float(done.group(2)), abs=1e-5)
    assert trial.tensor("gradient/GPT2LMHeadModel_transformer.h.0.mlp.c_fc.weight").steps(mode=TRAIN) == [0, 1, 2]
