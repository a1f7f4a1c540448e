"""Training processes for the report tests: one worker of a two-worker job, and a slow run that
``smdebug report --follow`` watches. Both train the numpy network of _cli_runs.py with a real hook.

    python _report_jobs.py worker OUT_DIR        # rank/size from SMDEBUG_TEST_RANK / _WORLD_SIZE
    python _report_jobs.py slow OUT_DIR --epochs 6 --step-time 0.2 [--pause-after 30 --gate FILE]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=("worker", "slow"))
    parser.add_argument("out_dir")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--step-time", type=float, default=0.0, help="seconds of extra 'training' per step")
    parser.add_argument("--pause-after", type=int, default=None, metavar="N",
                        help="after N steps, wait (at most 10 minutes) until --gate FILE exists, then go on")
    parser.add_argument("--gate", default=None, metavar="FILE")
    args = parser.parse_args()

    from _cli_runs import train_mlp
    from _support import NumpyHook
    from smdebug.core.reduction_config import ReductionConfig
    from smdebug.core.save_config import SaveConfig

    hook = NumpyHook(out_dir=args.out_dir, save_config=SaveConfig(save_interval=1),
                     include_collections=["weights", "biases", "gradients", "losses", "scalars"],
                     include_workers="all" if args.kind == "worker" else "one")
    hook.get_collection("gradients").reduction_config = ReductionConfig(norms=["l2"], save_raw_tensor=True)
    if args.step_time or args.pause_after is not None:
        real_end_step = hook.end_step
        done = [0]

        def slow_end_step():
            real_end_step()
            done[0] += 1
            time.sleep(args.step_time)
            if done[0] == args.pause_after:  # the watcher has seen part of the run: it says when to go on
                hook.flush()
                deadline = time.monotonic() + 600
                while not os.path.exists(args.gate) and time.monotonic() < deadline:
                    time.sleep(0.1)

        hook.end_step = slow_end_step
    rank = int(os.environ.get("SMDEBUG_TEST_RANK", "0"))
    # each worker its own data and learning rate, so their gradient norms differ
    train_mlp(hook, epochs=args.epochs, steps_per_epoch=20, eval_steps=5, seed=rank, lr=1.0 + rank)
    hook.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
