"""AllZero, TensorVariance, UnchangedTensor, VanishingGradient and WeightUpdateRatio judge every worker's copy of
a tensor. With ``include_workers="all"`` each worker saves its own copy; these rules read the first worker's
only (``tensor.value(step)``), so a replica gone wrong on worker_1 alone -- its gradients zero, its weights never
updated -- was NoIssuesFound. What a rule keeps across steps (previous saves, patience counts) is kept per
worker: worker_1's weights are never an "update" of worker_0's.

Each rule's case: worker_1's copy bad fires naming the worker; identical healthy copies (what DDP keeps) are quiet
with the steps_evaluated of a one-worker run; a one-worker run reads as it always did (no worker named)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, Optional

import numpy as np
import pytest

from _hooks import NumpyHook
from smdebug import ReductionConfig, SaveConfig
from smdebug.core.plugins.info import WorkerInfo
from smdebug.rules import run_rules
from smdebug.rules.results import ISSUES, NO_ISSUES

STEPS = 5


def worker_run(path, tensors: Callable[[int, int], Dict[str, np.ndarray]], workers: int = 2,
               reductions: Optional[ReductionConfig] = None) -> str:
    """A run of ``STEPS`` steps written by ``workers`` hooks, each its own worker (``include_workers="all"``);
    ``tensors(rank, step)`` is what rank ``rank`` records at ``step`` (plus a falling loss). ``reductions``: the
    gradients saved as those reductions only."""
    hooks = []
    for rank in range(workers):
        cls = type(f"Rank{rank}", (NumpyHook,),
                   {"_detect_worker": lambda self, r=rank, n=workers: WorkerInfo(rank=r, size=n)})
        hook = cls(out_dir=str(path), save_config=SaveConfig(save_interval=1),
                   include_collections=["weights", "gradients", "losses"], include_workers="all")
        if reductions is not None:
            hook.get_collection("gradients").reduction_config = reductions
        hooks.append(hook)
    for step in range(STEPS):
        for rank, hook in enumerate(hooks):
            hook.begin_step()
            for name, value in tensors(rank, step).items():
                hook.record(name, np.asarray(value, np.float32))
            hook.record("loss", np.float32(1.0 / (step + 1)))
            hook.end_step()
    for hook in hooks:
        hook.close()
    return str(path)


def noise(seed, shape=(3, 4), scale=1.0):
    return np.random.default_rng(seed).normal(0.0, scale, shape)


# --- what each rank saves: healthy, and with rank 1's copy gone wrong (``bad`` is the rank that goes wrong) ------

def zero_gradients(bad):
    # a gradient of zeros save after save (a rank cut off from the loss)
    return lambda rank, step: {"gradient/w": np.zeros((3, 4)) if rank == bad else noise(step)}


def constant_gradients(bad):
    # a gradient with no spread at all (variance 0)
    return lambda rank, step: {"gradient/w": np.full((3, 4), 0.5) if rank == bad else noise(step)}


def weights(rank, step, frozen):
    """Weights moving by ~1% a step (and their gradients), or, ``frozen``, never moving (an optimizer that never
    steps on that rank)."""
    w0 = noise(0)
    return {"w": w0 if frozen else w0 * (1.0 + 0.01 * step), "gradient/w": np.full((3, 4), 0.1)}


def frozen_weights(bad):
    return lambda rank, step: weights(rank, step, frozen=rank == bad)


def vanishing_gradients(bad):
    # the first layer's gradient 20,000 times smaller than the last one's (norm 1e-6: the relative test)
    def tensors(rank, step):
        first = np.full((2, 2), 5e-7) if rank == bad else noise(10 + step, (2, 2), 1e-2)
        return {"gradient/w1": first, "gradient/w2": np.full((2, 2), 1e-2)}
    return tensors


@dataclass
class Case:
    rule: object  # a rule request for run_rules
    tensors: Callable  # bad rank -> tensors(rank, step)
    step: int  # the first step that fires
    reason: str  # the one-worker finding (the two-worker one names the worker after the tensor)
    reductions: Optional[ReductionConfig] = field(default=None)


CASES = {
    "AllZero": Case(("AllZero", {"collection_names": ["gradients"]}), zero_gradients, 2,
                    "gradient/w is 100% zeros (threshold 100%) at its last 3 saves"),
    "TensorVariance": Case(("TensorVariance", {"collection_names": ["gradients"], "min_threshold": "1e-6"}),
                           constant_gradients, 0, "gradient/w: variance 0 < min_threshold 1e-06"),
    "TensorVariance-reductions": Case(
        ("TensorVariance", {"collection_names": ["gradients"], "min_threshold": "1e-6"}), constant_gradients, 0,
        "gradient/w: variance 0 < min_threshold 1e-06", ReductionConfig(reductions=["variance"])),
    "UnchangedTensor": Case("UnchangedTensor", frozen_weights, 2, "w unchanged over steps 0, 1, 2"),
    "VanishingGradient": Case("VanishingGradient", vanishing_gradients, 2,
                              "gradient/w1: gradient norm 1e-06 is 5e-05 of the largest (gradient/w2: 0.02)"),
    "VanishingGradient-reductions": Case(
        "VanishingGradient", vanishing_gradients, 2,
        "gradient/w1: gradient norm 1e-06 is 5e-05 of the largest (gradient/w2: 0.02)",
        ReductionConfig(abs_reductions=["mean"], norms=["l2"], save_shape=True)),
    "WeightUpdateRatio": Case("WeightUpdateRatio", frozen_weights, 1,
                              "w: update/weight ratio 0 < small_threshold 1e-08 between steps 0 and 1"),
}


def judge(path, case: Case):
    (result,) = run_rules(path, [case.rule]).rules
    assert result.error is None, result.error
    return result


def with_worker(reason: str, worker: str) -> str:
    """The one-worker reason with the worker named after the tensor (the tensor ends at the first ':' or ' ')."""
    cut = min(i for i in (reason.find(":"), reason.find(" ")) if i >= 0)
    return f"{reason[:cut]} (worker {worker}){reason[cut:]}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_one_workers_bad_copy_fires_naming_the_worker(tmp_path, name):
    case = CASES[name]
    r = judge(worker_run(tmp_path, case.tensors(bad=1), reductions=case.reductions), case)
    assert r.status == ISSUES, (r.status, r.detail)
    assert r.findings[0].step == case.step, [(f.step, f.reason) for f in r.findings]
    reason = r.findings[0].reason
    assert reason.startswith(with_worker(case.reason, "worker_1")), reason
    assert "worker_0" not in reason, reason  # worker_0's copy is healthy


@pytest.mark.parametrize("name", sorted(CASES))
def test_identical_healthy_copies_are_quiet_as_one_worker_is(tmp_path, name):
    case = CASES[name]
    healthy = case.tensors(bad=None)
    one = judge(worker_run(tmp_path / "one", healthy, workers=1, reductions=case.reductions), case)
    two = judge(worker_run(tmp_path / "two", healthy, reductions=case.reductions), case)
    assert one.status == NO_ISSUES, (one.status, one.detail)
    assert two.status == NO_ISSUES, (two.status, two.detail)
    assert two.steps_evaluated == one.steps_evaluated > 0
    assert two.tensors_evaluated == one.tensors_evaluated  # (a tensor is one tensor, whatever its copies)


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_one_worker_run_reads_as_before(tmp_path, name):
    case = CASES[name]
    r = judge(worker_run(tmp_path, case.tensors(bad=0), workers=1, reductions=case.reductions), case)
    assert r.status == ISSUES, (r.status, r.detail)
    assert r.findings[0].step == case.step
    assert r.findings[0].reason.startswith(case.reason) and "worker" not in r.findings[0].reason


@pytest.mark.parametrize("name", ["AllZero", "UnchangedTensor", "WeightUpdateRatio"])
def test_a_fault_on_every_worker_is_said_once_naming_the_others(tmp_path, name):
    # DDP replicas are identical: a fault of one is a fault of all, reported once with the other workers named
    case = CASES[name]
    bad = case.tensors(bad=0)
    r = judge(worker_run(tmp_path, lambda rank, step: bad(0, step)), case)
    assert r.status == ISSUES, (r.status, r.detail)
    reason = r.findings[0].reason
    assert reason.startswith(with_worker(case.reason, "worker_0")) and reason.endswith("; also on worker_1"), reason


def test_weight_updates_are_taken_between_saves_of_one_worker(tmp_path):
    # replicas that are not copies of each other (each rank its own model, weights 100 times apart), each moving
    # ~1% a step: worker_1's weights taken as an update of worker_0's would be a ratio near 100
    def tensors(rank, step):
        return {"w": noise(0) * 100.0 ** rank * (1.0 + 0.01 * step), "gradient/w": np.full((3, 4), 0.1)}

    r = judge(worker_run(tmp_path, tensors), CASES["WeightUpdateRatio"])
    assert r.status == NO_ISSUES, (r.status, r.detail, [f.reason for f in r.findings])
    assert r.steps_evaluated == STEPS - 1


def test_gradients_of_a_model_split_across_workers_are_compared_as_one_model(tmp_path):
    # each worker saves its own layers (a model split across workers: only worker_0 holds w1, only worker_1 w2):
    # no gradient is a replica, so the step's gradients are the one model's, compared with each other as in a run
    # of one worker -- per worker there would be one gradient each, and nothing to compare
    def tensors(rank, step):
        return {"gradient/w1": np.full((2, 2), 5e-7)} if rank == 0 else {"gradient/w2": np.full((2, 2), 1e-2)}

    r = judge(worker_run(tmp_path, tensors), CASES["VanishingGradient"])
    assert r.status == ISSUES, (r.status, r.detail)
    assert r.findings[0].step == 2 and r.findings[0].reason.startswith(CASES["VanishingGradient"].reason)


def test_a_gradient_one_worker_saved_is_compared_with_each_workers_replica(tmp_path):
    # worker_0 alone saves the first layer's gradient (vanishing); both save the last layer's, a replica each:
    # each worker's view holds the only copy of the first layer and its own last layer -- fires in both views,
    # said once, naming the other worker
    def tensors(rank, step):
        found = {"gradient/w2": np.full((2, 2), 1e-2)}
        if rank == 0:
            found["gradient/w1"] = np.full((2, 2), 5e-7)
        return found

    r = judge(worker_run(tmp_path, tensors), CASES["VanishingGradient"])
    assert r.status == ISSUES, (r.status, r.detail)
    assert r.findings[0].reason.startswith(
        "gradient/w1: gradient norm 1e-06 is 5e-05 of the largest (gradient/w2 (worker worker_0): 0.02)"), \
        r.findings[0].reason
    assert r.findings[0].reason.endswith("; also on worker_1"), r.findings[0].reason
