"""WeightUpdateRatio names weights frozen before they were ever trained (probe 15a F2).

A body frozen by mistake (``requires_grad_(False)`` / ``trainable=False`` on a model whose pretrained weights were
never loaded) sits at the framework's random initialisation: only the head trains, on random features, and the
loss still falls slowly, so every rule was quiet (Lightning run: test accuracy 0.51 against 0.74 unfrozen). The
rule skipped the body because the run saved no gradient of it, as it must for a body frozen on purpose. The two
differ in one checkable way: a body frozen on purpose is pretrained, so its values left the initialisation's
bound; one frozen by mistake never changed over the run and is still a uniform draw on that bound."""

from __future__ import annotations

import numpy as np
import pytest

from smdebug.rules.results import ISSUES, NO_ISSUES
from _judging import judged  # noqa: E402

torch = pytest.importorskip("torch")
nn = torch.nn

import smdebug.pytorch as smd  # noqa: E402


class Net(nn.Module):
    def __init__(self, width=64):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, width), nn.ReLU())
        self.head = nn.Linear(width, 3)

    def forward(self, x):
        return self.head(self.body(x))


def data(n=512, task=0):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(n, 16, generator=g)
    y = (x[:, task] > 0).long() + (x[:, task + 1] * x[:, task + 2] > 0).long()
    return x, y


def pretrain(model, steps=300):
    """Train the whole model before the hook exists, on another task (features 3-5), as a pretrained body is:
    a few hundred Adam steps, then a new head for the task at hand."""
    x, y = data(task=3)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    loss_fn = nn.CrossEntropyLoss()
    for step in range(steps):
        batch = slice((step * 64) % 512, (step * 64) % 512 + 64)
        opt.zero_grad()
        loss_fn(model(x[batch]), y[batch]).backward()
        opt.step()
    model.head.reset_parameters()


def train(out_dir, frozen=True, pretrained=False, unfreeze_at=None, steps=40, width=64):
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = Net(width)
    if pretrained:
        pretrain(model)
    model.body.requires_grad_(not frozen)
    hook = smd.Hook.recommended(str(out_dir))
    hook.register_module(model)
    loss_fn = nn.CrossEntropyLoss()
    hook.register_loss(loss_fn)
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    x, y = data()
    for step in range(steps):
        if step == unfreeze_at:
            # gradual unfreezing: the body's last layer joins at a tenth of the rate
            last = list(model.body[2].parameters())
            for p in last:
                p.requires_grad_(True)
            opt.add_param_group({"params": last, "lr": 1e-3})
        batch = slice((step * 32) % 512, (step * 32) % 512 + 32)
        opt.zero_grad()
        loss_fn(model(x[batch]), y[batch]).backward()
        opt.step()
    hook.close()
    return str(out_dir)


def test_a_body_frozen_at_its_random_initialisation_is_named(tmp_path):
    verdict = judged(train(tmp_path / "run"), "WeightUpdateRatio")
    assert verdict.status == ISSUES, verdict
    reason = verdict.findings[0].reason
    assert reason.startswith("frozen before it was trained: 2 weights (Net_body.0.weight, Net_body.2.weight)"), reason
    assert "Net_head.weight" in reason and "PyTorch's default" in reason and "load the pretrained weights" in reason


def test_a_frozen_weight_too_small_to_test_is_named_beside_the_others(tmp_path):
    """A 64x3 kernel (192 values) is too small for the initialisation test; it never changed either, and the
    finding names it, so that the user unfreezes the whole body (probe 18a W8 named only the tested kernel)."""
    verdict = judged(train(tmp_path / "run", width=3), "WeightUpdateRatio")
    assert verdict.status == ISSUES, verdict
    reason = verdict.findings[0].reason
    assert reason.startswith("frozen before it was trained: 1 weight (Net_body.0.weight)"), reason
    assert "also unchanged from the first save to the last: Net_body.2.weight (" in reason, reason


@pytest.mark.parametrize("unfreeze_at", [None, 20])
def test_a_pretrained_body_frozen_or_unfrozen_gradually_is_quiet(tmp_path, unfreeze_at):
    verdict = judged(train(tmp_path / "run", pretrained=True, unfreeze_at=unfreeze_at), "WeightUpdateRatio")
    assert verdict.status == NO_ISSUES, [f.reason for f in verdict.findings[:3]]


def test_an_all_trainable_model_is_quiet(tmp_path):
    verdict = judged(train(tmp_path / "run", frozen=False), "WeightUpdateRatio")
    assert verdict.status == NO_ISSUES, [f.reason for f in verdict.findings[:3]]


def keras_run(path, frozen_body):
    from _tensorflow import tensorflow_one_thread

    tensorflow_one_thread()
    import keras

    import smdebug.tensorflow as smd_tf

    keras.utils.set_random_seed(0)
    g = np.random.default_rng(0)
    x = g.standard_normal((256, 16)).astype("float32")
    y = (x[:, 0] + x[:, 1] > 0).astype("int64")
    body = keras.layers.Dense(64, activation="relu")
    body.trainable = not frozen_body
    model = keras.Sequential([keras.Input((16,)), body, keras.layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.Adam(1e-2),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    hook = smd_tf.KerasHook(str(path), save_config=smd_tf.SaveConfig(save_interval=1),
                            include_collections=["weights", "gradients", "losses"])
    model.fit(x, y, epochs=1, batch_size=32, verbose=0, callbacks=[hook])
    hook.close()
    return str(path)


@pytest.mark.parametrize("frozen_body", [True, False])
def test_keras_a_dense_layer_frozen_at_glorot_uniform(tmp_path, frozen_body):
    verdict = judged(keras_run(tmp_path / "run", frozen_body), "WeightUpdateRatio")
    if frozen_body:
        assert verdict.status == ISSUES, verdict
        assert "frozen before it was trained: 1 weight" in verdict.findings[0].reason
        assert "glorot_uniform" in verdict.findings[0].reason
    else:
        assert verdict.status == NO_ISSUES, [f.reason for f in verdict.findings[:3]]
