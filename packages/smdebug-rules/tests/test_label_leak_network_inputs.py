"""LabelLeak on networks' runs: a feature column that is the label -- the target appended to a regression's
features, a class id or one-hot label column among a classifier's -- is found in the inputs the hook saved; real
features, even ones that separate the classes, are let be (probe 16b F6: nothing fired on a Keras MLP trained with
the target as its eleventh feature).

Every run is a real training with ``Hook.recommended``: PyTorch (whose hook keeps a regression loss's target in
``loss_inputs`` only, a classifier's in ``labels``) and Keras.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import smdebug.pytorch as smd
from smdebug.rules import run_rules
from smdebug.rules.rule_configs import recommended_rules
from smdebug.rules.results import ISSUES, NO_ISSUES, NOT_APPLICABLE

from _tensorflow import tensorflow_one_thread  # noqa: E402
from _torch_runs import image_data, train_recommended  # noqa: E402

sklearn_datasets = pytest.importorskip("sklearn.datasets")


def label_leak(run):
    return run_rules(str(run), rules=["LabelLeak"], ended=True).rules[0]


def _standardised(x):
    return (x - x.mean(axis=0)) / x.std(axis=0)


def diabetes(leak: bool):
    x, y = sklearn_datasets.load_diabetes(return_X_y=True)
    y = (y - y.mean()) / y.std()
    if leak:  # (the target with 1% noise, as a feature)
        x = np.concatenate([x, (y + 0.01 * np.random.default_rng(0).normal(size=y.shape))[:, None]], axis=1)
    return torch.tensor(_standardised(x), dtype=torch.float32), torch.tensor(y, dtype=torch.float32)[:, None]


def regressor(features):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(features, 32), nn.ReLU(), nn.Linear(32, 1))


@pytest.mark.parametrize("leak", [True, False], ids=["target-as-feature", "sound"])
def test_a_torch_regression_with_its_target_among_the_features(tmp_path, leak):
    x, y = diabetes(leak)
    train_recommended(tmp_path / "run", regressor(x.shape[1]), x, y, nn.MSELoss(), steps=60, lr=0.05)
    result = label_leak(tmp_path / "run")
    if not leak:
        assert result.status == NO_ISSUES, result
        return
    assert result.status == ISSUES, result
    reason = result.findings[0].reason
    assert reason.startswith("column 10 of ") and "follows the target" in reason, reason
    assert "MSELoss_input_1" in reason, reason


def random_walk_windows(n=1200, seed=1):
    """The last 8 values of random walks (starting anywhere, steps of 0.1) and, as the target, their next value: a
    forecast whose every feature follows the target at a correlation near 0.999, as its columns follow each other."""
    g = np.random.default_rng(seed)
    walk = g.normal(size=(n, 1)) * 5 + np.cumsum(g.normal(0.02, 0.1, size=(n, 9)), axis=1)
    return walk[:, :8], walk[:, 8]


@pytest.mark.parametrize("leak", ["none", "copy", "two-copies"])
def test_a_forecasts_window_of_a_series_is_no_leak(tmp_path, leak):
    """Probe 19a: a random walk's next value from its last values fired "column 4 follows the target (0.9992)". Each
    of those columns is as near to its neighbours as to the target; a copy of the target among them is nearer to
    the target than to any of them, and so are two noisy copies (twice as far from each other as from it)."""
    x, y = random_walk_windows()
    g = np.random.default_rng(2)
    copies = {"none": 0, "copy": 1, "two-copies": 2}[leak]
    for _ in range(copies):
        x = np.concatenate([x, (y + 0.002 * g.normal(size=y.shape))[:, None]], axis=1)
    x, y = torch.tensor(x, dtype=torch.float32), torch.tensor(y, dtype=torch.float32)[:, None]
    train_recommended(tmp_path / "run", regressor(x.shape[1]), x, y, nn.MSELoss(), steps=60, lr=0.001)
    result = label_leak(tmp_path / "run")
    if leak == "none":
        assert result.status == NO_ISSUES, result
        return
    assert result.status == ISSUES, result
    assert result.findings[0].reason.startswith("column 8 of "), result.findings[0].reason


def classes_with(kind: str):
    x, y = sklearn_datasets.load_wine(return_X_y=True)
    x = _standardised(x)
    rng = np.random.default_rng(1)
    if kind == "class-id":
        x = np.concatenate([x, (y + 0.02 * rng.normal(size=y.shape))[:, None]], axis=1)
    elif kind == "one-hot":
        x = np.concatenate([x, np.eye(3)[y]], axis=1)
    return torch.tensor(x, dtype=torch.float32), torch.tensor(y)


@pytest.mark.parametrize("kind", ["class-id", "one-hot"])
def test_a_torch_classifier_with_its_class_among_the_features(tmp_path, kind):
    x, y = classes_with(kind)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(x.shape[1], 16), nn.ReLU(), nn.Linear(16, 3))
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(0))
    train_recommended(tmp_path / "run", model, x[order], y[order], nn.CrossEntropyLoss(), steps=40, lr=0.1)
    result = label_leak(tmp_path / "run")
    assert result.status == ISSUES, result
    assert "one narrow band of values per class" in result.findings[0].reason, result.findings[0].reason


def test_features_that_separate_well_apart_classes_are_no_leak(tmp_path):
    # (blobs far apart: one coordinate alone tells the classes apart, but spreads within each class over much of
    # the distance between them)
    x, y = sklearn_datasets.make_blobs(600, n_features=4, centers=3, cluster_std=1.0, center_box=(-10, 10),
                                       random_state=0)
    x, y = torch.tensor(x, dtype=torch.float32), torch.tensor(y)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))
    train_recommended(tmp_path / "run", model, x, y, nn.CrossEntropyLoss(), steps=40, lr=0.05)
    assert label_leak(tmp_path / "run").status == NO_ISSUES


def test_images_are_no_table_of_features(tmp_path):
    x, y = image_data(n=64)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(16, 3))
    train_recommended(tmp_path / "run", model, x, y, nn.CrossEntropyLoss(), steps=6, lr=0.05)
    result = label_leak(tmp_path / "run")
    assert result.status == NOT_APPLICABLE and "no table of features" in result.detail, result


def test_a_keras_regression_with_its_target_among_the_features(tmp_path):
    tensorflow_one_thread()
    keras = pytest.importorskip("keras")
    import smdebug.tensorflow as smd_tf

    keras.utils.set_random_seed(0)
    x, y = diabetes(leak=True)
    model = keras.Sequential([keras.Input((x.shape[1],)), keras.layers.Dense(16, activation="relu"),
                              keras.layers.Dense(1)])
    model.compile("adam", "mse")
    hook = smd_tf.KerasHook.recommended(str(tmp_path / "run"))
    model.fit(x.numpy(), y.numpy(), epochs=2, batch_size=32, verbose=0, callbacks=[hook])
    hook.close()
    result = label_leak(tmp_path / "run")
    assert result.status == ISSUES and "follows the target" in result.findings[0].reason, result


def test_label_leak_is_recommended_for_networks():
    for framework in ("pytorch", "tensorflow", "mxnet"):
        assert "LabelLeak" in [name for name, _ in recommended_rules(framework)]
    assert smd  # (the PyTorch hook the runs above are written with)
