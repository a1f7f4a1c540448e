"""Ask a run many questions through the public analysis API and record the answers.

Only uses the API both implementations share (``create_trial``, ``Trial``, ``Tensor``, ``modes``), so
the same code runs in the ORIGINAL smdebug's environment (as a script) and against ours (imported by
the tests)::

    python probe_api.py OUT_JSON RUN_DIR [RUN_DIR ...]

Each answer is ``repr`` of a plain value, or ``"ERR <ExceptionType>"``; the tests compare the two
implementations answer by answer.
"""

import json
import sys

import numpy as np


def _plain(v):
    if isinstance(v, np.ndarray):
        return (str(v.dtype), v.tolist())
    if isinstance(v, np.generic):
        return (str(v.dtype), v.item())
    if isinstance(v, dict):
        return sorted((_plain(k), _plain(x)) for k, x in v.items())
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, (set, frozenset)) or type(v).__name__ in ("dict_keys", "KeysView"):
        return sorted(repr(_plain(x)) for x in v)
    if hasattr(v, "name") and type(v).__name__ in ("ModeKeys", "StepState"):
        return v.name
    return v


def probe(path):
    from smdebug.core.modes import ModeKeys
    from smdebug.trials import create_trial

    out = {}

    def ask(key, fn):
        try:
            out[key] = repr(_plain(fn()))
        except Exception as e:  # noqa: BLE001 - the exception type is the answer
            out[key] = "ERR " + type(e).__name__

    trial = create_trial(path)
    all_modes = [ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT, ModeKeys.GLOBAL]
    seen = sorted(trial.modes(), key=lambda m: m.value)
    workers = trial.workers()
    gsteps = trial.steps()
    last = gsteps[-1] if gsteps else 0
    ask("workers", lambda: workers)
    ask("num_workers", lambda: trial.num_workers)
    ask("modes", lambda: [m.name for m in seen])
    for m in all_modes:
        ask("steps:%s" % m.name, lambda m=m: trial.steps(mode=m))
        ask("steps_incomplete:%s" % m.name, lambda m=m: trial.steps(mode=m, show_incomplete_steps=True))
    for m in seen + [ModeKeys.GLOBAL]:
        ask("tensor_names:%s" % m.name, lambda m=m: trial.tensor_names(mode=m))
        for s in trial.steps(mode=m):
            ask("tensor_names:%s:%d" % (m.name, s), lambda m=m, s=s: trial.tensor_names(step=s, mode=m))
    for g in range(last + 3):
        ask("mode_modestep:%d" % g, lambda g=g: trial.mode_modestep(g))
        ask("mode:%d" % g, lambda g=g: trial.mode(g))
        ask("mode_step:%d" % g, lambda g=g: trial.mode_step(g))
        ask("has_passed_step:GLOBAL:%d" % g, lambda g=g: trial.has_passed_step(g))
    for m in seen:
        for s in range(len(trial.steps(mode=m)) + 2):
            ask("global_step:%s:%d" % (m.name, s), lambda m=m, s=s: trial.global_step(m, s))
            ask("has_passed_step:%s:%d" % (m.name, s), lambda m=m, s=s: trial.has_passed_step(s, mode=m))
    ask("wait_for_steps:done", lambda: trial.wait_for_steps(gsteps[:2]))
    ask("wait_for_steps:beyond", lambda: trial.wait_for_steps([last + 5]))
    ask("tensor:unknown", lambda: trial.tensor("no/such/tensor"))
    ask("has_tensor:unknown", lambda: trial.has_tensor("no/such/tensor"))
    ask("regex:list", lambda: trial.tensor_names(regex=["^weights", "loss$"]))
    ask("regex:str", lambda: trial.tensor_names(regex="int"))
    for c in sorted(trial.collections()):
        ask("collection_tensors:%s" % c, lambda c=c: trial.tensor_names(collection=c))
    # (after listing collections: the original's collection() silently adds the unknown name)
    ask("collection:unknown", lambda: trial.collection("no_such_collection").name)
    for name in trial.tensor_names():
        t = trial.tensor(name)
        ask("has_tensor:%s" % name, lambda name=name: trial.has_tensor(name))
        for m in all_modes:
            ask("t_steps:%s:%s" % (name, m.name), lambda t=t, m=m: t.steps(mode=m))
        for m in seen + [ModeKeys.GLOBAL]:
            for w in [None] + workers:
                ask("values:%s:%s:%s" % (name, m.name, w), lambda t=t, m=m, w=w: t.values(mode=m, worker=w))
        for s in t.steps():
            ask("t_workers:%s:%d" % (name, s), lambda t=t, s=s: sorted(t.workers(s)))
            ask("prev_steps:%s:%d" % (name, s), lambda t=t, s=s: t.prev_steps(s, n=2))
            ask("shape:%s:%d" % (name, s), lambda t=t, s=s: tuple(t.shape(s)))
            ask("reduction_values:%s:%d" % (name, s), lambda t=t, s=s: t.reduction_values(s))
        ask("value:unknown_step:%s" % name, lambda t=t: t.value(last + 100))
        ask("value:unknown_worker:%s" % name, lambda t=t: t.value(gsteps[0], worker="worker_99"))
    return out


def main():
    out_json, paths = sys.argv[1], sys.argv[2:]
    answers = []
    for p in paths:
        try:
            answers.append(probe(p))
        except Exception as e:  # noqa: BLE001
            answers.append({"ERROR": "%s: %s" % (type(e).__name__, e)})
    with open(out_json, "w") as f:
        json.dump(answers, f)


if __name__ == "__main__":
    main()
