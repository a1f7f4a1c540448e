"""``smdebug ls`` on real runs written by a hook, run as the real console script."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from _cli_runs import mlp_run, write_mlp_run  # noqa: F401 - mlp_run is a fixture
from _support import write_run
from smdebug.cli._common import compact_steps, expand_steps, subsample
from smdebug.core.modes import ModeKeys
from smdebug.trials import create_trial


@pytest.mark.parametrize(
    "steps, text",
    [
        ([], "-"),
        ([5], "5"),
        ([0, 1, 2, 3], "0-3"),
        ([0, 10, 20, 30, 40, 50, 60, 70, 80, 90], "0-90/10"),
        ([3, 7], "3,7"),
        ([0, 1], "0-1"),
        ([0, 10, 20, 25, 26, 27], "0-20/10,25-27"),
        ([0, 2, 4, 5, 9], "0-4/2,5,9"),
    ],
)
def test_compact_steps(steps, text):
    assert compact_steps(steps) == text
    assert expand_steps(text) == steps


@given(st.sets(st.integers(min_value=0, max_value=5000), max_size=60))
def test_compact_steps_round_trip(steps):
    steps = sorted(steps)
    assert expand_steps(compact_steps(steps)) == steps


def test_subsample_keeps_ends_and_spreads():
    assert subsample(range(10), None) == list(range(10))
    picked = subsample(range(1000), 11)
    assert picked[0] == 0 and picked[-1] == 999 and len(picked) == 11
    assert picked == sorted(set(picked))


def test_ls_text_on_a_trained_run(mlp_run, smdebug_cli):
    path, _ = mlp_run
    out = smdebug_cli("ls", str(path))
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert f"Run          {path}  (finished)" in text
    assert "Workers      1: worker_0" in text
    assert "Global steps 50 (0-49)" in text
    lines = text.splitlines()
    train = next(line for line in lines if line.strip().startswith("TRAIN "))
    assert train.split() == ["TRAIN", "40", "0", "39", "0-39"]
    evals = next(line for line in lines if line.strip().startswith("EVAL "))
    assert evals.split() == ["EVAL", "10", "0", "9", "0-9"]
    gradients = next(line for line in lines if line.strip().startswith("gradients "))
    assert gradients.split() == ["gradients", "4"]
    # gradients are TRAIN-only; weights are saved in both modes; columns: name, TRAIN, EVAL
    assert next(line for line in lines if line.strip().startswith("gradient/weights/fc1")).split() == [
        "gradient/weights/fc1", "0-39", "-"]
    assert next(line for line in lines if line.strip().startswith("weights/fc1")).split() == [
        "weights/fc1", "0-39", "0-9"]
    assert "Tensors (10):" in text


def test_ls_json_matches_the_trial_api(mlp_run, smdebug_cli):
    path, _ = mlp_run
    out = smdebug_cli("ls", str(path), "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    trial = create_trial(str(path))
    assert doc["finished"] is True and doc["state"] == "finished"
    assert doc["workers"] == ["worker_0"] and doc["num_workers"] == 1
    assert doc["global_steps"]["steps"] == trial.steps()
    assert doc["modes"]["TRAIN"]["steps"] == trial.steps(mode=ModeKeys.TRAIN)
    assert doc["modes"]["EVAL"]["count"] == 10 and doc["modes"]["EVAL"]["ranges"] == "0-9"
    assert doc["tensor_count"] == len(trial.tensor_names()) == 10
    by_name = {t["name"]: t for t in doc["tensors"]}
    assert sorted(by_name) == trial.tensor_names()
    for name, t in by_name.items():
        for mode in (ModeKeys.TRAIN, ModeKeys.EVAL):
            expected = trial.tensor(name).steps(mode=mode)
            got = t["modes"].get(mode.name, {"steps": []})["steps"]
            assert got == expected, (name, mode)
    assert by_name["loss"]["collections"] == ["losses"]
    assert by_name["scalar/accuracy"]["collections"] == ["scalars"]
    colls = {c["name"]: c["tensors"] for c in doc["collections"]}
    assert colls["weights"] == 2 and colls["biases"] == 2 and colls["gradients"] == 4 and colls["losses"] == 1


def test_ls_shows_save_intervals_as_ranges(tmp_path, smdebug_cli):
    write_mlp_run(tmp_path / "run", save_interval=5, epochs=1, steps_per_epoch=20, eval_steps=10)
    doc = json.loads(smdebug_cli("ls", str(tmp_path / "run"), "--json").stdout)
    # save_scalar saves at every step: the steps of the run are all there, the tensors every 5th
    assert doc["modes"]["TRAIN"]["ranges"] == "0-19" and doc["modes"]["EVAL"]["ranges"] == "0-9"
    tensors = {t["name"]: t["modes"] for t in doc["tensors"]}
    assert tensors["loss"]["TRAIN"] == {"count": 4, "first": 0, "last": 15, "ranges": "0-15/5", "steps": [0, 5, 10, 15]}
    assert tensors["loss"]["EVAL"]["ranges"] == "0,5"
    assert tensors["gradient/weights/fc1"] == {"TRAIN": tensors["loss"]["TRAIN"]}
    assert tensors["scalar/accuracy"]["EVAL"]["ranges"] == "0-9"


def test_ls_filters(mlp_run, smdebug_cli):
    path, _ = mlp_run
    out = smdebug_cli("ls", str(path), "--collection", "gradients")
    assert out.returncode == 0, out.stderr
    assert "Tensors (4 of 10):" in out.stdout
    doc = json.loads(smdebug_cli("ls", str(path), "--regex", "^weights/", "--json").stdout)
    assert [t["name"] for t in doc["tensors"]] == ["weights/fc1", "weights/fc2"]
    out = smdebug_cli("ls", str(path), "--collection", "nope")
    assert out.returncode == 1 and "no collection 'nope'" in out.stderr
    out = smdebug_cli("ls", str(path), "--regex", "^nothing")
    assert out.returncode == 1 and "no tensor matches" in out.stderr
    out = smdebug_cli("ls", str(path), "--no-tensors", "--json")
    assert json.loads(out.stdout)["tensors"] == []


def test_ls_a_run_still_training(tmp_path, smdebug_cli):
    hook, _ = write_mlp_run(tmp_path / "live", close=False, epochs=1, steps_per_epoch=5, eval_steps=0)
    try:
        out = smdebug_cli("ls", str(tmp_path / "live"))
        assert out.returncode == 0, out.stderr
        assert "(still training)" in out.stdout
        doc = json.loads(smdebug_cli("ls", str(tmp_path / "live"), "--json").stdout)
        # the last step may still be open (its files complete when the next step starts or at close)
        assert doc["finished"] is False and doc["modes"]["TRAIN"]["ranges"] in ("0-3", "0-4")
    finally:
        hook.close()
    doc = json.loads(smdebug_cli("ls", str(tmp_path / "live"), "--json").stdout)
    assert doc["finished"] is True and doc["modes"]["TRAIN"]["ranges"] == "0-4"


def test_ls_workers_of_a_multi_worker_run(tmp_path, smdebug_cli):
    write_run(tmp_path / "dist", range(6), workers=("worker_0", "worker_1"),
              tensors=lambda step, w: {"w": np.full(3, step + int(w[-1]) * 100, np.float32)})
    doc = json.loads(smdebug_cli("ls", str(tmp_path / "dist"), "--json").stdout)
    assert doc["workers"] == ["worker_0", "worker_1"] and doc["num_workers"] == 2
    assert doc["modes"]["GLOBAL"]["ranges"] == "0-5"
    assert doc["tensors"][0]["modes"]["GLOBAL"]["ranges"] == "0-5"
    text = smdebug_cli("ls", str(tmp_path / "dist")).stdout
    assert "Workers      2: worker_0, worker_1" in text and "GLOBAL STEPS" in text


def test_ls_errors(tmp_path, smdebug_cli):
    out = smdebug_cli("ls", str(tmp_path / "missing"))
    assert out.returncode == 2 and f"no smdebug run at {tmp_path / 'missing'}: the directory does not exist" in out.stderr
    (tmp_path / "empty").mkdir()
    out = smdebug_cli("ls", str(tmp_path / "empty"))
    assert out.returncode == 2 and "no smdebug run at" in out.stderr and "the directory is empty" in out.stderr
    assert "Traceback" not in out.stderr


def test_ls_is_quick_on_a_long_run(tmp_path, smdebug_cli):
    """10,000 steps in two modes: ls reads the index only."""
    def mode_of(step):
        return (ModeKeys.EVAL, step // 10) if step % 10 == 9 else (ModeKeys.TRAIN, step - step // 10)

    write_run(tmp_path / "long", range(10_000), mode_of=mode_of,
              tensors=lambda step, w: {"w": np.full(3, step, np.float32), "loss": np.array([1.0 / (step + 1)], np.float32)})
    start = time.monotonic()
    out = smdebug_cli("ls", str(tmp_path / "long"), "--json")
    elapsed = time.monotonic() - start
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["global_steps"]["count"] == 10_000
    assert doc["modes"]["TRAIN"]["ranges"] == "0-8999" and doc["modes"]["EVAL"]["ranges"] == "0-999"
    assert {t["name"]: t["modes"]["EVAL"]["count"] for t in doc["tensors"]} == {"loss": 1000, "w": 1000}
    assert elapsed < 30, f"smdebug ls took {elapsed:.1f}s on 10,000 steps"
