"""original -> ours: runs written by the ORIGINAL smdebug 1.0.34's own writer are read by OUR create_trial.

``original_scripts/write_runs.py`` writes, inside the original's environment and with its own classes
(``FileWriter``, ``CollectionManager``, its reduction helpers, ``training_has_ended``):

* ``original_multi``: workers ``worker_0``/``worker_1`` (``_meta.num_workers`` = 2), TRAIN/EVAL/GLOBAL/
  PREDICT steps with mode steps, float16/32/64, int32, int64, uint8, bool, complex128 and string
  tensors, 0-d/(1,)/multi-d shapes, a Python scalar, 13 stored reductions of ``weights/w``, a
  reduction-only tensor with a shape entry, a shape-only tensor, a tensor with both a value and a
  shape entry, and a step (global 3) that ``worker_1`` never wrote;
* ``original_single``: one worker, GLOBAL mode only, plus the dtypes the original can write but not
  read back (int8, int16, uint16, uint32, uint64, complex64);
* ``original_tf_devices``: workers named by TF device strings (serialised in file names as the
  original's TF hook does) and reductions that keep ``:0`` in the tensor name.

In ``original_multi`` worker_1 also has a step (global 5) with shape entries only (an index file
naming no event file).

It also records everything it wrote (``expected.json`` + ``expected.npz``); every test compares our
reader against that record.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from interop_support import (
    assert_same_array,
    compare_answers,
    no_error,
    probe_with_original,
    probe_with_ours,
    read_with_original,
    resolve_arrays,
    run_original,
)
from smdebug.core.modes import ModeKeys
from smdebug.exceptions import InvalidWorker, ShapeUnavailableForStep, TensorUnavailableForStep
from smdebug.trials import create_trial

pytestmark = pytest.mark.interop

MODES = ["TRAIN", "EVAL", "PREDICT", "GLOBAL"]


@pytest.fixture(scope="module")
def original_runs(original_python, tmp_path_factory):
    """{run name: manifest of what the original wrote (arrays resolved)}."""
    out = tmp_path_factory.mktemp("written_by_original")
    run_original(original_python, "write_runs.py", out)
    with open(out / "expected.json") as f:
        manifest = json.load(f)
    with np.load(out / "expected.npz", allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    return resolve_arrays(manifest, arrays)["runs"]


@pytest.fixture(scope="module")
def multi(original_runs):
    return original_runs["original_multi"]


@pytest.fixture(scope="module")
def multi_trial(multi):
    return create_trial(multi["path"])


def _expected_mode_steps(run, mode_name):
    if mode_name == "GLOBAL":
        return sorted(int(g) for g in run["steps"])
    return sorted(ms for m, ms in run["steps"].values() if m == mode_name)


def test_run_layout_is_the_originals(multi):
    """Sanity of the fixture: the files really come from the original's writer (magic footer)."""
    path = os.path.join(multi["path"], "events", "000000000000", "000000000000_worker_0.tfevents")
    with open(path, "rb") as f:
        data = f.read()
    assert data[-4:] == bytes.fromhex("b3c02d06")  # masked crc32c(b"0x12345678"), the original's footer
    assert os.path.exists(os.path.join(multi["path"], "training_job_end.ts"))
    assert sorted(os.listdir(os.path.join(multi["path"], "collections", "000000000"))) == [
        "worker_0_collections.json",
        "worker_1_collections.json",
    ]


def test_workers_steps_and_modes(multi, multi_trial):
    trial = multi_trial
    assert trial.workers() == ["worker_0", "worker_1"]
    assert trial.num_workers == 2
    assert trial.steps() == _expected_mode_steps(multi, "GLOBAL")
    for mode in MODES:
        assert trial.steps(mode=ModeKeys[mode]) == _expected_mode_steps(multi, mode), mode
    assert {m.name for m in trial.modes()} == {m for m, _ in multi["steps"].values() if m != "GLOBAL"}
    for g, (mode, mode_step) in multi["steps"].items():
        g = int(g)
        assert trial.mode(g) == ModeKeys[mode]
        assert trial.mode_step(g) == mode_step
        assert trial.mode_modestep(g) == (ModeKeys[mode], mode_step)
        assert trial.global_step(ModeKeys[mode], mode_step) == g


def test_tensor_names(multi, multi_trial):
    # Reductions are attached to their tensor, never listed as tensors of their own.
    assert multi_trial.tensor_names() == sorted(multi["tensors"])
    for g in multi["steps"]:
        expected = sorted(n for n, per in multi["tensors"].items() if g in per)
        assert multi_trial.tensor_names(step=int(g)) == expected, g


