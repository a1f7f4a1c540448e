"""``smdebug export tensorboard RUN DIR``: a finished run exported after the fact, read back with
TensorBoard's own event accumulator (scalars, histograms, tags, steps, values), locally and on S3.
"""

from __future__ import annotations

import json
import os

import boto3
import numpy as np
import pytest

# tensorboard is a hard requirement of this module (not importorskip): a missing reader must fail.
from tensorboard.backend.event_processing import event_accumulator

from smdebug.core.modes import ModeKeys
from smdebug.core.reduction_config import ReductionConfig
from smdebug.core.save_config import SaveConfig
from smdebug.core.tensorboard import histogram_tag
from smdebug.trials import create_trial

pytestmark = pytest.mark.interop

TRAIN, EVAL = ModeKeys.TRAIN, ModeKeys.EVAL


def _write_run(out: str) -> None:
    """A real logistic regression: TRAIN then EVAL steps; weights as values, biases as stored l2 only."""
    from _support import NumpyHook, train_logistic_regression

    hook = NumpyHook(out_dir=out, save_config=SaveConfig(save_interval=1),
                     include_collections=["weights", "biases", "gradients", "losses"])
    hook.get_collection("biases").reduction_config = ReductionConfig(norms=["l2"])
    train_logistic_regression(hook, steps=6, mode=TRAIN)
    train_logistic_regression(hook, steps=3, mode=EVAL)
    hook.close()


def _accumulators(root: str) -> dict:
    accs = {}
    for mode in sorted(os.listdir(root)):
        acc = event_accumulator.EventAccumulator(os.path.join(root, mode), size_guidance={
            event_accumulator.SCALARS: 0, event_accumulator.HISTOGRAMS: 0})
        acc.Reload()
        accs[mode] = acc
    return accs


def _check_export(run: str, tb_root: str) -> None:
    trial = create_trial(run)
    accs = _accumulators(tb_root)
    assert set(accs) == {"TRAIN", "EVAL"}
    for mode, acc in accs.items():
        tags = acc.Tags()
        # no double prefix: the gradients of gradient/weights/w keep their name (saved in TRAIN only)
        assert set(tags["histograms"]) == {"weights/w"} | ({"gradient/weights/w"} if mode == "TRAIN" else set())
        assert set(tags["scalars"]) == {"loss", "biases/b/l2"} | ({"gradient/biases/b"} if mode == "TRAIN" else set())
        loss = trial.tensor("loss")
        want = {g: float(loss.value(g)[0]) for g in loss.steps() if trial.mode(g).name == mode}
        got = {e.step: e.value for e in acc.Scalars("loss")}
        assert got == pytest.approx(want), mode
        # biases were saved as their l2 norm only: exported as scalars <name>/l2
        l2 = {e.step: e.value for e in acc.Scalars("biases/b/l2")}
        assert l2 == pytest.approx({g: float(np.ravel(trial.tensor("biases/b").reduction_value(g, "l2"))[0])
                                    for g in want}), mode
        if mode == "TRAIN":
            assert {e.step for e in acc.Scalars("gradient/biases/b")} == set(want)
        for e in acc.Histograms("weights/w"):
            w = trial.tensor("weights/w").value(e.step).astype(np.float64)
            h = e.histogram_value
            assert (h.num, h.min, h.max) == (w.size, w.min(), w.max())
            assert h.sum == pytest.approx(w.sum()) and sum(h.bucket) == w.size
        assert sorted(e.step for e in acc.Histograms("weights/w")) == sorted(want)


def test_export_a_finished_run(tmp_path, smdebug_cli):
    run, tb = str(tmp_path / "run"), str(tmp_path / "tb")
    _write_run(run)
    out = smdebug_cli("export", "tensorboard", run, tb, "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["steps"] == {"TRAIN": 6, "EVAL": 3} and doc["tensors"] == 5, doc
    assert doc["reduction_scalars"] == 9 and doc["skipped"] == {}
    _check_export(run, tb)
    again = smdebug_cli("export", "tensorboard", run, tb)  # would show every step twice
    assert again.returncode == 2 and "already holds TensorBoard event files" in again.stderr
    assert "Traceback" not in again.stderr


def test_export_selection_and_errors(tmp_path, smdebug_cli):
    run = str(tmp_path / "run")
    _write_run(run)
    out = smdebug_cli("export", "tensorboard", run, str(tmp_path / "g"), "--collection", "gradients",
                      "--mode", "train")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"wrote {tmp_path / 'g'}: 6 scalar(s), 6 histogram(s)"), out.stdout
    accs = _accumulators(str(tmp_path / "g"))
    assert list(accs) == ["TRAIN"] and accs["TRAIN"].Tags()["histograms"] == ["gradient/weights/w"]
    out = smdebug_cli("export", "tensorboard", run, str(tmp_path / "x"), "--collection", "gradient")
    assert out.returncode == 1 and "did you mean 'gradients'?" in out.stderr
    out = smdebug_cli("export", "tensorboard", str(tmp_path / "nothing"), str(tmp_path / "y"))
    assert out.returncode == 2 and "no smdebug run at" in out.stderr
    assert not os.path.exists(tmp_path / "x") and not os.path.exists(tmp_path / "y")


def test_export_from_and_to_s3(tmp_path, s3_run, smdebug_cli):
    bucket = s3_run.storage.bucket
    run = f"s3://{bucket}/run"
    _write_run(run)
    out = smdebug_cli("export", "tensorboard", run, f"s3://{bucket}/tb")
    assert out.returncode == 0, out.stderr
    s3 = boto3.client("s3")
    local = tmp_path / "tb"
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix="tb/")["Contents"]]
    assert len(keys) == 2 and all(k.endswith(".tfevents") for k in keys), keys
    for key in keys:
        target = local / key[len("tb/"):]
        target.parent.mkdir(parents=True, exist_ok=True)
        s3.download_file(bucket, key, str(target))
    _check_export(run, str(local))


def test_histogram_tag():
    assert histogram_tag("gradients", "gradient/fc1.weight") == "gradient/fc1.weight"
    assert histogram_tag("weights", "weights/w") == "weights/w"
    assert histogram_tag("biases", "biases/fc1") == "biases/fc1"
    assert histogram_tag("weights", "fc1.weight") == "weights/fc1.weight"
    assert histogram_tag("weights", "Net_fc1/weight") == "weights/Net_fc1/weight"
    assert histogram_tag("relu_output", "relu_output_0") == "relu_output/relu_output_0"
