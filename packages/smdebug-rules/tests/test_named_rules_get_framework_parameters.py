"""A rule named on the command line (``--rule CheckInputImages``) or in ``run_rules(path, [...])`` gets the
parameters the recommended set gives it for the run's framework as defaults: a Keras run's images are read
channels-last, as the recommended set reads them. Before, the rule used its own default channel axis (1) and
ended NotApplicable on every Keras image run ("no image with channel axis 1"). The caller's parameters win, and a
caller who says which tensors to read gets none of the defaults that select tensors."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.nn as nn

from smdebug.rules import run_rules
from smdebug.rules.results import ISSUES, NOT_APPLICABLE

from _tensorflow import tensorflow_one_thread

pytestmark = pytest.mark.usefixtures("torch_one_thread")


def _keras_images(path) -> str:
    """A small Keras CNN trained on channels-last images that are not normalised (mean about 5)."""
    tf = tensorflow_one_thread()
    import keras
    from keras import layers

    import smdebug.tensorflow as smd

    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = rng.normal(5.0, 1.0, (640, 8, 8, 3)).astype("float32")
    y = (x[:, :4, :, 0].mean(axis=(1, 2)) > 5.0).astype("int64")
    model = keras.Sequential([keras.Input((8, 8, 3)), layers.Conv2D(4, 3, activation="relu"),
                              layers.GlobalAveragePooling2D(), layers.Dense(2)])
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    hook = smd.KerasHook.recommended(str(path))
    model.fit(x, y, batch_size=64, epochs=2, verbose=0, callbacks=[hook])
    hook.close()
    del tf
    return str(path)


def _torch_classifier(path) -> str:
    import smdebug.pytorch as smd

    torch.manual_seed(0)
    model, loss_fn = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)), nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    hook = smd.Hook.recommended(str(path))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    for _ in range(12):
        x = torch.randn(32, 4)
        y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    hook.close()
    return str(path)


def test_a_named_check_input_images_reads_keras_images_channels_last(tmp_path):
    path = _keras_images(tmp_path / "keras")
    (r,) = run_rules(path, ["CheckInputImages"]).rules
    assert r.params.get("channel") == "-1", r.params
    assert r.status == ISSUES, (r.status, r.detail)
    assert "mean of channel" in r.findings[0].reason, r.findings[0].reason

    # the caller's own parameter wins over the framework's
    (r,) = run_rules(path, [("CheckInputImages", {"channel": "1"})]).rules
    assert r.params["channel"] == "1"
    assert r.status == NOT_APPLICABLE, (r.status, r.detail)

    # the command line is the same path
    proc = subprocess.run([sys.executable, "-m", "smdebug.cli.main", "rules", "run", path, "--rule",
                           "CheckInputImages", "--json", "-q"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    (cli,) = json.loads(proc.stdout)["rules"]
    assert cli["status"] == ISSUES and cli["params"]["channel"] == "-1", cli


def test_named_rules_on_a_pytorch_run(tmp_path):
    path = _torch_classifier(tmp_path / "torch")
    rules = {r.name: r for r in run_rules(path, ["ClassImbalance", "NLPSequenceRatio",
                                                 ("Confusion", {"labels_collection": "labels"})]).rules}
    # a PyTorch run's predictions are class scores, as the recommended set says
    assert rules["ClassImbalance"].params.get("argmax") == "True", rules["ClassImbalance"].params
    # the tensors a rule reads, where its own default names the original's tensors
    assert rules["NLPSequenceRatio"].params.get("collection_names") == "inputs"

    # a caller who names the tensors gets no selecting default beside them
    (r,) = run_rules(path, [("NLPSequenceRatio", {"tensor_regex": "nothing_here"})]).rules
    assert "collection_names" not in r.params, r.params
    assert r.params["tensor_regex"] == "nothing_here"
    (r,) = run_rules(path, [("ClassImbalance", {"labels_regex": ".*labels.*"})]).rules
    assert "labels_collection" not in r.params and r.params.get("argmax") == "True", r.params
