"""TensorBoard output configured through the hook JSON and through SageMaker's TensorBoard config file
(TENSORBOARD_CONFIG_FILE_PATH), read back with TensorBoard's own EventAccumulator."""

import json

import numpy as np
import pytest

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402

from smdebug import modes  # noqa: E402

from _support import NumpyHook  # noqa: E402


def _train(hook):
    for mode in (modes.TRAIN, modes.TRAIN, modes.EVAL):
        hook.set_mode(mode)
        hook.begin_step()
        hook.record("loss", np.float32(1.0 / (hook.step + 1)))
        hook.record("weights/w", np.full((3, 3), hook.step, np.float32))
        hook.end_step()
    hook.close()


def _scalars(mode_dir):
    acc = EventAccumulator(str(mode_dir), size_guidance={"tensors": 0, "scalars": 0, "histograms": 0})
    acc.Reload()
    tags = acc.Tags()
    values = {(tag, ev.step): ev.value for tag in tags.get("scalars", []) for ev in acc.Scalars(tag)}
    return values, tags


def test_tensorboard_dir_from_the_hook_json(tmp_path, monkeypatch):
    tb = tmp_path / "tb"
    config = tmp_path / "hook.json"
    config.write_text(json.dumps({
        "LocalPath": str(tmp_path / "run"),
        "HookParameters": {"save_interval": "1", "export_tensorboard": "true", "tensorboard_dir": str(tb)},
        "CollectionConfigurations": [{"CollectionName": "weights"}, {"CollectionName": "losses"}],
    }))
    _train(NumpyHook.create_from_json_file(str(config)))
    train, tags = _scalars(tb / "TRAIN")
    assert train[("loss", 0)] == pytest.approx(1.0) and train[("loss", 1)] == pytest.approx(0.5)
    evaluation, _ = _scalars(tb / "EVAL")
    assert evaluation == {("loss", 2): pytest.approx(1 / 3)}
    assert any("weights/w" in t for t in tags["histograms"]), tags


def test_tensorboard_location_from_sagemakers_config_file(tmp_path, monkeypatch):
    tb = tmp_path / "sm-tb"
    tb_config = tmp_path / "tensorboardoutputconfig.json"
    tb_config.write_text(json.dumps({"LocalPath": str(tb)}))
    monkeypatch.setenv("TRAINING_JOB_NAME", "job-1")
    monkeypatch.setenv("TENSORBOARD_CONFIG_FILE_PATH", str(tb_config))
    config = tmp_path / "hook.json"
    config.write_text(json.dumps({"LocalPath": str(tmp_path / "run"), "HookParameters": {"save_interval": "1"},
                                  "CollectionConfigurations": [{"CollectionName": "losses"}]}))
    _train(NumpyHook.create_from_json_file(str(config)))
    train, _ = _scalars(tb / "TRAIN")
    assert train[("loss", 0)] == pytest.approx(1.0)
