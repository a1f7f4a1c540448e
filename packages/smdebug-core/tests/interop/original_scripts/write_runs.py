"""Write runs with the ORIGINAL smdebug 1.0.34's own writing classes, plus what they should contain.

Runs inside the original's virtual environment::

    python write_runs.py OUT_DIR

Uses the original's framework-free writing path: ``smdebug.core.writer.FileWriter`` (event file + index
file of one step of one worker, exactly what its hooks use), ``CollectionManager``/``Collection``/
``ReductionConfig``/``SaveConfig`` for the collections files, its reduction helpers for
``smdebug/reductions/...`` tensors, and ``training_has_ended`` for the end marker.

Writes ``OUT_DIR/<run>/`` for each run, and ``OUT_DIR/expected.json`` + ``OUT_DIR/expected.npz``:
for every run, the steps/modes/workers/collections, and for every (tensor, global step, worker) the
value written (npz key), the shape entry and the stored reductions.
"""

import json
import os
import re
import sys
import zlib

import numpy as np
from smdebug.core.access_layer.utils import training_has_ended
from smdebug.core.collection import Collection
from smdebug.core.collection_manager import CollectionManager
from smdebug.core.modes import ModeKeys
from smdebug.core.reduction_config import ReductionConfig
from smdebug.core.reductions import get_numpy_reduction, get_reduction_tensor_name
from smdebug.core.save_config import SaveConfig, SaveConfigMode
from smdebug.core.utils import serialize_tf_device
from smdebug.core.writer import FileWriter


class Expected:
    def __init__(self):
        self.arrays = {}
        self.runs = {}

    def put(self, arr):
        key = "e%d" % len(self.arrays)
        self.arrays[key] = np.asarray(arr)
        return {"array": key}


class RunWriter:
    """One run: records what it writes in the manifest as it writes it."""

    def __init__(self, expected, root, name, workers):
        self.expected = expected
        self.path = os.path.join(root, name)
        self.workers = workers
        self.run = expected.runs[name] = {
            "path": self.path,
            "workers": list(workers),
            "num_workers": len(workers),
            "steps": {},  # global step -> [mode, mode_step]
            "worker_steps": {w: [] for w in workers},
            "tensors": {},  # name -> str(global step) -> worker -> {"value": key?, "shape": [..]?, "reductions": {}}
            "collections": None,
        }
        self.writer = None
        self.cur = None

    @staticmethod
    def file_worker(worker):
        """Name used in file names: TF device strings are serialised as the original's TF hook does."""
        return serialize_tf_device(worker) if worker.startswith("/") else worker

    def begin(self, worker, step, mode, mode_step):
        self.writer = FileWriter(trial_dir=self.path, worker=self.file_worker(worker), step=step)
        self.cur = (worker, step, mode, mode_step)
        prev = self.run["steps"].setdefault(str(step), [mode.name, mode_step])
        assert prev == [mode.name, mode_step]
        self.run["worker_steps"][worker].append(step)

    def _slot(self, name):
        worker, step = self.cur[0], self.cur[1]
        return self.run["tensors"].setdefault(name, {}).setdefault(str(step), {}).setdefault(
            worker, {"reductions": {}}
        )

    def tensor(self, name, value, as_written=None):
        """Write ``value`` (what a hook hands the writer); ``as_written`` is what a reader must return."""
        _, _, mode, mode_step = self.cur
        self.writer.write_tensor(tdata=value, tname=name, mode=mode, mode_step=mode_step)
        expected = np.asarray(value) if as_written is None else as_written
        self._slot(name)["value"] = self.expected.put(expected)

    def shape(self, name, shape):
        _, _, mode, mode_step = self.cur
        self.writer.write_shape(name, tuple(shape), mode=mode, mode_step=mode_step)
        self._slot(name)["shape"] = [int(d) for d in shape]

    def reduction(self, name, value, op, is_abs, remove_colon_index=True):
        """Store a reduction the way the original hooks do (its own helpers, as a 1-element tensor;
        the TF hook keeps ``:0`` suffixes: ``remove_colon_index=False``)."""
        _, _, mode, mode_step = self.cur
        red = get_numpy_reduction(op, value, abs=is_abs)
        rname = get_reduction_tensor_name(name, op, is_abs, remove_colon_index=remove_colon_index)
        self.writer.write_tensor(tdata=red, tname=rname, mode=mode, mode_step=mode_step)
        self._slot(name)["reductions"]["%s|%d" % (op, int(is_abs))] = self.expected.put(np.array([red]))

    def end(self):
        self.writer.close()
        self.writer = None

    def collections(self, colls):
        for w in self.workers:
            cm = CollectionManager()
            for c in colls:
                cm.add(c)
            cm.set_num_workers(len(self.workers))
            cm.export(self.path, "%s_collections.json" % self.file_worker(w))
        self.run["collections"] = CollectionManager(
            collections={c.name: c for c in colls}
        ).to_json_dict()["collections"]

    def finish(self):
        training_has_ended(self.path)


