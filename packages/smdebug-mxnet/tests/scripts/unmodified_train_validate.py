"""A plain Gluon loop that knows nothing of smdebug and validates after each epoch without autograd.record()
(for the zero-code-change test of modes): 3 epochs of 2 training batches and 1 validation batch."""

import mxnet as mx
from mxnet import autograd, gluon

mx.random.seed(0)
net = gluon.nn.HybridSequential()
net.add(gluon.nn.Dense(16, activation="relu"), gluon.nn.Dense(3))
net.initialize(mx.init.Xavier())
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
x = mx.nd.random.normal(shape=(32, 10))
y = mx.nd.array([i % 3 for i in range(32)])
vx, vy = mx.nd.random.normal(shape=(16, 10)), mx.nd.array([i % 3 for i in range(16)])
for epoch in range(3):
    for i in range(0, 32, 16):
        with autograd.record():
            loss = loss_fn(net(x[i:i + 16]), y[i:i + 16])
        loss.backward()
        trainer.step(16)
    print("validation loss", round(float(loss_fn(net(vx), vy).mean().asscalar()), 4))
