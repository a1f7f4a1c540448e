"""``smdebug plot`` on real runs: valid images of the asked size, and the plotted data checked
against the trial API (``--json`` prints exactly what was drawn)."""

from __future__ import annotations

import json
import struct
import subprocess
import sys

import numpy as np
import pytest

from _cli_runs import mlp_run  # noqa: F401 - fixture
from _support import write_run
from smdebug.trials import create_trial

pytest.importorskip("matplotlib", reason="smdebug plot needs matplotlib (smdebug-core[cli])")


def png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG file"
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def png_pixels(path):
    from matplotlib.image import imread

    return imread(str(path))  # float RGBA in [0, 1]


def _plot(smdebug_cli, *args):
    out = smdebug_cli("plot", *map(str, args), "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_plot_a_loss_per_mode(mlp_run, smdebug_cli, tmp_path):
    path, losses = mlp_run
    png = tmp_path / "loss.png"
    doc = _plot(smdebug_cli, path, "loss", "-o", png)
    assert png_size(png) == (1000, 600)  # 10x6 inches at 100 dpi
    pixels = png_pixels(png)
    assert pixels[..., :3].std() > 0.05  # not a blank image
    # matplotlib's first colour (#1f77b4) draws the TRAIN line
    blue = (np.abs(pixels[..., 0] - 0x1F / 255) < 0.05) & (np.abs(pixels[..., 2] - 0xB4 / 255) < 0.05)
    assert blue.sum() > 200
    series = {s["mode"]: s for s in doc["series"]}
    assert set(series) == {"TRAIN", "EVAL"}
    assert series["TRAIN"]["label"] == "loss" and series["TRAIN"]["reduction"] is None
    assert series["TRAIN"]["values"] == pytest.approx([float(v) for v in losses["TRAIN"]])
    assert series["EVAL"]["values"] == pytest.approx([float(v) for v in losses["EVAL"]])
    assert series["EVAL"]["mode_steps"] == list(range(10))
    assert doc["x"] == "global_step" and series["EVAL"]["steps"][0] == 20


def test_plot_regex_of_gradients_as_l2_norms(mlp_run, smdebug_cli, tmp_path):
    path, _ = mlp_run
    png = tmp_path / "grads.png"
    doc = _plot(smdebug_cli, path, "gradient/.*", "-o", png, "--size", "8x5", "--dpi", "50", "--logy")
    assert png_size(png) == (400, 250)
    trial = create_trial(str(path))
    labels = {s["label"]: s for s in doc["series"]}
    # the legend says "l2" for tensors drawn as their norm; the one-element gradient is drawn as it is
    assert sorted(labels) == ["gradient/biases/fc2", "l2(gradient/biases/fc1)", "l2(gradient/weights/fc1)",
                              "l2(gradient/weights/fc2)"]
    fc1 = labels["l2(gradient/weights/fc1)"]
    assert fc1["mode"] == "TRAIN" and fc1["steps"] == trial.tensor("gradient/weights/fc1").steps()
    expected = [float(np.linalg.norm(trial.tensor("gradient/weights/fc1").value(s))) for s in fc1["steps"]]
    assert fc1["values"] == pytest.approx(expected, rel=1e-5)
    # with an explicit reduction, one-element tensors are reduced too
    doc = _plot(smdebug_cli, path, "gradient/biases/fc2", "-o", tmp_path / "b.png", "--reduction", "l2")
    assert doc["series"][0]["label"] == "l2(gradient/biases/fc2)"


def test_plot_scalars_are_not_reduced(mlp_run, smdebug_cli, tmp_path):
    path, _ = mlp_run
    doc = _plot(smdebug_cli, path, "scalar/accuracy", "biases/fc2", "-o", tmp_path / "s.png", "--mode", "eval")
    labels = sorted(s["label"] for s in doc["series"])
    assert labels == ["biases/fc2", "scalar/accuracy"]
    assert doc["x"] == "mode_step" and all(s["mode"] == "EVAL" for s in doc["series"])
    assert all(0.0 <= v <= 1.0 for s in doc["series"] if s["tensor"] == "scalar/accuracy" for v in s["values"])


def test_plot_a_collection_with_a_reduction(mlp_run, smdebug_cli, tmp_path):
    path, _ = mlp_run
    trial = create_trial(str(path))
    doc = _plot(smdebug_cli, path, "--collection", "weights", "-o", tmp_path / "w.svg",
                "--reduction", "max", "--abs", "--mode", "train", "--max-points", "5")
    assert (tmp_path / "w.svg").read_text().lstrip().startswith("<?xml")
    assert sorted(s["label"] for s in doc["series"]) == ["max(|weights/fc1|)", "max(|weights/fc2|)"]
    for s in doc["series"]:
        assert len(s["values"]) == 5 and s["mode_steps"][0] == 0 and s["mode_steps"][-1] == 39
        assert s["values"] == pytest.approx(
            [float(np.abs(trial.tensor(s["tensor"]).value(g)).max()) for g in s["steps"]])


def test_plot_one_line_per_worker(tmp_path, smdebug_cli):
    write_run(tmp_path / "dist", range(5), workers=("worker_0", "worker_1"),
              tensors=lambda step, w: {"loss": np.array([step * (1 + int(w[-1]))], np.float32)})
    doc = _plot(smdebug_cli, tmp_path / "dist", "loss", "-o", tmp_path / "d.png")
    by_worker = {s["worker"]: s["values"] for s in doc["series"]}
    assert by_worker == {"worker_0": [0, 1, 2, 3, 4], "worker_1": [0, 2, 4, 6, 8]}
    doc = _plot(smdebug_cli, tmp_path / "dist", "loss", "-o", tmp_path / "d1.png", "--worker", "worker_1")
    assert [s["worker"] for s in doc["series"]] == ["worker_1"]


def test_plot_subplots(mlp_run, smdebug_cli, tmp_path):
    path, _ = mlp_run
    png = tmp_path / "panels.png"
    out = smdebug_cli("plot", str(path), "loss", "scalar/accuracy", "weights/fc1", "-o", str(png),
                      "--subplots", "--size", "6x4", "--dpi", "40")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"wrote {png}: 3 tensor(s), 6 line(s)")
    assert png_size(png) == (240, 3 * 3 * 40)  # each panel 3 inches high


