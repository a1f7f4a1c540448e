"""``smdebug show`` on real runs, checked against the trial API and the values the training computed."""

from __future__ import annotations

import json

import numpy as np
import pytest

from _cli_runs import mlp_run  # noqa: F401 - fixture
from _support import NumpyHook, write_run
from smdebug.core.modes import ModeKeys
from smdebug.trials import create_trial


def _json(smdebug_cli, *args):
    out = smdebug_cli("show", *map(str, args), "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_show_value_at_a_step(mlp_run, smdebug_cli):
    path, _ = mlp_run
    trial = create_trial(str(path))
    expected = trial.tensor("weights/fc1").value(7)
    doc = _json(smdebug_cli, path, "weights/fc1", "--step", 7)
    (row,) = doc["rows"]
    assert row["step"] == 7 and row["mode"] == "TRAIN" and row["mode_step"] == 7 and row["worker"] == "worker_0"
    assert row["shape"] == [4, 16] and row["dtype"] == "float32"
    np.testing.assert_array_equal(np.array(row["value"], np.float32), expected)

    out = smdebug_cli("show", str(path), "weights/fc1", "--step", "7")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["weights/fc1", "step", "7", "(TRAIN", "step", "7)", "worker_0"]
    assert lines[1] == "shape (4, 16)  dtype float32"
    assert f"{expected[0, 0]:.6f}"[:6] in out.stdout


def test_show_step_of_a_mode(mlp_run, smdebug_cli):
    path, losses = mlp_run
    trial = create_trial(str(path))
    doc = _json(smdebug_cli, path, "loss", "--mode", "eval", "--step", 3)
    (row,) = doc["rows"]
    assert row["mode"] == "EVAL" and row["mode_step"] == 3
    assert row["step"] == trial.global_step(ModeKeys.EVAL, 3)
    assert row["value"] == pytest.approx([losses["EVAL"][3]])


def test_show_every_step_of_a_scalar(mlp_run, smdebug_cli):
    path, losses = mlp_run
    doc = _json(smdebug_cli, path, "loss", "--mode", "EVAL")
    assert [r["mode_step"] for r in doc["rows"]] == list(range(10))
    assert [r["value"] for r in doc["rows"]] == pytest.approx([float(v) for v in losses["EVAL"]])
    doc = _json(smdebug_cli, path, "loss")
    assert [r["value"] for r in doc["rows"] if r["mode"] == "TRAIN"] == pytest.approx([float(v) for v in losses["TRAIN"]])
    assert len(doc["rows"]) == 50

    text = smdebug_cli("show", str(path), "loss", "--mode", "eval").stdout
    assert text.splitlines()[0] == "loss: 10 steps in EVAL, shape (1,), float32"
    assert "VALUE" in text.splitlines()[1]


def test_show_summary_of_every_step(mlp_run, smdebug_cli):
    path, _ = mlp_run
    trial = create_trial(str(path))
    tensor = trial.tensor("gradient/weights/fc1")
    doc = _json(smdebug_cli, path, "gradient/weights/fc1")
    assert [r["step"] for r in doc["rows"]] == tensor.steps()
    for row in doc["rows"][:5]:
        value = tensor.value(row["step"])
        stats = row["stats"]
        assert stats["l2"] == pytest.approx(float(np.linalg.norm(value)), rel=1e-5)
        assert stats["min"] == pytest.approx(float(value.min())) and stats["max"] == pytest.approx(float(value.max()))
        assert stats["nonfinite"] == 0
    text = smdebug_cli("show", str(path), "gradient/weights/fc1", "--last", "3").stdout.splitlines()
    assert text[0] == "gradient/weights/fc1: 3 steps in TRAIN, shape (4, 16), float32"
    assert text[1].split() == ["STEP", "MODE", "MODE_STEP", "WORKER", "MIN", "MAX", "MEAN", "STD", "L2"]
    # global steps: TRAIN 0-19, EVAL 20-24, TRAIN 25-44 (TRAIN steps 20-39)
    assert [line.split()[:3] for line in text[3:]] == [["42", "TRAIN", "37"], ["43", "TRAIN", "38"], ["44", "TRAIN", "39"]]


def test_show_reductions_stored_and_computed(mlp_run, smdebug_cli):
    path, _ = mlp_run
    trial = create_trial(str(path))
    tensor = trial.tensor("gradient/weights/fc1")
    (row,) = _json(smdebug_cli, path, "gradient/weights/fc1", "--step", 5, "--reduction", "l2")["rows"]
    assert row["stored"] is True  # the gradients collection saves its l2 norm
    assert row["value"] == pytest.approx(float(tensor.reduction_values(5)[("l2", False)][0]))
    (row,) = _json(smdebug_cli, path, "gradient/weights/fc1", "--step", 5, "--reduction", "min", "--abs")["rows"]
    assert row["stored"] is False and row["value"] == pytest.approx(float(np.abs(tensor.value(5)).min()))
    doc = _json(smdebug_cli, path, "weights/fc2", "--reduction", "l2", "--mode", "eval")
    assert len(doc["rows"]) == 10 and all(not r["stored"] for r in doc["rows"])
    out = smdebug_cli("show", str(path), "gradient/weights/fc1", "--step", "5", "--reduction", "mean")
    assert "mean(gradient/weights/fc1) = " in out.stdout and "(stored by the hook)" in out.stdout
    out = smdebug_cli("show", str(path), "gradient/weights/fc1", "--reduction", "max", "--abs", "--last", "2")
    assert "max(|gradient/weights/fc1|)" in out.stdout and "computed" in out.stdout


def test_show_a_tensor_saved_only_as_reductions(tmp_path, smdebug_cli):
    from smdebug.core.reduction_config import ReductionConfig
    from smdebug.core.save_config import SaveConfig

    hook = NumpyHook(out_dir=str(tmp_path / "run"), save_config=SaveConfig(save_interval=1),
                     include_collections=["weights"])
    hook.get_collection("weights").reduction_config = ReductionConfig(norms=["l2"], abs_reductions=["max"])
    for step in range(3):
        hook.begin_step()
        hook.record("weights/w", np.arange(6, dtype=np.float32) - step)
        hook.end_step()
    hook.close()
    (row,) = _json(smdebug_cli, tmp_path / "run", "weights/w", "--step", 1)["rows"]
    assert row["only_reductions"] is True and row["value"] is None
    assert row["reductions"]["l2"] == pytest.approx(float(np.linalg.norm(np.arange(6) - 1)))
    assert row["reductions"]["abs_max"] == pytest.approx(4.0)
    out = smdebug_cli("show", str(tmp_path / "run"), "weights/w", "--step", "1")
    assert "only reductions were saved: l2=5.56776  abs_max=4" in out.stdout
    out = smdebug_cli("show", str(tmp_path / "run"), "weights/w", "--step", "1", "--reduction", "mean")
    assert out.returncode == 1 and "Traceback" not in out.stderr


def test_show_workers_and_large_arrays(tmp_path, smdebug_cli):
    write_run(tmp_path / "dist", range(4), workers=("worker_0", "worker_1"),
              tensors=lambda step, w: {"big": np.arange(10_000, dtype=np.float64) * (1 + int(w[-1])),
                                       "nan": np.array([1.0, np.nan, np.inf], np.float32)})
    doc = _json(smdebug_cli, tmp_path / "dist", "big", "--step", 2)
    assert [r["worker"] for r in doc["rows"]] == ["worker_0", "worker_1"]
    assert doc["rows"][1]["value"][-1] == 2 * 9999.0 and len(doc["rows"][0]["value"]) == 10_000
    doc = _json(smdebug_cli, tmp_path / "dist", "big", "--step", 2, "--worker", "worker_1")
    assert [r["worker"] for r in doc["rows"]] == ["worker_1"]

    text = smdebug_cli("show", str(tmp_path / "dist"), "big", "--step", "2", "--worker", "worker_0").stdout
    assert "..." in text and len(text) < 2000  # numpy's summarised printing
    full = smdebug_cli("show", str(tmp_path / "dist"), "big", "--step", "2", "--worker", "worker_0", "--full").stdout
    numbers = full.split("dtype float64", 1)[1].replace("[", " ").replace("]", " ").split()
    assert len(numbers) == 10_000 and float(numbers[-1]) == 9999.0

    doc = _json(smdebug_cli, tmp_path / "dist", "nan", "--step", 0, "--worker", "worker_0")
    assert doc["rows"][0]["value"] == [1.0, "nan", "inf"]  # strict JSON: no NaN literals
    doc = _json(smdebug_cli, tmp_path / "dist", "nan", "--worker", "worker_0")
    assert doc["rows"][0]["stats"]["nonfinite"] == 2
    assert "NONFINITE" in smdebug_cli("show", str(tmp_path / "dist"), "nan").stdout


def test_show_errors(mlp_run, smdebug_cli):
    path, _ = mlp_run
    out = smdebug_cli("show", str(path), "gradient/weights/fc3")
    assert out.returncode == 1 and "did you mean 'gradient/weights/fc2', 'gradient/weights/fc1'" in out.stderr
    out = smdebug_cli("show", str(path), "gradient/weights/fc1", "--step", "45")
    assert out.returncode == 1 and "was not saved at step 45 (saved at: 0-19,25-44)" in out.stderr
    out = smdebug_cli("show", str(path), "loss", "--mode", "eval", "--step", "12")
    assert out.returncode == 1 and "EVAL step 12" in out.stderr
    out = smdebug_cli("show", str(path), "loss", "--worker", "worker_7")
    assert out.returncode == 1 and "no worker 'worker_7'" in out.stderr
    out = smdebug_cli("show", str(path), "gradient/weights/fc1", "--mode", "eval")  # TRAIN only
    assert out.returncode == 1 and "gradient/weights/fc1 has no saved step in mode EVAL" in out.stderr
    out = smdebug_cli("show", str(path), "loss", "--abs")
    assert out.returncode == 2 and "--abs goes with --reduction" in out.stderr
    out = smdebug_cli("show", str(path), "loss", "--mode", "training")
    assert out.returncode == 2 and "invalid mode" in out.stderr
    for result in (out,):
        assert "Traceback" not in result.stderr
