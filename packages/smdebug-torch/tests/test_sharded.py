"""FSDP2 (``fully_shard``) on CPU with gloo, two real processes: parameters and gradients are DTensor
shards, saved under the unsharded model's names with their full shape and value."""

import os

import numpy as np
import pytest
import torch
import torch.nn as nn

import dist_jobs
import smdebug.pytorch as smd
from models import MLP, mlp_data

STEPS = 5


def launch(out_dir, include_workers="one", fail_at=-1, register="before", world=2):
    return dist_jobs.launch("sharded_worker.py", [out_dir, include_workers, fail_at, register], world=world,
                            timeout=600)


@pytest.fixture(scope="module")
def reference():
    """The same training unsharded in one process on both ranks' data: FSDP averages the ranks'
    gradients, which equals the gradient of the mean loss over the whole batch."""
    torch.manual_seed(0)
    model, loss_fn = MLP(), nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    halves = [mlp_data(seed=r) for r in range(2)]
    x, y = torch.cat([h[0] for h in halves]), torch.cat([h[1] for h in halves])
    weights, grads = [], []
    for _ in range(STEPS):
        weights.append({n: p.detach().clone().numpy() for n, p in model.named_parameters()})
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        grads.append({n: p.grad.clone().numpy() for n, p in model.named_parameters()})
        opt.step()
    return weights, grads


def check_against(trial, reference, worker="worker_0"):
    weights, grads = reference
    for name in ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"):
        w, g = trial.tensor(f"MLP_{name}"), trial.tensor(f"gradient/MLP_{name}")
        assert w.steps() == g.steps() == [0, 2, 4], name
        for step in (0, 2, 4):
            assert w.value(step, worker=worker).shape == weights[step][name].shape  # full, not a shard
            np.testing.assert_allclose(w.value(step, worker=worker), weights[step][name], rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(g.value(step, worker=worker), grads[step][name], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("register", ["before", "after"], ids=["registered-then-sharded", "sharded-then-registered"])
def test_fsdp2_one_worker_saves_gathered_tensors(tmp_path, reference, register):
    out = str(tmp_path / "run")
    outs = launch(out, "one", register=register)
    assert any("shard (8, 10) of (16, 10)" in o for o in outs), outs  # the ranks really held halves
    trial = smd.create_trial(out)
    assert trial.workers() == ["worker_0"]
    assert trial.tensor_names(collection="weights") == ["MLP_fc1.weight", "MLP_fc2.weight"]
    check_against(trial, reference)
    assert trial.tensor("CrossEntropyLoss_output_0").steps() == [0, 2, 4]
    assert not any("worker_1" in f for _, _, files in os.walk(out) for f in files)


def test_fsdp2_all_workers_save_the_whole_tensors(tmp_path, reference):
    out = str(tmp_path / "run")
    launch(out, "all")
    trial = smd.create_trial(out)
    assert trial.workers() == ["worker_0", "worker_1"]
    for worker in trial.workers():
        check_against(trial, reference, worker)
    loss = trial.tensor("CrossEntropyLoss_output_0")
    assert loss.value(0, worker="worker_0") != loss.value(0, worker="worker_1")  # each rank's own batch


def test_a_failing_rank_does_not_leave_the_others_waiting(tmp_path):
    """Rank 0's hook fails before step 2 (a due step): it stops saving but still joins the gathers, so
    the job ends normally instead of rank 1 waiting forever in an all-gather."""
    out = str(tmp_path / "run")
    outs = launch(out, "one", fail_at=1)
    assert "failed True" in outs[0] and "injected" in outs[0]
    assert all("done" in o for o in outs)
    trial = smd.create_trial(out)
    assert trial.tensor("MLP_fc1.weight").steps() == [0]  # what was saved before the failure stays
