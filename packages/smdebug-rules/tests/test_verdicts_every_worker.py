"""ExplodingTensor reads every worker's copy of a tensor: with ``include_workers="all"`` each worker saves its
own gradients, and a NaN in one worker's (a bad shard of data on that rank) is a NaN in the run. The rule read
the first worker's values only and said NoIssuesFound."""

from __future__ import annotations

import numpy as np

from _hooks import NumpyHook
from smdebug import SaveConfig
from smdebug.core.plugins.info import WorkerInfo
from smdebug.rules import run_rules
from smdebug.rules.results import ISSUES, NO_ISSUES


def two_worker_run(path, nan_on_worker=None):
    hooks = []
    for rank in (0, 1):
        cls = type(f"Rank{rank}", (NumpyHook,), {"_detect_worker": lambda self, r=rank: WorkerInfo(rank=r, size=2)})
        hooks.append(cls(out_dir=str(path), save_config=SaveConfig(save_interval=1),
                         include_collections=["gradients", "losses"], include_workers="all"))
    for step in range(3):
        for rank, hook in enumerate(hooks):
            grad = np.full((2, 2), 1e-3 * (rank + 1), np.float32)
            if rank == nan_on_worker and step == 1:
                grad[0, 1] = np.nan
            hook.begin_step()
            hook.record("gradient/w", grad)
            hook.record("loss", np.float32(1.0 / (step + 1)))
            hook.end_step()
    for hook in hooks:
        hook.close()
    return str(path)


def exploding(path):
    (result,) = run_rules(path, ["ExplodingTensor"]).rules
    assert result.error is None, result.error
    return result


def test_a_nan_in_the_second_workers_gradients_fires(tmp_path):
    r = exploding(two_worker_run(tmp_path, nan_on_worker=1))
    assert r.status == ISSUES, (r.status, r.detail)
    assert r.findings[0].step == 1
    assert "gradient/w (worker worker_1) has 1 NaN" in r.findings[0].reason


def test_finite_copies_on_every_worker_are_quiet(tmp_path):
    r = exploding(two_worker_run(tmp_path))
    assert r.status == NO_ISSUES, (r.status, r.detail)
    assert r.steps_evaluated == 3