def test_values_every_dtype_every_worker(multi, multi_trial):
    checked = 0
    for name, per_step in multi["tensors"].items():
        t = multi_trial.tensor(name)
        for g, per_worker in per_step.items():
            g = int(g)
            assert t.workers(g) == sorted(per_worker), (name, g)
            mode, mode_step = multi["steps"][str(g)]
            for worker, slot in per_worker.items():
                if "value" not in slot:
                    continue
                expected = slot["value"]
                assert_same_array(t.value(g, worker=worker), expected, f"{name}@{g}/{worker}")
                assert_same_array(
                    t.value(mode_step, mode=ModeKeys[mode], worker=worker), expected, f"{name}@{mode}:{mode_step}"
                )
                checked += 1
            first = sorted(w for w, s in per_worker.items())[0]
            if "value" in per_worker[first]:
                assert_same_array(t.value(g), per_worker[first]["value"], f"{name}@{g} default worker")
    assert checked > 150


def test_tensor_steps_per_mode(multi, multi_trial):
    for name, per_step in multi["tensors"].items():
        t = multi_trial.tensor(name)
        assert t.steps() == sorted(int(g) for g in per_step), name
        for mode in ("TRAIN", "EVAL", "PREDICT"):
            expected = sorted(ms for g, (m, ms) in multi["steps"].items() if m == mode and g in per_step)
            assert t.steps(mode=ModeKeys[mode]) == expected, (name, mode)


def test_stored_reductions(multi, multi_trial):
    n = 0
    for name, per_step in multi["tensors"].items():
        t = multi_trial.tensor(name)
        for g, per_worker in per_step.items():
            for worker, slot in per_worker.items():
                expected = {tuple(k.split("|")): v for k, v in slot["reductions"].items()}
                expected = {(op, bool(int(a))): v for (op, a), v in expected.items()}
                got = t.reduction_values(int(g), worker=worker)
                assert set(got) == set(expected), (name, g, worker)
                for (op, is_abs), value in expected.items():
                    assert_same_array(got[(op, is_abs)], value, f"{name} {op} abs={is_abs} @{g}/{worker}")
                    assert_same_array(
                        t.reduction_value(int(g), op, worker=worker, abs=is_abs), value, f"{name} {op}"
                    )
                    n += 1
    assert n >= 13 * 13  # 13 reductions of weights/w at 13 (step, worker) pairs, and more


def test_shapes_and_partial_saves(multi, multi_trial):
    for name, per_step in multi["tensors"].items():
        t = multi_trial.tensor(name)
        for g, per_worker in per_step.items():
            for worker, slot in per_worker.items():
                if "shape" in slot:
                    assert t.shape(int(g), worker=worker) == tuple(slot["shape"]), (name, g)
                elif "value" in slot:
                    assert t.shape(int(g), worker=worker) == slot["value"].shape, (name, g)
                else:
                    with pytest.raises(ShapeUnavailableForStep):
                        t.shape(int(g), worker=worker)
                if "value" not in slot:
                    with pytest.raises(TensorUnavailableForStep):
                        t.value(int(g), worker=worker)


def test_value_and_shape_of_the_same_tensor_are_both_kept(multi, multi_trial):
    """The original's reader drops the value when a step also has a shape entry (spec §3 QUIRK); ours
    keeps both, on the original's own files."""
    t = multi_trial.tensor("weights/raw_and_shape")
    slot = multi["tensors"]["weights/raw_and_shape"]["0"]["worker_0"]
    assert_same_array(t.value(0, worker="worker_0"), slot["value"])
    assert t.shape(0, worker="worker_0") == tuple(slot["shape"]) == (2, 2)


def test_step_missing_on_one_worker(multi, multi_trial):
    assert 3 in multi["worker_steps"]["worker_0"] and 3 not in multi["worker_steps"]["worker_1"]
    assert 3 in multi_trial.steps()  # the run ended: the incomplete step is still a step
    assert multi_trial.tensor("weights/w").workers(3) == ["worker_0"]
    with pytest.raises(InvalidWorker):
        multi_trial.tensor("weights/w").value(3, worker="worker_1")
    assert_same_array(
        multi_trial.tensor("weights/w").value(3), multi["tensors"]["weights/w"]["3"]["worker_0"]["value"]
    )


def test_collections(multi, multi_trial):
    expected = multi["collections"]
    got = multi_trial.collections()
    assert sorted(got) == sorted(expected)
    for name, exp in expected.items():
        c = got[name]
        assert c.include_regex == exp["include_regex"], name
        assert sorted(c.tensor_names) == sorted(exp["tensor_names"]), name
        assert (c.reduction_config.to_json_dict() if c.reduction_config else None) == exp["reduction_config"], name
        assert (c.save_config.to_json_dict() if c.save_config else None) == exp["save_config"], name
        assert c.save_histogram == exp["save_histogram"], name
    rc = got["weights"].reduction_config
    assert rc.reductions == ["mean", "max", "min", "sum", "std", "variance", "prod"]
    assert rc.norms == ["l1", "l2"] and rc.abs_reductions == ["mean", "max"] and rc.abs_norms == ["l1", "l2"]
    assert rc.save_raw_tensor and rc.save_shape
    sc = got["weights"].save_config
    assert sc.get_save_config(ModeKeys.EVAL).save_steps == [0, 1]
    assert sc.get_save_config(ModeKeys.PREDICT).end_step == 10
    assert sc.get_save_config(ModeKeys.GLOBAL).save_interval == 5
    # membership by explicit names (no regex) and by regex
    assert multi_trial.tensor_names(collection="shapes") == ["shapes/one", "shapes/python_scalar", "shapes/zero_d"]
    assert multi_trial.tensor_names(collection="weights") == sorted(n for n in multi["tensors"] if n.startswith("weights/"))


