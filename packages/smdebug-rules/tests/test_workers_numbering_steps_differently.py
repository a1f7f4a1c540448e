"""WeightUpdateRatio on a two-worker run whose workers number their global steps differently.

Each process counts its own global steps, EVAL steps included: with validation on rank 0 only, rank 0's TRAIN
step 6 is its global step 8 and rank 1's is its global step 6; rank 1, on a larger shard, also trains two steps
more. The trial read rank 1's files at rank 0's global step numbers, so rank 1's weights of TRAIN step 6 were
taken for a step rank 0 spent validating, and the rule compared weights saved at different TRAIN steps
(a real gloo DDP run said "update ratio 0" on a healthy run). Steps are now the same across workers when
their (mode, mode step) is."""

from __future__ import annotations

import numpy as np

from _hooks import NumpyHook
from smdebug import SaveConfig
from smdebug.core.modes import ModeKeys
from smdebug.core.plugins.info import WorkerInfo
from smdebug.rules import run_rules
from smdebug.rules.results import ISSUES, NO_ISSUES
from smdebug.trials import create_trial

TRAIN, EVAL = ModeKeys.TRAIN, ModeKeys.EVAL
SCHEDULE = {0: [TRAIN] * 6 + [EVAL] * 2 + [TRAIN] * 6 + [EVAL] * 2, 1: [TRAIN] * 14}


WEIGHT_SAVES = {0, 3, 6, 9, 12}  # TRAIN mode steps whose weights are saved (a schedule by mode step)


def two_worker_run(path, frozen_worker=None):
    """Data-parallel training of a real logistic regression: each rank computes its gradient on its own
    shard, the gradients are averaged (what DDP's all-reduce does), and each rank steps its own replica of
    the weights, so replicas stay equal; ``frozen_worker``'s optimizer never steps. Gradients are saved at
    every TRAIN step, weights at the TRAIN steps of WEIGHT_SAVES; rank 1's extra TRAIN steps average with
    itself only (rank 0 has joined)."""
    hooks, shards = {}, {}
    for rank in SCHEDULE:
        cls = type(f"Rank{rank}", (NumpyHook,), {"_detect_worker": lambda self, r=rank: WorkerInfo(rank=r, size=2)})
        hooks[rank] = cls(out_dir=str(path), save_config=SaveConfig(save_interval=1),
                          include_collections=["weights", "gradients", "losses"], include_workers="all")
        rng = np.random.default_rng(rank)
        x = rng.normal(size=(64, 4)).astype(np.float32)
        shards[rank] = (x, (x @ np.array([1.5, -2.0, 0.5, 0.3], np.float32) > 0).astype(np.float32))
    weights = {rank: np.full(4, 0.1, np.float32) for rank in SCHEDULE}
    train_steps = {rank: 0 for rank in SCHEDULE}
    pending = {}  # rank -> its gradient of the current TRAIN step, until the all-reduce
    for i in range(max(len(s) for s in SCHEDULE.values())):
        for rank, hook in hooks.items():
            if i >= len(SCHEDULE[rank]):
                continue
            mode = SCHEDULE[rank][i]
            (x, y), w = shards[rank], weights[rank]
            hook.set_mode(mode)
            hook.begin_step()
            p = 1 / (1 + np.exp(-(x @ w)))
            hook.record("loss", np.float32(-np.mean(y * np.log(p + 1e-7) + (1 - y) * np.log(1 - p + 1e-7))))
            if mode == TRAIN:  # (evaluation saves the loss only, as a validation loop does)
                grad = (x.T @ (p - y) / len(y)).astype(np.float32)
                if train_steps[rank] in WEIGHT_SAVES:
                    hook.record("w", w)
                hook.record("gradient/w", grad)
                pending[rank] = grad
                train_steps[rank] += 1
            hook.end_step()
        # the all-reduce of this round's TRAIN steps, then each replica's optimizer step
        if pending:
            mean = np.mean(list(pending.values()), axis=0)
            for rank in pending:
                if rank != frozen_worker:
                    weights[rank] -= 0.5 * mean
            pending = {}
    for hook in hooks.values():
        hook.close()
    return str(path)


def weight_update_ratio(path):
    (result,) = run_rules(path, ["WeightUpdateRatio"]).rules
    assert result.error is None, result.error
    return result


def test_both_workers_updating_is_quiet(tmp_path):
    run = two_worker_run(tmp_path)
    r = weight_update_ratio(run)
    assert r.status == NO_ISSUES, (r.status, r.detail, [f.reason for f in r.findings])
    # every save but the first has a previous one; worker_1's saves were read at worker_0's EVAL steps
    # and judged as steps of their own (5)
    assert r.steps_evaluated == len(WEIGHT_SAVES) - 1
    trial = create_trial(run)
    assert trial.tensor("w").steps(mode=TRAIN) == sorted(WEIGHT_SAVES)
    assert trial.tensor("w").workers(12, TRAIN) == ["worker_1"]  # worker_1's extra TRAIN step is read


def test_a_frozen_second_worker_still_fires(tmp_path):
    r = weight_update_ratio(two_worker_run(tmp_path, frozen_worker=1))
    assert r.status == ISSUES, (r.status, r.detail)
    reasons = [f.reason for f in r.findings]
    assert not any("worker_0" in reason for reason in reasons), reasons
    assert any("worker worker_1" in reason and "TRAIN steps 3 and 6" in reason for reason in reasons), reasons
