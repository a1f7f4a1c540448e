"""Small real Gluon networks and a training loop for the tests."""

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon, nd
from mxnet.gluon import nn


def mlp():
    """dense0 (relu) -> dense1: parameters dense0_weight, dense0_bias, dense1_weight, dense1_bias."""
    net = nn.HybridSequential()
    net.add(nn.Dense(16, activation="relu", in_units=10), nn.Dense(3, in_units=16))
    net.initialize(mx.init.Xavier(), ctx=mx.cpu())
    return net


def cnn():
    """conv0 -> pool0 -> conv1 -> flatten0 -> dense0, with deferred shapes (no in_channels/in_units)."""
    net = nn.HybridSequential()
    net.add(nn.Conv2D(4, 3, padding=1, activation="relu"), nn.MaxPool2D(2),
            nn.Conv2D(8, 3, padding=1, activation="tanh"), nn.Flatten(), nn.Dense(10))
    net.initialize(mx.init.Xavier(), ctx=mx.cpu())
    return net


class TwoHeads(gluon.Block):
    """A plain (non-hybrid) Block with a reused child and a tuple output."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.body = nn.Dense(8, in_units=10)
            self.act = nn.Activation("tanh")
            self.head = nn.Dense(3, in_units=8)

    def forward(self, x):
        h = self.act(self.act(self.body(x)))  # self.act runs twice
        return self.head(h), h


def mlp_data(n=32, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.randn(n, 10).astype("float32")
    y = ((x[:, 0] > 0).astype("float32") + (x[:, 1] > 0))
    return nd.array(x), nd.array(y)


def cnn_data(n=16, seed=0):
    rng = np.random.RandomState(seed)
    return nd.array(rng.randn(n, 1, 8, 8).astype("float32")), nd.array(rng.randint(0, 10, n).astype("float32"))


def train(net, steps, data=mlp_data, lr=0.1, loss_fn=None, unpack=lambda out: out, trainer=None, record=None):
    """forward, loss, backward, trainer.step. Returns the losses; ``record(step)`` is called after
    each backward (before the update) to let tests read gradients by hand."""
    x, y = data()
    loss_fn = loss_fn or gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = trainer or gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": lr})
    losses = []
    for step in range(steps):
        with autograd.record():
            loss = loss_fn(unpack(net(x)), y)
        loss.backward()
        if record is not None:
            record(step)
        trainer.step(x.shape[0])
        losses.append(loss.asnumpy())
    return losses