def test_plot_progress_bar(mlp_run, smdebug_cli, tmp_path):
    pytest.importorskip("tqdm")
    path, _ = mlp_run
    out = smdebug_cli("plot", str(path), "weights/.*", "-o", str(tmp_path / "p.png"), "--progress")
    assert out.returncode == 0, out.stderr
    assert "reading steps" in out.stderr and "100/100" in out.stderr  # 2 tensors x 50 steps
    out = smdebug_cli("plot", str(path), "weights/.*", "-o", str(tmp_path / "p.png"))
    assert "reading steps" not in out.stderr  # not a terminal: no bar by default


def test_plot_errors(mlp_run, smdebug_cli, tmp_path):
    path, _ = mlp_run
    out = smdebug_cli("plot", str(path), "nothing/.*", "-o", str(tmp_path / "x.png"))
    assert out.returncode == 1 and "no tensor matches 'nothing/.*'" in out.stderr
    out = smdebug_cli("plot", str(path), "gradient/(", "-o", str(tmp_path / "x.png"))
    assert out.returncode == 2 and "neither a tensor of the run nor a valid regex" in out.stderr
    out = smdebug_cli("plot", str(path), "-o", str(tmp_path / "x.png"))
    assert out.returncode == 2 and "name at least one TENSOR" in out.stderr
    out = smdebug_cli("plot", str(path), "loss")
    assert out.returncode == 2 and "-o/--output" in out.stderr
    out = smdebug_cli("plot", str(path), "gradient/weights/fc1", "--mode", "eval", "-o", str(tmp_path / "x.png"))
    assert out.returncode == 1 and "nothing to plot" in out.stderr
    assert not (tmp_path / "x.png").exists()


def test_plot_without_matplotlib_says_what_to_install(mlp_run, tmp_path):
    path, _ = mlp_run
    code = ("import sys; sys.modules['matplotlib'] = None\n"  # what a missing package looks like to import
            "from smdebug.cli.main import main\n"
            f"sys.exit(main(['plot', {str(path)!r}, 'loss', '-o', {str(tmp_path / 'x.png')!r}]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert "smdebug plot needs matplotlib" in out.stderr and "pip install 'smdebug-core[cli]'" in out.stderr


def test_values_near_the_float64_limit_are_left_out_and_said(smdebug_cli, tmp_path):
    """A float64 weight (or complex magnitude) near 1.8e308 is a finite value matplotlib cannot place on an
    axis: its margins and tick ranges overflow (`ValueError: arange: cannot compute length`,
    `OverflowError`, a traceback). Such values are left out like infinities, and the image and the
    command's summary say how many."""
    huge = np.float64(1.5e308)
    path = tmp_path / "run"
    write_run(str(path), range(6), tensors=lambda step, w: {
        "w": np.array([huge if step % 2 else -huge]),                      # a range beyond float64
        "c": np.array([1e308 + 1e308j]) if step == 3 else np.array([float(step) + 0j]),  # |c| 1.41e308
        "loss": np.array([1.0 / (step + 1)], np.float32)})
    for pattern in ("w", "c", ".*"):
        png = tmp_path / f"{pattern.strip('.*') or 'all'}.png"
        out = smdebug_cli("plot", str(path), pattern, "-o", str(png))
        assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
        assert png_size(png)[0] > 0
        assert "left out" in out.stdout and "beyond" in out.stdout, out.stdout
    out = smdebug_cli("plot", str(path), "c", "-o", str(tmp_path / "c.png"), "--json")
    assert json.loads(out.stdout)["series"][0]["values"][:4] == [0.0, 1.0, 2.0, abs(1e308 + 1e308j)]  # data, as read
