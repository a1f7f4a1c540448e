"""Two Gluon loss blocks built with the same prefix (so with one Gluon name) in a GAN-like loop with two
trainers: two loss series, never one alternating series."""

import mxnet as mx
from mxnet import autograd, gluon, nd

import smdebug.mxnet as smd
from smdebug.core import loss_inputs


def test_two_loss_blocks_with_one_name_are_two_series(tmp_path):
    mx.random.seed(0)
    G, D = gluon.nn.Dense(2, in_units=4), gluon.nn.Dense(1, in_units=2)
    G.initialize()
    D.initialize()
    d_loss_fn, g_loss_fn = gluon.loss.SigmoidBCELoss(prefix="bce_"), gluon.loss.SigmoidBCELoss(prefix="bce_")
    assert d_loss_fn.name == g_loss_fn.name
    out = str(tmp_path / "run")
    hook = smd.Hook(out_dir=out, save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["losses", "loss_inputs"])
    hook.register_block(D)
    hook.register_block(d_loss_fn)
    hook.register_block(g_loss_fn)
    td = gluon.Trainer(D.collect_params(), "adam", {"learning_rate": 1e-3})
    tg = gluon.Trainer(G.collect_params(), "adam", {"learning_rate": 1e-3})
    d_seen, g_seen = [], []
    for _ in range(3):
        x, z = nd.random.normal(shape=(8, 2)), nd.random.normal(shape=(8, 4))
        fake = G(z)
        with autograd.record():
            dl = d_loss_fn(D(nd.concat(x, fake.detach(), dim=0)), nd.concat(nd.ones((8, 1)), nd.zeros((8, 1)), dim=0))
        dl.backward()
        td.step(16)
        with autograd.record():
            gl = g_loss_fn(D(G(z)), nd.ones((8, 1)))
        gl.backward()
        tg.step(8)
        d_seen.append(dl.asnumpy())
        g_seen.append(gl.asnumpy())
    hook.close()
    trial = smd.create_trial(out)
    assert sorted(trial.tensor_names(collection="losses")) == ["bce_1_output_0", "bce_output_0"]
    d, g = trial.tensor("bce_output_0"), trial.tensor("bce_1_output_0")
    assert [d.value(s).tolist() for s in d.steps()] == [v.tolist() for v in d_seen]
    assert [g.value(s).tolist() for s in g.steps()] == [v.tolist() for v in g_seen]
    assert sorted(r.name for r in loss_inputs.recorded_losses(trial)) == ["bce", "bce_1"]
