"""PoorWeightInitialization on depthwise-separable convolutions at their frameworks' default initialisation.

Keras initialises a depthwise kernel (DepthwiseConv2D, SeparableConv2D) for a fan-in of height x width x channels,
though each output sees height x width inputs: its scale is about channels/2 times too small, two such layers
shrank the pre-activations' variance 885-fold (probe 8, 29.8 per layer > 25), and the loss stalled at log 10 for
two epochs where the same net initialised for the true fan-in learned at once. The rule's firing is right; its
finding now names the depthwise kernels and the variance they pass on. Initialised for the true fan-in the same net
is quiet, and so is a PyTorch depthwise-separable net (Conv2d(groups=C): PyTorch counts a grouped convolution's
fan-in right)."""

from __future__ import annotations

import numpy as np
import pytest

from smdebug.rules.results import ISSUES, NO_ISSUES
from _judging import judged  # noqa: E402
from _tensorflow import tensorflow_one_thread  # noqa: E402


def images(n=1200, seed=0):
    """Ten classes of noisy 8x8 one-channel prototypes, values in [0, 1]."""
    g = np.random.default_rng(seed)
    protos = g.random((10, 8, 8, 1)).astype("float32")
    y = np.arange(n) % 10
    return np.clip(protos[y] + 0.3 * g.standard_normal((n, 8, 8, 1)).astype("float32"), 0, 1), y


def keras_separable_run(path, true_fan_in: bool):
    tensorflow_one_thread()
    import keras

    import smdebug.tensorflow as smd

    L = keras.layers
    keras.utils.set_random_seed(0)
    scale = {"depthwise_initializer": keras.initializers.RandomNormal(stddev=float(np.sqrt(2 / 9)))} if true_fan_in else {}
    model = keras.Sequential([keras.Input((8, 8, 1)), L.Conv2D(16, 3, padding="same", activation="relu"),
                              L.SeparableConv2D(32, 3, padding="same", activation="relu", **scale), L.MaxPooling2D(),
                              L.SeparableConv2D(64, 3, padding="same", activation="relu", **scale),
                              L.GlobalAveragePooling2D(), L.Dense(10)])
    model.compile(optimizer=keras.optimizers.Adam(3e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    x, y = images()
    hook = smd.KerasHook.recommended(str(path))
    model.fit(x, y, epochs=1, batch_size=32, verbose=0, callbacks=[hook])
    hook.close()
    return path


def test_keras_depthwise_kernels_at_their_default_scale_are_named(tmp_path):
    r = judged(keras_separable_run(tmp_path / "run", true_fan_in=False), "PoorWeightInitialization")
    assert r.status == ISSUES, (r.status, r.detail)
    reason = r.findings[0].reason
    assert reason.startswith("activation inputs: variance ratio"), reason
    assert "depthwise kernels initialised for a fan-in that counts their input channels" in reason, reason
    assert "separable_conv2d/depthwise_kernel (3, 3, 16, 1): 9 taps x variance" in reason, reason
    assert "the scale of a fan-in of 144" in reason, reason
    assert "gradients/" not in reason  # the kernels' weights, not their gradients


def test_keras_depthwise_kernels_initialised_for_their_true_fan_in_are_quiet(tmp_path):
    r = judged(keras_separable_run(tmp_path / "run", true_fan_in=True), "PoorWeightInitialization")
    assert r.status == NO_ISSUES, (r.status, r.detail, [f.reason for f in r.findings])
    assert r.steps_evaluated > 0


def test_a_pytorch_depthwise_separable_net_at_its_defaults_is_quiet(tmp_path):
    torch = pytest.importorskip("torch")
    nn = torch.nn

    import smdebug.pytorch as smd

    torch.manual_seed(0)
    torch.set_num_threads(1)

    def separable(cin, cout):
        return [nn.Conv2d(cin, cin, 3, padding=1, groups=cin), nn.Conv2d(cin, cout, 1), nn.ReLU()]

    model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), *separable(16, 32), nn.MaxPool2d(2),
                          *separable(32, 64), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))
    x, y = images()
    x, y = torch.tensor(x).permute(0, 3, 1, 2).contiguous(), torch.tensor(y)
    loss_fn = nn.CrossEntropyLoss()
    hook = smd.Hook.recommended(str(tmp_path / "run"))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.Adam(model.parameters(), 3e-3)
    for step in range(12):
        batch = slice(32 * step, 32 * step + 32)
        opt.zero_grad()
        loss_fn(model(x[batch]), y[batch]).backward()
        opt.step()
    hook.close()
    r = judged(tmp_path / "run", "PoorWeightInitialization")
    assert r.status == NO_ISSUES, (r.status, r.detail, [f.reason for f in r.findings])
    assert r.steps_evaluated > 0
