"""UnnormalizedInput on raw features that the model standardises itself: Keras's documented idiom, an adapted
``Normalization`` layer first, a first ``BatchNormalization``, and PyTorch's ``BatchNorm1d`` first. The hooks save
their per-feature statistics (Keras with the weights; PyTorch's running statistics, buffers, in
``normalization_statistics``, which Hook.recommended saves for this rule); when those agree with the input's own mean and variance, the first layer that learns sees the
features at unit scale and the rule is quiet (probe 10: both fired "feature 4 has scale 189.5"). The same raw
features into a model without such a layer still fire."""

from __future__ import annotations

import numpy as np
import pytest

from smdebug.rules.results import ISSUES, NO_ISSUES
from _judging import judged  # noqa: E402
from _tensorflow import tensorflow_one_thread  # noqa: E402


def raw_table(n=320):
    g = np.random.default_rng(0)
    scales = np.array([0.05, 1.0, 30.0, 190.0, 4000.0, 2.0])  # measurements in their own units
    x = (g.standard_normal((n, 6)) + 2.0) * scales
    y = ((x[:, 3] / 190.0 - x[:, 4] / 4000.0) > 0).astype("int64")
    return x.astype("float32"), y


def keras_run(path, first: str) -> str:
    tensorflow_one_thread()
    import keras

    import smdebug.tensorflow as smd

    L = keras.layers
    keras.utils.set_random_seed(0)
    x, y = raw_table()
    layers = {"normalization": [L.Normalization()], "batchnorm": [L.BatchNormalization()], "none": []}[first]
    if first == "normalization":
        layers[0].adapt(x)
    model = keras.Sequential([keras.Input((6,)), *layers, L.Dense(16, activation="relu"), L.Dense(2)])
    model.compile(optimizer=keras.optimizers.Adam(1e-2),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    hook = smd.KerasHook.recommended(str(path))
    model.fit(x, y, epochs=30, batch_size=32, verbose=0, callbacks=[hook])  # (moving statistics: ~300 updates)
    hook.close()
    return str(path)


@pytest.mark.parametrize("first", ["normalization", "batchnorm"])
def test_features_standardised_inside_the_model_are_no_finding(tmp_path, first):
    r = judged(keras_run(tmp_path / "run", first), "UnnormalizedInput")
    assert r.status == NO_ISSUES, (r.status, [f.reason for f in r.findings], r.detail)


def test_raw_features_into_a_model_that_does_not_standardise_them_fire(tmp_path):
    r = judged(keras_run(tmp_path / "run", "none"), "UnnormalizedInput")
    assert r.status == ISSUES, (r.status, r.detail)
    assert "feature 4 has scale" in r.findings[0].reason, r.findings[0].reason


def standardise(names, mean, std):
    """A module standardising its input with buffers of its own, registered under ``names``, as PyTorch users
    write it: ``(x - self.mu) / self.sd`` in the forward."""
    import torch

    class Standardise(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer(names[0], torch.as_tensor(mean))
            self.register_buffer(names[1], torch.as_tensor(std))

        def forward(self, x):
            return (x - getattr(self, names[0])) / getattr(self, names[1])

    return Standardise()


def torch_run(path, batchnorm_first: bool = False, first=None) -> str:
    torch = pytest.importorskip("torch")
    nn = torch.nn
    import smdebug.pytorch as smd

    torch.set_num_threads(1)
    torch.manual_seed(0)
    x, y = raw_table()
    x, y = torch.tensor(x), torch.tensor(y)
    layers = [nn.BatchNorm1d(6)] if batchnorm_first else [first] if first is not None else []
    model, loss_fn = nn.Sequential(*layers, nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 2)), nn.CrossEntropyLoss()
    hook = smd.Hook.recommended(str(path))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(10):
        for start in range(0, len(x), 32):
            loss = loss_fn(model(x[start:start + 32]), y[start:start + 32])
            opt.zero_grad()
            loss.backward()
            opt.step()
    hook.close()
    return str(path)


def test_torch_batchnorm_first_standardises_raw_features(tmp_path):
    path = torch_run(tmp_path / "run", batchnorm_first=True)
    from smdebug.trials import create_trial

    assert "Sequential_0.running_mean" in create_trial(path).tensor_names(collection="normalization_statistics")
    r = judged(path, "UnnormalizedInput")
    assert r.status == NO_ISSUES, (r.status, [f.reason for f in r.findings], r.detail)


def test_torch_raw_features_without_batchnorm_fire(tmp_path):
    r = judged(torch_run(tmp_path / "run", batchnorm_first=False), "UnnormalizedInput")
    assert r.status == ISSUES, (r.status, r.detail)


@pytest.mark.parametrize("names", [("mu", "sd"), ("mean", "std")])
def test_torch_buffers_of_the_models_own_that_standardise_raw_features(tmp_path, names):
    """Probe 19a: the statistics registered as buffers of a module of the user's, used in its forward, are saved
    (normalization_statistics) and recognised by their values; the rule fired "feature 3 has scale 1.049e+05"."""
    x, _ = raw_table()
    path = torch_run(tmp_path / "run", first=standardise(names, x.mean(axis=0), x.std(axis=0)))
    from smdebug.trials import create_trial

    saved = create_trial(path).tensor_names(collection="normalization_statistics")
    assert f"Sequential_0.{names[0]}" in saved and f"Sequential_0.{names[1]}" in saved, saved
    r = judged(path, "UnnormalizedInput")
    assert r.status == NO_ISSUES, (r.status, [f.reason for f in r.findings], r.detail)


def test_torch_buffers_that_do_not_standardise_still_fire(tmp_path):
    """Buffers named like statistics prove nothing by their names: a mean of 0 and a std of 1 leave the raw
    features as they are."""
    path = torch_run(tmp_path / "run", first=standardise(("mu", "sd"), np.zeros(6, "float32"), np.ones(6, "float32")))
    r = judged(path, "UnnormalizedInput")
    assert r.status == ISSUES, (r.status, r.detail)
