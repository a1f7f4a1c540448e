"""Divergence's weight-norm test and SimilarAcrossRuns on real two-process DistributedDataParallel jobs (gloo on
CPU, ``include_workers="all"``). Both read the first worker's copy only: a replica whose weights grew 1000-fold on
rank 1 was NoIssuesFound, and a rerun whose rank 1 trained on other labels was first said to differ a step late,
on worker_0's copy. They judge each worker's copy now and name the worker."""

from __future__ import annotations

import pytest

from smdebug.rules.results import ISSUES, NO_ISSUES

from _ddp_jobs import run_ranks
from _judging import judged  # noqa: E402

pytest.importorskip("torch")


@pytest.fixture(scope="module")
def loss_runs(tmp_path_factory):
    """Two runs of one DDP job with the same seeds, and one whose rank 1 trained on shuffled labels."""
    runs = {}
    for key, fault in (("a", "none"), ("b", "none"), ("shuffled", "shuffle")):
        runs[key] = run_ranks("ddp_loss_rank.py", tmp_path_factory.mktemp(key), 2, fault, "1")
    return runs


def test_a_replica_whose_weights_grow_fires_naming_its_worker(tmp_path):
    path = run_ranks("ddp_weights_rank.py", tmp_path, 2, "1")
    r = judged(path, "Divergence")
    assert r.status == ISSUES, (r.status, r.detail)
    reason = r.findings[0].reason
    assert "the norm of the weights (1 tensors of worker worker_1) grew" in reason, reason
    assert "worker_0" not in reason  # rank 0's copy stays at a trained size


def test_replicas_training_alike_are_quiet(tmp_path):
    path = run_ranks("ddp_weights_rank.py", tmp_path, 2, "-1")
    r = judged(path, "Divergence")
    assert r.status == NO_ISSUES, (r.status, r.detail, [f.reason for f in r.findings])
    assert r.steps_evaluated > 0


def test_reruns_of_a_ddp_job_match_on_every_worker(loss_runs):
    r = judged(loss_runs["a"], "SimilarAcrossRuns", other_trials=[loss_runs["b"]])
    assert r.status == NO_ISSUES, (r.status, r.detail, [f.reason for f in r.findings])
    assert r.steps_evaluated > 0


def test_a_rerun_whose_rank_1_differs_is_said_at_its_first_step_naming_worker_1(loss_runs):
    r = judged(loss_runs["a"], "SimilarAcrossRuns", other_trials=[loss_runs["shuffled"]])
    assert r.status == ISSUES, (r.status, r.detail)
    first = r.findings[0]
    # at step 0 both replicas hold the same initial weights: only rank 1's own loss (other labels) differs
    assert first.step == 0, (first.step, first.reason)
    assert "(worker worker_1) at TRAIN step 0 differs from run" in first.reason, first.reason
    assert "worker_0" not in first.reason
