"""A hybridized network under Hook.recommended: its activation layers are judged as an imperative one's.

``net.hybridize()`` is how Gluon networks are normally trained, and it hides the inner blocks from forward
hooks; the hook reads the activation blocks' tensors from MXNet's operator monitor instead (hook.py,
"Hybridized networks"). Real Gluon training, judged by the real rules.
"""

import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, gluon, nd
from mxnet.gluon import nn

import smdebug.mxnet as smd
from smdebug.core.activations import activation_layers


def _net(hidden_bias):
    """dense0 -> relu0 -> dense1 (tanh fused: dense1_tanh) -> dense2: both activation kinds the recommended
    rules judge (DeadRelu reads the ReLU's outputs, SaturatedActivation the tanh's inputs)."""
    net = nn.HybridSequential(prefix="net_")
    with net.name_scope():
        net.add(nn.Dense(32, in_units=8, bias_initializer=mx.init.Constant(hidden_bias)), nn.Activation("relu"),
                nn.Dense(16, activation="tanh"), nn.Dense(3))
    net.initialize(mx.init.Xavier(), ctx=mx.cpu())
    return net


def _train(out_dir, hidden_bias, graph_outputs, steps=40):
    mx.random.seed(0)
    rng = np.random.RandomState(0)
    centres = rng.randn(3, 8) * 2
    y = rng.randint(0, 3, 512)
    x = (centres[y] + rng.randn(512, 8)).astype("float32")
    net, loss_fn = _net(hidden_bias), gluon.loss.SoftmaxCrossEntropyLoss()
    net.hybridize()
    hook = smd.Hook.recommended(out_dir)
    hook.register_block(net, graph_outputs=graph_outputs)
    hook.register_block(loss_fn)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.05, "momentum": 0.9})
    for step in range(steps):
        idx = rng.randint(0, 512, 32)
        xb, yb = nd.array(x[idx]), nd.array(y[idx].astype("float32"))
        with autograd.record():
            loss = loss_fn(net(xb), yb)
        loss.backward()
        trainer.step(32)
    hook.close()
    assert not hook.disabled
    return smd.create_trial(out_dir)


@pytest.mark.parametrize("graph_outputs", [False, True], ids=["register_block", "graph_outputs"])
def test_activation_tensors_of_a_hybridized_net_are_saved(out_dir, graph_outputs, smd_log):
    trial = _train(out_dir, hidden_bias=0.0, graph_outputs=graph_outputs, steps=12)
    relu = trial.tensor_names(collection="relu_activations")
    tanh = trial.tensor_names(collection="tanh_activations")
    assert relu == ["net_relu0_fwd_input0", "net_relu0_fwd_output"]
    assert tanh == ["net_dense1_tanh_fwd_input0", "net_dense1_tanh_fwd_output"]
    for step in trial.tensor("net_dense1_tanh_fwd_output").steps():
        np.testing.assert_allclose(trial.tensor("net_dense1_tanh_fwd_output").value(step),
                                   np.tanh(trial.tensor("net_dense1_tanh_fwd_input0").value(step)), rtol=1e-5, atol=1e-6)
    assert trial.tensor("net_relu0_fwd_output").value(0).shape == (32, 32)
    # the layers' record names the graph nodes' tensors, so the rules find them by layer
    found = activation_layers(trial)
    assert found["relu_activations"][0].output_names(trial.tensor_names()) == ["net_relu0_fwd_output"]
    # the monitor hands over only what a collection asked for: no operator input under its node name
    assert not [n for n in trial.tensor_names() if n.endswith(("_fwd_weight", "_fwd_bias", "_fwd_data"))]
    assert "cannot be saved" not in smd_log.text


@pytest.mark.parametrize("hidden_bias, relu_verdict", [(0.0, "NoIssuesFound"), (-10.0, "IssuesFound")],
                         ids=["healthy", "dead_relus"])
def test_dead_relu_judges_a_hybridized_net_under_the_recommended_hook(out_dir, hidden_bias, relu_verdict):
    from smdebug.rules import run_rules

    _train(out_dir, hidden_bias=hidden_bias, graph_outputs=False)
    results = {r.name: r for r in run_rules(out_dir, ["DeadRelu", "SaturatedActivation"]).rules}
    assert results["DeadRelu"].status == relu_verdict, results["DeadRelu"].detail
    assert results["SaturatedActivation"].status != "NotEvaluated", results["SaturatedActivation"].detail
