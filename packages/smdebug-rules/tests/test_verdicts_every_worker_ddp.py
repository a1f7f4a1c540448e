"""A real two-process DistributedDataParallel job (gloo on CPU, ``include_workers="all"``) whose rank 1 never
steps its optimizer: its replica keeps its initial weights while rank 0's train. WeightUpdateRatio and
UnchangedTensor read the first worker's copy only and said NoIssuesFound; they judge each worker's copy now, and
name the worker. The same job with both ranks training is quiet."""

from __future__ import annotations

import pytest

from smdebug.rules.results import ISSUES, NO_ISSUES

from _ddp_jobs import run_ranks
from _judging import judged  # noqa: E402

pytest.importorskip("torch")


def ddp_run(tmp_path, frozen_rank: int, world: int = 2) -> str:
    return run_ranks("ddp_rank.py", tmp_path, world, str(frozen_rank))


def test_a_rank_that_never_steps_fires_naming_its_worker(tmp_path):
    path = ddp_run(tmp_path, frozen_rank=1)
    ratio = judged(path, "WeightUpdateRatio")
    assert ratio.status == ISSUES, (ratio.status, ratio.detail)
    first = ratio.findings[0]
    assert first.step == 1 and "(worker worker_1): update/weight ratio 0 < small_threshold" in first.reason, first.reason
    assert "worker_0" not in first.reason  # rank 0's weights train
    unchanged = judged(path, "UnchangedTensor")
    assert unchanged.status == ISSUES, (unchanged.status, unchanged.detail)
    first = unchanged.findings[0]
    assert first.step == 2 and "(worker worker_1) unchanged over TRAIN steps 0, 1, 2" in first.reason, first.reason
    assert "worker_0" not in first.reason


def test_identical_training_replicas_are_quiet(tmp_path):
    path = ddp_run(tmp_path, frozen_rank=-1)
    for rule in ("WeightUpdateRatio", "UnchangedTensor", "VanishingGradient"):
        r = judged(path, rule)
        assert r.status == NO_ISSUES, (rule, r.status, r.detail, [f.reason for f in r.findings])
        assert r.steps_evaluated > 0
