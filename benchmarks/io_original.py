"""The original smdebug's side of the I/O benchmark. Runs inside its own venv; prints JSON results.

    python io_original.py write_small OUT STEPS TENSORS ELEMS
    python io_original.py write_large OUT NBYTES REPEAT
    python io_original.py read RUN
"""

import json
import os
import sys
import time

import numpy as np

os.environ.setdefault("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sides import check_original  # noqa: E402

check_original()  # this side measures the original 1.0.34, or nothing

from smdebug.core.access_layer.utils import training_has_ended  # noqa: E402
from smdebug.core.collection_manager import CollectionManager  # noqa: E402
from smdebug.core.modes import ModeKeys  # noqa: E402
from smdebug.core.writer import FileWriter  # noqa: E402
from smdebug.trials import create_trial  # noqa: E402


def finish(out):
    cm = CollectionManager()
    cm.export(out, "collections/000000000/worker_0_collections.json")
    training_has_ended(out)


def write_small(out, steps, tensors, elems):
    arr = np.arange(elems, dtype=np.float32)
    names = [f"layer{i}/weight" for i in range(tensors)]
    t0 = time.perf_counter()
    for step in range(steps):
        w = FileWriter(trial_dir=out, worker="worker_0", step=step)
        for n in names:
            w.write_tensor(tdata=arr, tname=n, mode=ModeKeys.TRAIN, mode_step=step)
        w.close()
    dt = time.perf_counter() - t0
    finish(out)
    return {"seconds": dt, "tensors": steps * tensors}


def write_large(out, nbytes, repeat):
    arr = np.ones(nbytes // 4, dtype=np.float32)
    t0 = time.perf_counter()
    for step in range(repeat):
        w = FileWriter(trial_dir=out, worker="worker_0", step=step)
        w.write_tensor(tdata=arr, tname="big", mode=ModeKeys.TRAIN, mode_step=step)
        w.close()
    dt = time.perf_counter() - t0
    finish(out)
    return {"seconds": dt, "bytes": nbytes * repeat}


def read(run):
    t0 = time.perf_counter()
    trial = create_trial(run)
    steps = trial.steps()
    t_open = time.perf_counter() - t0
    names = trial.tensor_names()
    t1 = time.perf_counter()
    n = 0
    nbytes = 0
    for name in names:
        t = trial.tensor(name)
        for s in t.steps():
            v = t.value(s)
            n += 1
            nbytes += v.nbytes
    return {"open_seconds": t_open, "fetch_seconds": time.perf_counter() - t1, "values": n, "bytes": nbytes,
            "steps": len(steps)}


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "write_small":
        res = write_small(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
    elif cmd == "write_large":
        res = write_large(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        res = read(sys.argv[2])
    print(json.dumps(res))
