"""A reader that follows a run while it is being written, checking every value it reads.

The run must be one whose tensors are a pure function of the step (``_fault_child.expected_tensors``),
so any value read can be checked exactly, whoever wrote it and however far the writer got. Used from a
thread of the test process, or as a process of its own::

    python _live_reader.py OUT_DIR --live-steps N     # prints LIVE <n> once, then a JSON summary

The only exceptions accepted are the documented "not there yet" ones, and only for a step the trial
does not list yet; a step the trial lists must read back completely and exactly.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# A bound on the whole follow, only so a broken writer cannot hang the suite; never an assertion on speed.
HANG_GUARD_S = 600.0


def _check_step(trial, step, expected) -> None:
    names = set(trial.tensor_names(step=step))
    assert names == set(expected), f"step {step}: tensors {sorted(names)} != {sorted(expected)}"
    for name, want in expected.items():
        got = trial.tensor(name).value(step)
        assert got.dtype == want.dtype and got.shape == want.shape, (step, name, got.dtype, got.shape)
        np.testing.assert_array_equal(got, want, err_msg=f"step {step} tensor {name}")


def follow(out_dir: str, live_steps: int, on_live=None) -> dict:
    """Read the run at ``out_dir`` until it has ended and every step is checked.

    ``on_live(n)`` is called once, when ``live_steps`` steps have been checked while the run had not
    ended yet (the writer is then known to have been running alongside this reader).
    """
    from smdebug.exceptions import (NoMoreData, StepNotYetAvailable, StepUnavailable, TensorUnavailable,
                                    TensorUnavailableForStep)
    from smdebug.trials import create_trial
    from _fault_child import expected_tensors

    trial = create_trial(out_dir, wait_for_collections=120, poll_interval=0.02)
    checked = set()
    checked_live = 0
    not_yet = 0
    polls = 0
    signalled = False
    deadline = time.monotonic() + HANG_GUARD_S
    while True:
        assert time.monotonic() < deadline, f"the run did not end; {len(checked)} steps checked"
        polls += 1
        ended = trial.loaded_all_steps  # read first: if it is True, steps() below lists every step
        steps = trial.steps()
        assert steps == sorted(steps) and len(set(steps)) == len(steps)
        for step in steps:
            if step not in checked:
                _check_step(trial, step, expected_tensors(step))
                checked.add(step)
                if not ended:
                    checked_live += 1
        # A step beyond the last listed one: either "not yet" (documented), or it appeared in between
        # and must then be exact.
        probe = (steps[-1] + 1) if steps else 0
        try:
            value = trial.tensor("loss").value(probe)
        except (StepNotYetAvailable, TensorUnavailableForStep, TensorUnavailable):
            not_yet += 1
        except (StepUnavailable, NoMoreData):
            # "never": only right once the run has ended (the refresh inside value() may have seen it end)
            assert trial.loaded_all_steps, f"step {probe} reported as never coming while the run goes on"
        else:
            np.testing.assert_array_equal(value, expected_tensors(probe)["loss"])
        if not signalled and checked_live >= live_steps:
            signalled = True
            if on_live is not None:
                on_live(checked_live)
        if ended and len(checked) == len(steps):
            break
        time.sleep(0.005)
    assert sorted(checked) == list(range(len(checked))), "steps are missing in the middle of the run"
    return {"steps": len(checked), "checked_live": checked_live, "not_yet": not_yet, "polls": polls}


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("--live-steps", type=int, default=20)
    args = ap.parse_args(argv)
    summary = follow(args.out_dir, args.live_steps, on_live=lambda n: print("LIVE", n, flush=True))
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
