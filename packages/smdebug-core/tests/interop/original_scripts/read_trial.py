"""Dump everything the ORIGINAL smdebug 1.0.34 reads from one or more runs.

Runs inside the original's virtual environment (never with our package on the path)::

    python read_trial.py OUT_DIR RUN_DIR [RUN_DIR ...]

For every run it writes ``OUT_DIR/<index>.json`` (structure: steps, modes, workers, collections,
tensor names, and for every tensor/step/worker the value, shape and saved reductions) and
``OUT_DIR/<index>.npz`` (the arrays, referenced from the JSON as ``{"array": key}``). Anything the
original raises is recorded as ``{"error": ExceptionType, "message": ...}`` instead of stopping, so
the tests can assert on failures too.
"""

import json
import os
import sys
import traceback

import numpy as np
from smdebug.core.modes import ModeKeys
from smdebug.trials import create_trial

MODES = ["TRAIN", "EVAL", "PREDICT", "GLOBAL"]


class Arrays:
    def __init__(self):
        self.arrays = {}

    def put(self, value):
        if value is None:  # the original returns None for some tensors it cannot decode
            return {"none": True}
        arr = np.asarray(value)
        if arr.dtype.kind == "O":
            arr = arr.astype(str)
        key = "a%d" % len(self.arrays)
        self.arrays[key] = arr
        return {"array": key, "dtype": str(arr.dtype), "shape": list(arr.shape)}


def error(exc):
    return {"error": type(exc).__name__, "message": str(exc)[:500]}


def attempt(fn):
    """``fn()`` or the exception it raised, as an error record."""
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - failures are data for the tests
        return error(exc)


def collection_dict(coll):
    rc = coll.reduction_config
    sc = coll.save_config
    return {
        "name": coll.name,
        "include_regex": list(coll.include_regex or []),
        "tensor_names": sorted(coll.tensor_names),
        "reduction_config": rc.to_json_dict() if rc is not None else None,
        "save_config": sc.to_json_dict() if sc is not None else None,
        "save_histogram": coll.save_histogram,
    }


def dump_tensor(trial, name, arrays, global_steps):
    t = trial.tensor(name)
    out = {"steps": {m: attempt(lambda m=m: list(t.steps(mode=ModeKeys[m]))) for m in MODES}, "at": {}}
    for g in global_steps:
        try:
            workers = sorted(t.workers(g))
        except Exception as exc:  # noqa: BLE001 - tensor not saved at this step
            out["at"][str(g)] = error(exc)
            continue
        entry = {"workers": workers, "by_worker": {}}
        entry["value"] = attempt(lambda g=g: arrays.put(t.value(g)))
        for w in workers:
            per = {}
            per["value"] = attempt(lambda g=g, w=w: arrays.put(t.value(g, worker=w)))
            per["shape"] = attempt(lambda g=g, w=w: [int(d) for d in t.shape(g, worker=w)])

            def reductions(g=g, w=w):
                rv = t.reduction_values(g, worker=w)
                return {"%s|%d" % (op, int(bool(is_abs))): arrays.put(v) for (op, is_abs), v in rv.items()}

            per["reductions"] = attempt(reductions)
            entry["by_worker"][w] = per
        # Addressing the same data by mode step must give the same value.
        mode, mode_step = trial.mode(g), trial.mode_step(g)
        if mode is not None and mode != ModeKeys.GLOBAL:
            entry["value_by_mode_step"] = attempt(lambda ms=mode_step, m=mode: arrays.put(t.value(ms, mode=m)))
        out["at"][str(g)] = entry
    return out


def dump_trial(path, arrays):
    trial = create_trial(path)
    d = {"path": path, "num_workers": int(trial.num_workers)}
    d["workers"] = sorted(trial.workers())
    d["steps"] = {m: [int(s) for s in trial.steps(mode=ModeKeys[m])] for m in MODES}
    d["steps_incl_incomplete"] = {
        m: [int(s) for s in trial.steps(mode=ModeKeys[m], show_incomplete_steps=True)] for m in MODES
    }
    d["loaded_all_steps"] = bool(trial.loaded_all_steps)
    d["modes"] = sorted(m.name for m in trial.modes())
    global_steps = d["steps_incl_incomplete"]["GLOBAL"]
    d["step_modes"] = {}
    for g in global_steps:
        mode = trial.mode(g)
        d["step_modes"][str(g)] = [mode.name if mode is not None else None, trial.mode_step(g)]
    d["global_step"] = {
        m: {str(ms): trial.global_step(ModeKeys[m], ms) for ms in d["steps"][m]} for m in MODES if m != "GLOBAL"
    }
    d["collections"] = {name: collection_dict(c) for name, c in trial.collections().items()}
    d["tensor_names"] = trial.tensor_names()
    d["tensor_names_by_step"] = {str(g): attempt(lambda g=g: trial.tensor_names(step=g)) for g in global_steps}
    d["tensor_names_by_collection"] = {
        name: attempt(lambda name=name: trial.tensor_names(collection=name)) for name in d["collections"]
    }
    d["tensors"] = {}
    for name in d["tensor_names"]:
        d["tensors"][name] = attempt(lambda name=name: dump_tensor(trial, name, arrays, global_steps))
    return d


def main():
    out_dir, paths = sys.argv[1], sys.argv[2:]
    os.makedirs(out_dir, exist_ok=True)
    for i, path in enumerate(paths):
        arrays = Arrays()
        try:
            d = dump_trial(path, arrays)
        except Exception as exc:  # noqa: BLE001
            d = error(exc)
            d["traceback"] = traceback.format_exc()
        with open(os.path.join(out_dir, "%d.json" % i), "w") as f:
            json.dump(d, f)
        np.savez(os.path.join(out_dir, "%d.npz" % i), **arrays.arrays)


if __name__ == "__main__":
    main()