def rng_for(*parts):
    return np.random.default_rng(zlib.crc32(repr(parts).encode()))


def dtype_values(rng, step, worker_index):
    base = step * 10 + worker_index
    return {
        "dtypes/float16": (rng.normal(size=(2, 3)) * 10).astype(np.float16),
        "dtypes/float32": rng.normal(size=(4,)).astype(np.float32),
        "dtypes/float64": rng.normal(size=(2, 2, 2)),
        "dtypes/int32": np.arange(3, dtype=np.int32) - base,
        "dtypes/int64": (np.arange(6, dtype=np.int64).reshape(2, 3) - 3) * (2**40 + base),
        "dtypes/uint8": ((np.arange(5) * 50 + base) % 256).astype(np.uint8),
        "dtypes/bool": np.array([[True, False], [base % 2 == 0, True]]),
        "dtypes/complex128": np.array([1 + 2j, base - 1j]),
    }


def multi_worker_run(expected, root):
    """Two workers, TRAIN/EVAL/GLOBAL/PREDICT steps, reductions, shapes; worker_1 misses one step."""
    workers = ["worker_0", "worker_1"]
    r = RunWriter(expected, root, "original_multi", workers)
    T, E, G, P = ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.GLOBAL, ModeKeys.PREDICT
    schedule = [(0, T, 0), (1, T, 1), (2, E, 0), (3, E, 1), (4, T, 2), (5, G, 5), (6, P, 0)]
    red_ops = [("mean", False), ("max", False), ("min", False), ("sum", False), ("std", False),
               ("variance", False), ("prod", False), ("l1", False), ("l2", False),
               ("mean", True), ("max", True), ("l1", True), ("l2", True)]
    for wi, worker in enumerate(workers):
        for step, mode, mode_step in schedule:
            if worker == "worker_1" and step == 3:
                continue  # a step this worker never wrote
            rng = rng_for("multi", worker, step)
            r.begin(worker, step, mode, mode_step)
            if worker == "worker_1" and step == 5:
                # a step with shape entries only: its index file names no event file
                r.shape("weights/shape_only", (7, 1, 3))
                r.shape("weights/reduction_only", (8,))
                r.end()
                continue
            for name, value in dtype_values(rng, step, wi).items():
                r.tensor(name, value)
            r.tensor("dtypes/string", np.array(["w%d" % wi, "step %d" % step, "naïve ✓"]))
            r.tensor("shapes/zero_d", np.array(step + wi / 10, dtype=np.float32))
            r.tensor("shapes/one", np.array([step * 1.5 + wi]))
            # a Python scalar is stored as a 1-element array (make_numpy_array)
            r.tensor("shapes/python_scalar", float(step) + 0.25 * wi, as_written=np.array([float(step) + 0.25 * wi]))
            w = rng.normal(size=(3, 4)).astype(np.float32)
            r.tensor("weights/w", w)
            for op, is_abs in red_ops:
                r.reduction("weights/w", w, op, is_abs)
            red_only = rng.normal(size=(8,))
            for op, is_abs in [("mean", False), ("l2", False), ("max", True)]:
                r.reduction("weights/reduction_only", red_only, op, is_abs)
            r.shape("weights/reduction_only", red_only.shape)
            r.shape("weights/shape_only", (7, 1, 3))
            both = rng.normal(size=(2, 2)).astype(np.float32)
            r.tensor("weights/raw_and_shape", both)
            r.shape("weights/raw_and_shape", both.shape)
            if mode == T:
                r.tensor("gradient/w", rng.normal(size=(3, 4)).astype(np.float32))
            r.tensor("loss", np.array([1.0 / (step + 1) + wi], dtype=np.float32))
            r.end()
    weights_rc = ReductionConfig(
        reductions=["mean", "max", "min", "sum", "std", "variance", "prod"], norms=["l1", "l2"],
        abs_reductions=["mean", "max"], abs_norms=["l1", "l2"], save_raw_tensor=True, save_shape=True,
    )
    per_mode = SaveConfig(
        mode_save_configs={
            ModeKeys.TRAIN: SaveConfigMode(save_interval=1),
            ModeKeys.EVAL: SaveConfigMode(save_steps=[0, 1], save_interval=100),
            ModeKeys.PREDICT: SaveConfigMode(save_interval=1, start_step=0, end_step=10),
            ModeKeys.GLOBAL: SaveConfigMode(save_interval=5),
        }
    )
    colls = [
        Collection("weights", include_regex=["^weights/"], reduction_config=weights_rc, save_config=per_mode),
        Collection("gradients", include_regex=["^gradient/"], save_config=SaveConfig(save_interval=1)),
        Collection("losses", include_regex=["loss"], reduction_config=ReductionConfig(save_raw_tensor=True)),
        Collection("dtypes", include_regex=["^dtypes/"], save_config=SaveConfig(save_interval=1)),
        Collection("shapes", save_config=SaveConfig(save_interval=1)),
    ]
    for c in colls:
        for name in r.run["tensors"]:
            if c.name != "shapes" and any(re.search(rx, name) for rx in c.include_regex):
                c.add_tensor_name(name)
    for name in ("shapes/zero_d", "shapes/one", "shapes/python_scalar"):
        colls[-1].add_tensor_name(name)
    r.collections(colls)
    r.finish()


