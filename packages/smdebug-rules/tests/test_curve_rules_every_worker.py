"""The loss-curve rules judge every worker's loss in a real two-process DistributedDataParallel job (gloo on CPU,
``include_workers="all"``, validation on rank 0 only).

A rank whose shard is all zeros (its loss flat at chance while rank 0's falls) or whose labels are shuffled (its
loss rising) was NoIssuesFound: the rules read the first worker's copy of the loss only. Each worker's loss is a
curve of its own now, and a finding names the worker; a fault every worker shows is said once. A run of one
worker reads as before: the faulty worker's files alone, read as a one-worker run, give the very finding the
two-worker run gives for that worker, without the worker's name.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil

import pytest

from smdebug.rules import run_rules
from smdebug.rules.results import ISSUES, NO_ISSUES

from _ddp_jobs import run_ranks

pytest.importorskip("torch")

CURVE_RULES = ["LossNotDecreasing", "OscillatingLoss", "SlowConvergence", "Divergence", "Overfit", "Overtraining"]
LOSS = "CrossEntropyLoss_output_0"


def ddp_run(tmp_path, fault: str = "none", fault_rank: int = 1, world: int = 2) -> str:
    return run_ranks("ddp_loss_rank.py", tmp_path, world, fault, str(fault_rank))


def judged(path, rules):
    results = {r.name: r for r in run_rules(path, rules).rules}
    for r in results.values():
        assert r.error is None, (r.name, r.error)
    return results


def one_worker_copy(path: str, worker: str, dest: str) -> str:
    """The files ``worker`` wrote, as a run of one worker (its collection file says so)."""
    shutil.copytree(path, dest)
    for f in glob.glob(os.path.join(dest, "**", "*"), recursive=True):
        base = os.path.basename(f)
        if os.path.isfile(f) and "worker_" in base and worker not in base:
            os.remove(f)
    (collections,) = glob.glob(os.path.join(dest, "collections", "*", f"{worker}_collections.json"))
    with open(collections) as fh:
        saved = json.load(fh)
    saved["_meta"]["num_workers"] = 1
    with open(collections, "w") as fh:
        json.dump(saved, fh)
    return dest


def test_a_rank_whose_shard_is_zeros_fires_naming_it_and_reads_as_its_one_worker_run(tmp_path):
    path = ddp_run(tmp_path, "zeros")
    r = judged(path, ["LossNotDecreasing"])["LossNotDecreasing"]
    assert r.status == ISSUES, (r.status, r.detail)
    first = r.findings[0]
    assert first.reason.startswith(f"{LOSS} (worker worker_1) did not decrease over the second half"), first.reason
    assert "worker_0" not in first.reason  # rank 0 learns: the averaged gradients carry its shard

    # worker_1's files alone are a run of one worker: judged as before (no worker named), with the same finding
    alone = one_worker_copy(path, "worker_1", str(tmp_path / "worker_1_alone"))
    single = judged(alone, ["LossNotDecreasing"])["LossNotDecreasing"]
    assert single.status == ISSUES, (single.status, single.detail)
    # (at the same TRAIN step: the global steps differ, rank 0's EVAL steps are steps of the two-worker run)
    assert (single.findings[0].mode, single.findings[0].mode_step) == (first.mode, first.mode_step)
    assert single.findings[0].reason == first.reason.replace(f"{LOSS} (worker worker_1)", LOSS)
    assert "worker" not in single.findings[0].reason


def test_a_rank_with_shuffled_labels_fires_naming_it(tmp_path):
    path = ddp_run(tmp_path, "shuffle")
    r = judged(path, ["LossNotDecreasing"])["LossNotDecreasing"]
    assert r.status == ISSUES, (r.status, r.detail)
    reason = r.findings[0].reason
    assert reason.startswith(f"{LOSS} (worker worker_1) did not decrease over the second half"), reason
    assert "worker_0" not in reason


def test_a_fault_every_rank_shows_is_said_once(tmp_path):
    path = ddp_run(tmp_path, "zeros", fault_rank=-2)  # every shard zeros: nothing is learned anywhere
    r = judged(path, ["LossNotDecreasing"])["LossNotDecreasing"]
    assert r.status == ISSUES, (r.status, r.detail)
    reason = r.findings[0].reason
    # (worker_0's own numbers, then the other worker: not the same sentence twice)
    assert re.match(rf"{LOSS} \(worker worker_0\) (did not decrease|barely decreased) over the second half",
                    reason), reason
    assert reason.endswith("; also on worker_1") and reason.count("second half") == 1, reason


def test_a_healthy_job_validating_on_rank_0_only_is_quiet(tmp_path):
    path = ddp_run(tmp_path)
    results = judged(path, CURVE_RULES)
    for name, r in results.items():
        assert r.status != ISSUES, (name, [f.reason for f in r.findings])
    assert results["LossNotDecreasing"].status == NO_ISSUES and results["LossNotDecreasing"].steps_evaluated > 0
    # rank 1 saved no EVAL step: not a fault, and rank 0's validation is judged against rank 0's training loss
    for name in ("Overfit", "Overtraining"):
        assert results[name].status == NO_ISSUES and results[name].steps_evaluated > 0, (name, results[name].detail)
