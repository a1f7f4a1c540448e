"""One worker of a multi-process job for test_workers.py: identity comes only from the environment the
launcher sets (no framework), values are a function of (rank, step, tensor) so the reader can check them."""

import argparse
import json
import os
import time

import numpy as np

from smdebug import SaveConfig
from smdebug.core.collection import Collection
from smdebug.core.hook import BaseHook


class EnvHook(BaseHook):
    """No framework and no _detect_worker override: smdebug's own detection decides."""

    framework_name = "env-test"

    def default_collections(self):
        return [Collection("weights", include_regex=["^w"])]


def expected(rank: int, step: int, tensor: int) -> np.ndarray:
    return np.full(8, rank * 1_000_000 + step * 100 + tensor, dtype=np.float64)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out_dir")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--tensors", type=int, default=3)
    parser.add_argument("--include-workers", default="all")
    parser.add_argument("--skip-steps", default="", help="comma-separated steps this worker does not save")
    parser.add_argument("--die-at", type=int, default=None, help="crash (no close, no flush) when this step begins")
    parser.add_argument("--step-time", type=float, default=0.0, help="seconds of 'training' per step")
    args = parser.parse_args()
    skip = {int(s) for s in args.skip_steps.split(",") if s}
    hook = EnvHook(out_dir=args.out_dir, save_config=SaveConfig(save_interval=1), include_collections=["weights"],
                   include_workers=args.include_workers)
    for step in range(args.steps):
        if step == args.die_at:
            os._exit(3)  # a crash: nothing flushed, no close, no end marker
        hook.begin_step()
        if step not in skip:
            for t in range(args.tensors):
                hook.record(f"w{t}", expected(hook.rank, step, t))
        hook.end_step()
        time.sleep(args.step_time)
    hook.close()
    print(json.dumps({"worker": hook.worker, "rank": hook.rank, "num_workers": hook.num_workers}))


if __name__ == "__main__":
    main()