def single_worker_run(expected, root):
    """One worker, GLOBAL mode only (FileWriter's default mode step), every dtype the writer knows."""
    r = RunWriter(expected, root, "original_single", ["worker_0"])
    for step in (0, 3, 7):
        rng = rng_for("single", step)
        r.begin("worker_0", step, ModeKeys.GLOBAL, step)
        for name, value in dtype_values(rng, step, 0).items():
            r.tensor(name, value)
        # dtypes the original writes but cannot read back (int8 comes back as uint8; the others raise)
        r.tensor("dtypes/int8", np.array([-128, -1, 0, 1, 127], dtype=np.int8))
        r.tensor("dtypes/int16", np.array([-30000, step, 30000], dtype=np.int16))
        r.tensor("dtypes/uint16", np.array([0, step, 65535], dtype=np.uint16))
        r.tensor("dtypes/uint32", np.array([0, step, 2**32 - 1], dtype=np.uint32))
        r.tensor("dtypes/uint64", np.array([0, step, 2**64 - 1], dtype=np.uint64))
        r.tensor("dtypes/complex64", np.array([1 + 1j, step - 2j], dtype=np.complex64))
        r.tensor("scalar/loss", np.array([0.5 / (step + 1)], dtype=np.float32))
        r.end()
    colls = [Collection("default", include_regex=[".*"]), Collection("losses", tensor_names=["scalar/loss"])]
    r.collections(colls)
    r.finish()


def tf_devices_run(expected, root):
    """Workers named by TF device strings (MirroredStrategy), serialised in file names
    (``_job-worker_replica-0_task-0_device-GPU-0``); reductions keep ``:0`` like the TF hook."""
    devices = ["/job:worker/replica:0/task:0/device:GPU:0", "/job:worker/replica:0/task:0/device:GPU:1"]
    r = RunWriter(expected, root, "original_tf_devices", devices)
    for di, device in enumerate(devices):
        for step, mode, mode_step in [(0, ModeKeys.TRAIN, 0), (1, ModeKeys.TRAIN, 1), (2, ModeKeys.EVAL, 0)]:
            r.begin(device, step, mode, mode_step)
            kernel = rng_for("tf", di, step).normal(size=(4, 3)).astype(np.float32)
            r.tensor("dense/kernel:0", kernel)
            for op, is_abs in [("mean", False), ("l2", False), ("max", True)]:
                r.reduction("dense/kernel:0", kernel, op, is_abs, remove_colon_index=False)
            r.tensor("loss:0", np.array([step + di / 2], dtype=np.float32))
            r.end()
    colls = [
        Collection("weights", include_regex=["kernel"], reduction_config=ReductionConfig(
            reductions=["mean"], norms=["l2"], abs_reductions=["max"], save_raw_tensor=True)),
        Collection("losses", include_regex=["loss"]),
    ]
    r.collections(colls)
    r.finish()


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    expected = Expected()
    multi_worker_run(expected, out)
    single_worker_run(expected, out)
    tf_devices_run(expected, out)
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump({"runs": expected.runs}, f)
    np.savez(os.path.join(out, "expected.npz"), **expected.arrays)


if __name__ == "__main__":
    main()
