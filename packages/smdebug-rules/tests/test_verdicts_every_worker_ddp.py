"""A real two-process DistributedDataParallel job (gloo on CPU, ``include_workers="all"``) whose rank 1 never
steps its optimizer: its replica keeps its initial weights while rank 0's train. WeightUpdateRatio and
UnchangedTensor read the first worker's copy only and said NoIssuesFound; they judge each worker's copy now, and
name the worker. The same job with both ranks training is quiet."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from smdebug.rules import run_rules
from smdebug.rules.results import ISSUES, NO_ISSUES

pytest.importorskip("torch")

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts", "ddp_rank.py")


def ddp_run(tmp_path, frozen_rank: int, world: int = 2) -> str:
    out, init = str(tmp_path / "run"), str(tmp_path / "init")  # (file:// rendezvous: no port to pick)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "GLOO_SOCKET_IFNAME": "lo"}
    procs = [subprocess.Popen([sys.executable, SCRIPT, out, init, str(rank), str(world), str(frozen_rank)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for rank in range(world)]
    outs = []
    for p in procs:
        try:
            outs.append(p.communicate(timeout=240)[0])
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise
    assert [p.returncode for p in procs] == [0] * world, "\n".join(outs)
    return out


def judged(path, rule):
    (result,) = run_rules(path, [rule]).rules
    assert result.error is None, result.error
    return result


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
    assert first.step == 2 and "(worker worker_1) unchanged over steps 0, 1, 2" in first.reason, first.reason
    assert "worker_0" not in first.reason


def test_identical_training_replicas_are_quiet(tmp_path):
    path = ddp_run(tmp_path, frozen_rank=-1)
    for rule in ("WeightUpdateRatio", "UnchangedTensor", "VanishingGradient"):
        r = judged(path, rule)
        assert r.status == NO_ISSUES, (rule, r.status, r.detail, [f.reason for f in r.findings])
        assert r.steps_evaluated > 0
