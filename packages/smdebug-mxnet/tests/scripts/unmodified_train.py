"""A plain Gluon training script that knows nothing of smdebug (for the zero-code-change test)."""

import mxnet as mx
from mxnet import autograd, gluon

mx.random.seed(0)
net = gluon.nn.Sequential()
net.add(gluon.nn.Dense(16, activation="relu"), gluon.nn.Dense(3))
net.initialize(mx.init.Xavier())
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
x = mx.nd.random.normal(shape=(32, 10))
y = mx.nd.array([i % 3 for i in range(32)])
for step in range(6):
    with autograd.record():
        loss = loss_fn(net(x), y)
    loss.backward()
    trainer.step(32)
print("final loss", round(float(loss.mean().asscalar()), 4))
