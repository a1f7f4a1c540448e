"""The Gluon hook: activation blocks found by type whatever their names (fused activation= included), the
model's input, the classification loss's predictions and labels, and the recommended configuration."""

import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, gluon, nd
from mxnet.gluon import nn

import smdebug.mxnet as smd
from smdebug.core.activations import ACTIVATION_COLLECTIONS, activation_layers
from smdebug.core.testing import TAPERED_SAVED_STEPS, check_recommended_run


class OddNames(gluon.Block):
    """Activation blocks under names no regex would guess; one used twice; a fused Dense(activation=)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.stem = nn.Dense(8, activation="tanh", in_units=6)  # fused: a child Activation block
            self.nonlin = nn.Activation("relu")
            self.mid = nn.Dense(8, in_units=8)
            self.leak = nn.LeakyReLU(0.1)
            self.head = nn.Dense(3, in_units=8)

    def forward(self, x):
        h = self.nonlin(self.stem(x))
        h = self.leak(self.nonlin(self.mid(h)))  # nonlin again
        return self.head(nd.relu(h))  # functional: not a block, not seen


def _train(net, hook, steps, batch=8):
    net.initialize(mx.init.Xavier(), ctx=mx.cpu())
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    hook.register_block(net)
    hook.register_block(loss_fn)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.05})
    rng = np.random.RandomState(0)
    fed = []
    for _ in range(steps):
        x, y = nd.array(rng.randn(batch, 6).astype("float32")), nd.array(rng.randint(0, 3, batch).astype("float32"))
        fed.append((x.asnumpy(), y.asnumpy()))
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(batch)
    hook.close()
    return fed


def test_activation_blocks_fill_their_collections_whatever_their_names(out_dir):
    mx.random.seed(0)
    net = OddNames(prefix="odd_")
    hook = smd.Hook(out_dir=out_dir, save_config=smd.SaveConfig(save_interval=1),
                    include_collections=[*ACTIVATION_COLLECTIONS, "inputs", "predictions", "labels"])
    fed = _train(net, hook, steps=2)
    assert not hook.disabled
    trial = smd.create_trial(out_dir)

    def names(coll):
        return trial.tensor_names(collection=coll) if trial.collection(coll).include_regex else []

    assert names("tanh_activations") == ["odd_dense0_tanh_input_0", "odd_dense0_tanh_output_0"]
    assert names("relu_activations") == ["odd_relu0_input_0", "odd_relu0_input_1", "odd_relu0_output_0",
                                         "odd_relu0_output_1"]
    assert names("leaky_relu_activations") == ["odd_leakyrelu0_input_0", "odd_leakyrelu0_output_0"]
    assert names("sigmoid_activations") == []
    for step in trial.steps():
        np.testing.assert_allclose(trial.tensor("odd_dense0_tanh_output_0").value(step),
                                   np.tanh(trial.tensor("odd_dense0_tanh_input_0").value(step)), rtol=1e-5, atol=1e-6)
    found = activation_layers(trial)
    assert [(l.name, l.type) for l in found["relu_activations"]] == [("odd_relu0", "Activation(relu)")]
    assert [(l.name, l.type) for l in found["tanh_activations"]] == [("odd_dense0_tanh", "Activation(tanh)")]
    assert found["sigmoid_activations"] == [] and found["gelu_activations"] == []
    # the model's input; the loss's inputs are the predictions and the labels
    assert trial.tensor_names(collection="inputs") == ["odd_input_0"]
    assert trial.tensor_names(collection="labels") == ["softmaxcrossentropyloss0_input_1"]
    assert trial.tensor_names(collection="predictions") == ["softmaxcrossentropyloss0_input_0"]
    for step, (x, y) in enumerate(fed):
        np.testing.assert_array_equal(trial.tensor("odd_input_0").value(step), x)
        np.testing.assert_array_equal(trial.tensor("softmaxcrossentropyloss0_input_1").value(step), y)


RECOMMENDED_HERE = ("weights", "gradients", "losses", "inputs", "relu_activations", "tanh_activations",
                    "loss_inputs")


@pytest.mark.parametrize("steps, saved", sorted(TAPERED_SAVED_STEPS.items()))
def test_recommended_hook_saves_what_the_recommended_rules_need(out_dir, steps, saved):
    mx.random.seed(0)
    hook = smd.Hook.recommended(out_dir)
    _train(OddNames(prefix="odd_"), hook, steps=steps, batch=4)
    assert not hook.disabled
    check_recommended_run(out_dir, "mxnet", saved, RECOMMENDED_HERE)


@pytest.mark.parametrize("softmax, fires", [(True, True), (False, False)])
def test_the_loss_block_is_recorded_and_improper_output_judges_it(out_dir, softmax, fires):
    """SoftmaxCrossEntropyLoss applies log-softmax itself (from_logits=False, its default): a softmax before it
    is a mistake ImproperOutput finds from what the hook recorded of the loss block."""
    from smdebug.core.loss_inputs import recorded_losses
    from smdebug.rules import run_rules

    class Net(gluon.Block):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.body = nn.Dense(8, activation="relu", in_units=6)
                self.head = nn.Dense(3, in_units=8)

        def forward(self, x):
            out = self.head(self.body(x))
            return nd.softmax(out) if softmax else out

    mx.random.seed(0)
    hook = smd.Hook.recommended(out_dir)
    _train(Net(prefix="net_"), hook, steps=12, batch=32)
    assert not hook.disabled
    [recorded] = recorded_losses(smd.create_trial(out_dir))
    assert (recorded.type, recorded.expects) == ("SoftmaxCrossEntropyLoss", "logits")
    result = run_rules(out_dir, ["ImproperOutput"]).rules[0]
    assert result.status == ("IssuesFound" if fires else "NoIssuesFound"), result.detail
