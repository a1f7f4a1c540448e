"""A training process for the crash/fault tests: ``python _fault_child.py OUT_DIR [--steps N] [--fsize BYTES]``.

Every step records tensors whose values are a pure function of the step (``expected_tensors``), so a
reader can check any step it finds, byte for byte, without knowing what the child managed to do.
Prints ``READY`` once the hook exists and ``STEP <n>`` after each step; ``TRAINING DONE <n>`` at the end.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def expected_tensors(step: int):
    """The tensors of ``step``: sizes vary so records straddle buffer boundaries."""
    n = 1 + (step * 7919) % 4096
    return {
        "weights/w": np.arange(n, dtype=np.float32) + step,
        "biases/b": np.full(3, step, np.int64),
        "loss": np.array([step / 10.0], dtype=np.float64),
    }


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("--steps", type=int, default=10**9)
    ap.add_argument("--fsize", type=int, default=0, help="RLIMIT_FSIZE in bytes (0: none)")
    ap.add_argument("--remove-out-dir-at", type=int, default=-1)
    ap.add_argument("--chmod-out-dir-at", type=int, default=-1)
    ap.add_argument("--stop-file", default=None, help="end training normally once this file exists")
    args = ap.parse_args(argv)

    if args.fsize:
        import resource
        import signal

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # get EFBIG instead of being killed
        resource.setrlimit(resource.RLIMIT_FSIZE, (args.fsize, args.fsize))

    from _support import NumpyHook
    from smdebug import SaveConfig

    hook = NumpyHook(out_dir=args.out_dir, save_config=SaveConfig(save_interval=1),
                     include_collections=["weights", "biases", "losses"])
    print("READY", flush=True)
    total = 0.0
    step = 0
    while step < args.steps and not (args.stop_file and os.path.exists(args.stop_file)):
        if step == args.remove_out_dir_at:
            import shutil

            # Steps before this one are on disk first: the test checks that none of them comes back
            # (without the flush the writer may still be finishing step n-1 and rightly re-create it).
            hook.flush()
            while os.path.exists(args.out_dir):  # the writer thread may be creating files meanwhile
                shutil.rmtree(args.out_dir, ignore_errors=True)
        if step == args.chmod_out_dir_at:
            hook.flush()  # (as above: the steps before this one are on disk first)
            for root, dirs, _files in os.walk(args.out_dir):
                for d in dirs:
                    os.chmod(os.path.join(root, d), 0o555)
            os.chmod(args.out_dir, 0o555)
        hook.begin_step()
        for name, value in expected_tensors(step).items():
            hook.record(name, value)
            total += float(value.sum())  # "training" goes on using the values
        hook.end_step()
        print("STEP", step, flush=True)
        step += 1
    hook.close()
    print("TRAINING DONE", step, hook.disabled, flush=True)


if __name__ == "__main__":
    main()
