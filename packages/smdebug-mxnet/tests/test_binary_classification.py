"""A Gluon binary classifier trained with ``SigmoidBinaryCrossEntropyLoss``: its targets are the run's labels
and its input the predictions, read as logits or probabilities by what the loss expects (``from_sigmoid``), so
the classification rules judge it as a PyTorch ``BCEWithLogitsLoss``/``BCELoss`` run. Real Gluon training."""

import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, gluon, nd
from mxnet.gluon import nn

import smdebug.mxnet as smd
from smdebug.core.loss_inputs import recorded_losses

STEPS = 81  # the recommended schedule's last save is step 80: the trained model's labels are judged


def _train(out_dir, from_sigmoid, labels_as_column, stuck_on_class_0=False):
    """A 2-layer MLP on rows labelled by a noisy linear rule (balanced classes). ``stuck_on_class_0``: the output
    bias starts at -20 and the learning rate is 0, so every prediction is class 0 (a collapsed classifier)."""
    mx.random.seed(0)
    rng = np.random.RandomState(0)
    x = rng.randn(512, 8).astype("float32")
    y = (x[:, 0] + 0.5 * x[:, 1] + 0.3 * rng.randn(512) > 0).astype("float32")
    net = nn.HybridSequential()
    net.add(nn.Dense(16, activation="relu", in_units=8),
            nn.Dense(1, in_units=16, bias_initializer=mx.init.Constant(-20.0 if stuck_on_class_0 else 0.0)))
    if from_sigmoid:
        net.add(nn.Activation("sigmoid"))
    net.initialize(mx.init.Xavier(), ctx=mx.cpu())
    loss_fn = gluon.loss.SigmoidBinaryCrossEntropyLoss(from_sigmoid=from_sigmoid)
    hook = smd.Hook.recommended(out_dir)
    hook.register_block(net)
    hook.register_block(loss_fn)
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.0 if stuck_on_class_0 else 0.01})
    for _ in range(STEPS):
        idx = rng.randint(0, 512, 32)
        targets = y[idx].reshape(-1, 1) if labels_as_column else y[idx]  # (Gluon reshapes them like the output)
        with autograd.record():
            loss = loss_fn(net(nd.array(x[idx])), nd.array(targets))
        loss.backward()
        trainer.step(32)
    hook.close()
    assert not hook.disabled


@pytest.mark.parametrize("labels_as_column", [True, False], ids=["labels_n_by_1", "labels_n"])
@pytest.mark.parametrize("from_sigmoid", [False, True], ids=["logits", "probabilities"])
def test_a_sigmoid_bce_classifier_has_labels_and_predictions_the_rules_judge(out_dir, from_sigmoid, labels_as_column):
    from smdebug.rules import run_rules

    _train(out_dir, from_sigmoid, labels_as_column)
    trial = smd.create_trial(out_dir)
    assert trial.tensor_names(collection="labels") == ["sigmoidbinarycrossentropyloss0_input_1"]
    assert trial.tensor_names(collection="predictions") == ["sigmoidbinarycrossentropyloss0_input_0"]
    [loss] = recorded_losses(trial)
    assert loss.expects == ("probabilities" if from_sigmoid else "logits")
    results = {r.name: r for r in run_rules(out_dir, ["ClassImbalance", "Confusion"]).rules}
    # judged, and quiet: a working classifier of balanced classes (a logit read as a probability, or the other
    # way round, would put every sample in one class and fire both)
    for name in ("ClassImbalance", "Confusion"):
        assert results[name].status == "NoIssuesFound", (name, results[name].status, results[name].detail)


def test_class_imbalance_finds_a_binary_classifier_stuck_on_one_class(out_dir):
    from smdebug.rules import run_rules

    _train(out_dir, from_sigmoid=False, labels_as_column=True, stuck_on_class_0=True)
    [result] = run_rules(out_dir, ["ClassImbalance"]).rules
    assert result.status == "IssuesFound", result.detail
    assert "mispredicts class 1" in result.findings[0].reason


@pytest.mark.parametrize("loss_class, says", [
    ("L2Loss", "its loss (L2Loss) is a regression's, whose targets are values"),
    # (labels -1/1: a classifier, but not one whose targets the hook saves as labels)
    ("LogisticLoss", "its loss (LogisticLoss) is none whose targets the hook takes for classes"),
])
def test_class_imbalance_says_why_a_gluon_run_has_no_labels_from_what_it_recorded(out_dir, loss_class, says):
    from smdebug.rules import run_rules

    mx.random.seed(0)
    rng = np.random.RandomState(0)
    x = rng.randn(256, 4).astype("float32")
    y = np.sign(x[:, :1] + 0.1).astype("float32")
    net = nn.Dense(1, in_units=4)
    net.initialize(mx.init.Xavier(), ctx=mx.cpu())
    loss_fn = getattr(gluon.loss, loss_class)()
    hook = smd.Hook.recommended(out_dir)
    hook.register_block(net)
    hook.register_block(loss_fn)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.05})
    for i in range(0, 256, 32):
        with autograd.record():
            loss = loss_fn(net(nd.array(x[i:i + 32])), nd.array(y[i:i + 32]))
        loss.backward()
        trainer.step(32)
    hook.close()
    [result] = run_rules(out_dir, ["ClassImbalance"]).rules
    assert result.status == "NotApplicable", result.detail
    assert says in result.detail
    # the losses the MXNet hook does take labels from, not PyTorch's
    assert "SigmoidBinaryCrossEntropyLoss" in result.detail and "NLLLoss" not in result.detail
