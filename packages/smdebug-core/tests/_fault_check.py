"""Checks shared by the crash and fault tests: is what a (possibly killed) run left on disk sound?"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CHILD = os.path.join(HERE, "_fault_child.py")


def child_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([HERE, env.get("PYTHONPATH", "")])
    env["SMDEBUG_LOG_LEVEL"] = "warning"
    return env


def start_child(out_dir, *args, wrap=None):
    """The training child writing ``out_dir``; ``wrap(argv) -> argv`` runs it another way (as another user)."""
    argv = [sys.executable, CHILD, str(out_dir), *map(str, args)]
    return subprocess.Popen(wrap(argv) if wrap else argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=child_env())


def check_files_on_disk(out_dir, partial_last_step=False):
    """Every file under its final name is complete. Returns the steps whose index file exists.

    ``partial_last_step``: the run was closed mid-step (SIGTERM between two records): its last step holds
    the tensors recorded before the signal, a subset of the step's tensors, each still exact."""
    from smdebug.core.locations import parse_step_file_name

    last = None
    if partial_last_step:
        steps_seen = [parse_step_file_name(os.path.relpath(os.path.join(r, n), out_dir))[0]
                      for r, _d, fs in os.walk(os.path.join(out_dir, "index")) for n in fs if n.endswith(".json")]
        last = max(steps_seen, default=None)
    return _check_files(out_dir, last)


def _check_files(out_dir, partial_step):
    from smdebug.core.locations import parse_step_file_name
    from smdebug.core.tfevent.index_file import parse_index_file
    from smdebug.core.tfevent.records import iter_records
    from smdebug.core.tfevent.tensor_codec import decode_tensor_event
    from _fault_child import expected_tensors

    steps = []
    for root, _dirs, files in os.walk(out_dir):
        for name in files:
            path = os.path.join(root, name)
            rel = os.path.relpath(path, out_dir)
            if name.endswith(".tmp"):
                continue  # a write in progress when the process died: never read
            if name.endswith(".tfevents"):
                with open(path, "rb") as f:
                    data = f.read()
                records = list(iter_records(data, path))  # raises on a truncated or damaged record
                step, _ = parse_step_file_name(rel)
                want = expected_tensors(step)
                assert len(records) == len(want) or (step == partial_step and 0 < len(records) < len(want)), rel
                for _off, _len, payload in records:
                    for tag, value, ev_step, _m, _ms in decode_tensor_event(bytes(payload)):
                        assert ev_step == step
                        np.testing.assert_array_equal(value, want[tag])
            elif rel.startswith("index" + os.sep):
                step, worker = parse_step_file_name(rel)
                with open(path, "rb") as f:
                    idx = parse_index_file(path, step, worker, f.read(), lazy=False)
                want = set(expected_tensors(step))
                assert set(idx.entries) == want or (step == partial_step and set(idx.entries) < want), rel
                steps.append(step)
            elif rel.startswith("collections" + os.sep):
                from smdebug.core.collection_manager import CollectionManager

                with open(path, "rb") as f:
                    CollectionManager.loads(f.read(), path)
    return sorted(steps)


def check_trial(out_dir, index_steps, timeout=10.0, partial_last_step=False):
    """A trial of the run opens within bounded time, and every indexed step reads back exactly."""
    import time

    from smdebug.exceptions import MissingCollectionFiles
    from smdebug.trials import create_trial
    from _fault_child import expected_tensors

    t0 = time.monotonic()
    try:
        trial = create_trial(str(out_dir), wait_for_collections=2.0, poll_interval=0.1)
    except MissingCollectionFiles:
        assert not index_steps, "steps were written but the trial refused the run"
        return None
    trial.treat_as_ended()  # no end marker after a crash: say so, instead of waiting
    assert trial.loaded_all_steps
    steps = trial.steps()
    assert steps == index_steps
    # The writer is sequential: a crash leaves a prefix of the steps.
    assert steps == list(range(len(steps)))
    for s in steps:
        expected = expected_tensors(s)
        names = trial.tensor_names(step=s)
        # Only a step closed mid-way (SIGTERM; see check_files_on_disk) may hold fewer tensors.
        assert names == sorted(expected) or (partial_last_step and s == steps[-1] and set(names) < set(expected))
        for name in names:
            np.testing.assert_array_equal(trial.tensor(name).value(s), expected[name])
    assert time.monotonic() - t0 < timeout, "opening a crashed run took too long"
    return trial