def test_tf_device_worker_names(original_runs):
    run = original_runs["original_tf_devices"]
    trial = create_trial(run["path"])
    devices = ["/job:worker/replica:0/task:0/device:GPU:0", "/job:worker/replica:0/task:0/device:GPU:1"]
    assert trial.workers() == devices and trial.num_workers == 2
    assert trial.tensor_names() == ["dense/kernel:0", "loss:0"]
    t = trial.tensor("dense/kernel:0")
    for g, per_worker in run["tensors"]["dense/kernel:0"].items():
        assert t.workers(int(g)) == devices
        for device, slot in per_worker.items():
            assert_same_array(t.value(int(g), worker=device), slot["value"])
            got = t.reduction_values(int(g), worker=device)
            assert sorted(got) == [("l2", False), ("max", True), ("mean", False)]
            for key, value in slot["reductions"].items():
                op, is_abs = key.split("|")
                assert_same_array(got[(op, bool(int(is_abs)))], value)


def test_dtypes_the_original_cannot_read_back(original_runs, original_python, tmp_path):
    """int8 (read back by the original as uint8), int16, uint16, uint32, uint64 and complex64 (the
    original raises) are written by the original's writer; our reader returns them exactly."""
    run = original_runs["original_single"]
    trial = create_trial(run["path"])
    assert trial.workers() == ["worker_0"] and trial.steps() == [0, 3, 7]
    assert trial.steps(mode=ModeKeys.GLOBAL) == [0, 3, 7] and trial.modes() == set()
    assert trial.mode(3) == ModeKeys.GLOBAL and trial.mode_step(3) == 3
    for name, per_step in run["tensors"].items():
        for g, per_worker in per_step.items():
            assert_same_array(trial.tensor(name).value(int(g)), per_worker["worker_0"]["value"], f"{name}@{g}")
    # ...and the original itself does not (documenting why this matters)
    dump = no_error(read_with_original(original_python, [run["path"]], tmp_path / "dump")[0], "original_single")
    at = dump["tensors"]["dtypes/int8"]["at"]["0"]["by_worker"]["worker_0"]["value"]
    assert at.dtype == np.uint8  # spec: INT8 decoded as uint8
    for name in ("dtypes/int16", "dtypes/uint16", "dtypes/uint32", "dtypes/uint64", "dtypes/complex64"):
        assert "error" in dump["tensors"][name]["at"]["0"]["by_worker"]["worker_0"]["value"], name


def test_harness_original_reads_its_own_runs(multi, original_python, tmp_path):
    """Control for the two helper scripts: the original's reader returns what its writer wrote (for
    what it supports), so a mismatch elsewhere is ours, not the harness's."""
    dump = no_error(read_with_original(original_python, [multi["path"]], tmp_path / "dump")[0], "original_multi")
    assert dump["workers"] == ["worker_0", "worker_1"] and dump["num_workers"] == 2
    assert dump["steps"]["GLOBAL"] == _expected_mode_steps(multi, "GLOBAL")
    for name in ("dtypes/float16", "dtypes/int64", "dtypes/string", "shapes/zero_d", "weights/w", "loss"):
        for g, per_worker in multi["tensors"][name].items():
            for worker, slot in per_worker.items():
                got = no_error(dump["tensors"][name]["at"][g]["by_worker"][worker]["value"], name)
                assert_same_array(got, slot["value"], f"{name}@{g}/{worker}")


def test_analysis_api_answers_like_the_original(original_runs, original_python, tmp_path):
    """The same questions (see original_scripts/probe_api.py) to the original and to our reader, on
    the original's own runs: identical answers except where the original is documented to fail."""
    undecodable = "the original cannot decode this dtype (spec §2.3 QUIRK: INT8 as uint8, others KeyError)"
    exempt = {
        "original_multi": {"weights/raw_and_shape": "the original drops a value that also has a shape entry (spec §3 QUIRK)"},
        "original_single": {f"dtypes/{d}": undecodable for d in ("int8", "int16", "uint16", "uint32", "uint64", "complex64")},
        "original_tf_devices": {},
    }
    paths = [original_runs[name]["path"] for name in exempt]
    answers = probe_with_original(original_python, paths, tmp_path / "answers.json")
    compared = sum(compare_answers(a, probe_with_ours(p), ex) for ex, p, a in zip(exempt.values(), paths, answers))
    assert compared > 1000
