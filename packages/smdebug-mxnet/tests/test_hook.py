"""The MXNet Gluon hook on real networks: what is saved at which step, names, values, modes, options."""

import json
import os

import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, gluon, nd

import smdebug.mxnet as smd
from models import TwoHeads, cnn, cnn_data, mlp, mlp_data, train
from smdebug.core.locations import END_OF_JOB_FILE
from smdebug.core.reductions import compute_reduction
from smdebug.exceptions import SMDebugTypeError, SMDebugValueError, TensorUnavailableForStep, TrainingStopRequested

ALL = ["weights", "biases", "gradients", "losses"]
MLP_PARAMS = ["dense0_bias", "dense0_weight", "dense1_bias", "dense1_weight"]
LOSS = "softmaxcrossentropyloss0_output_0"
TRAIN, EVAL = smd.modes.TRAIN, smd.modes.EVAL


def make_hook(out_dir, **kw):
    kw.setdefault("include_collections", ALL)
    return smd.Hook(out_dir=out_dir, **kw)


class ByHand:
    """Parameters and gradients read directly from Gluon after each backward, before the update."""

    def __init__(self, net):
        self.net, self.weights, self.grads = net, [], []

    def __call__(self, step):
        params = self.net.collect_params()
        self.weights.append({n: p.data().asnumpy().copy() for n, p in params.items()})
        self.grads.append({n: p.grad().asnumpy().copy() for n, p in params.items() if p.grad_req != "null"})


def run_mlp(out_dir, steps=12, hybridize=False, **kw):
    net, loss_fn = mlp(), gluon.loss.SoftmaxCrossEntropyLoss()
    if hybridize:
        net.hybridize()
    hook = make_hook(out_dir, **kw)
    hook.register_block(net)
    hook.register_block(loss_fn)
    hook.set_mode(TRAIN)
    by_hand = ByHand(net)
    losses = train(net, steps, loss_fn=loss_fn, record=by_hand)
    hook.close()
    return smd.create_trial(out_dir), losses, net, by_hand


@pytest.mark.parametrize("hybridize", [False, True], ids=["imperative", "hybridized"])
def test_names_values_and_step_alignment(out_dir, hybridize):
    trial, losses, net, by_hand = run_mlp(out_dir, steps=4, hybridize=hybridize,
                                          save_config=smd.SaveConfig(save_interval=1))
    assert trial.tensor_names() == MLP_PARAMS + ["gradient/" + n for n in MLP_PARAMS] + [LOSS]
    assert trial.tensor_names(collection="weights") == ["dense0_weight", "dense1_weight"]
    assert trial.tensor_names(collection="biases") == ["dense0_bias", "dense1_bias"]
    assert trial.tensor_names(collection="losses") == [LOSS]
    assert trial.steps() == trial.steps(TRAIN) == [0, 1, 2, 3]
    for step in range(4):
        for name in MLP_PARAMS:
            # weights of step s: the values step s computed with; gradient of step s: from its backward
            np.testing.assert_array_equal(trial.tensor(name).value(step), by_hand.weights[step][name])
            np.testing.assert_array_equal(trial.tensor("gradient/" + name).value(step), by_hand.grads[step][name])
        np.testing.assert_allclose(trial.tensor(LOSS).value(step), losses[step], rtol=1e-6)
    # the update of step 3 (SGD, gradients rescaled by 1/batch) leads from step 3's weights to the final ones
    w3, g3 = trial.tensor("dense1_weight").value(3), trial.tensor("gradient/dense1_weight").value(3)
    np.testing.assert_allclose(net[1].weight.data().asnumpy(), w3 - 0.1 / 32 * g3, rtol=1e-5, atol=1e-7)
    assert trial.tensor(LOSS).value(0).shape == (32,)  # Gluon losses are per sample


@pytest.mark.parametrize(
    "config, expected",
    [
        (smd.SaveConfig(save_interval=5), [0, 5, 10]),
        (smd.SaveConfig(save_interval=2, start_step=3, end_step=9), [4, 6, 8]),
        (smd.SaveConfig(save_steps=[1, 7]), [0, 1, 7]),
        (smd.SaveConfig(save_interval=4, end_step=0), []),
    ],
    ids=["interval", "start-end", "save_steps", "disabled"],
)
def test_exact_steps_for_save_configs(out_dir, config, expected):
    trial, _, _, _ = run_mlp(out_dir, save_config=config)
    assert trial.steps() == expected
    for name in trial.tensor_names():
        assert trial.tensor(name).steps() == expected, name


def test_collection_schedules_and_defaults(out_dir):
    net, loss_fn = mlp(), gluon.loss.SoftmaxCrossEntropyLoss()
    hook = make_hook(out_dir, save_config=smd.SaveConfig(save_interval=3))
    hook.get_collection("gradients").save_config = smd.SaveConfig(save_steps=[2])
    hook.get_collection("losses").save_config = {TRAIN: smd.SaveConfigMode(save_interval=1)}
    hook.register_block(net)
    hook.register_block(loss_fn)
    hook.set_mode(TRAIN)
    by_hand = ByHand(net)
    train(net, 7, loss_fn=loss_fn, record=by_hand)
    hook.close()
    trial = smd.create_trial(out_dir)
    assert trial.tensor("dense0_weight").steps() == [0, 3, 6]
    assert trial.tensor("gradient/dense0_weight").steps() == [0, 2]
    np.testing.assert_array_equal(trial.tensor("gradient/dense0_weight").value(2), by_hand.grads[2]["dense0_weight"])
    assert trial.tensor(LOSS).steps() == list(range(7))


def test_default_hook_saves_losses_every_500_steps(out_dir):
    trial, _, _, _ = run_mlp(out_dir, steps=3, include_collections=None)
    assert trial.tensor_names() == [LOSS]
    assert trial.steps() == [0]
    assert {"weights", "biases", "gradients", "losses", "inputs", "outputs"} <= set(trial.collections())
    assert trial.collection("losses").include_regex[0] == ".*loss._(?!input).*output"


def test_train_and_eval_modes(out_dir):
    """Gradients are never saved in EVAL; the last TRAIN step of an epoch gets its own gradients
    (read when set_mode switches to EVAL), recorded under TRAIN."""
    net, loss_fn = mlp(), gluon.loss.SoftmaxCrossEntropyLoss()
    cfg = smd.SaveConfig(mode_save_configs={TRAIN: smd.SaveConfigMode(save_interval=2, save_steps=[3, 7]),
                                            EVAL: smd.SaveConfigMode(save_interval=1)})
    hook = make_hook(out_dir, save_config=cfg)
    hook.register_block(net)
    hook.register_block(loss_fn)
    by_hand = ByHand(net)
    x, y = mlp_data()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    eval_losses = []
    for epoch in range(2):
        hook.set_mode(TRAIN)
        train(net, 4, loss_fn=loss_fn, record=lambda s: by_hand(s), trainer=trainer)
        hook.set_mode(EVAL)
        for _ in range(3):
            eval_losses.append(loss_fn(net(x), y).asnumpy())
    hook.close()
    trial = smd.create_trial(out_dir)
    assert trial.steps(TRAIN) == [0, 2, 3, 4, 6, 7]
    assert trial.steps(EVAL) == [0, 1, 2, 3, 4, 5]
    grad = trial.tensor("gradient/dense0_weight")
    assert grad.steps(TRAIN) == [0, 2, 3, 4, 6, 7] and grad.steps(EVAL) == []
    for mode_step in (2, 3, 7):  # 3 and 7 end with set_mode(EVAL)
        np.testing.assert_array_equal(grad.value(mode_step, mode=TRAIN), by_hand.grads[mode_step]["dense0_weight"])
        np.testing.assert_array_equal(trial.tensor("dense0_weight").value(mode_step, mode=TRAIN),
                                      by_hand.weights[mode_step]["dense0_weight"])
    assert trial.mode(4) == EVAL and trial.mode_step(4) == 0
    assert trial.mode(3) == TRAIN and trial.mode_step(3) == 3
    assert trial.global_step(EVAL, 3) == 11
    np.testing.assert_allclose(trial.tensor(LOSS).value(5, mode=EVAL), eval_losses[5], rtol=1e-6)


def test_block_inputs_outputs_of_a_plain_block_with_a_reused_child(out_dir):
    net = TwoHeads()
    net.initialize(mx.init.Xavier())
    hook = make_hook(out_dir, save_config=smd.SaveConfig(save_interval=1), include_collections=["acts", "losses"])
    hook.get_collection("acts").add_block_tensors(net.act, inputs=True, outputs=True)
    hook.get_collection("acts").add_block_tensors(net.body)
    hook.register_block(net)
    train(net, 3, unpack=lambda out: out[0])
    hook.close()
    trial = smd.create_trial(out_dir)
    act, body = net.act.name, net.body.name
    assert (act, body) == ("twoheads0_tanh0", "twoheads0_dense0")
    # the reused block's tensors continue their indices instead of overwriting each other
    assert trial.tensor_names(collection="acts") == sorted([
        f"{act}_input_0", f"{act}_input_1", f"{act}_output_0", f"{act}_output_1", f"{body}_output_0"])
    a_in1, a_out0 = trial.tensor(f"{act}_input_1").value(1), trial.tensor(f"{act}_output_0").value(1)
    np.testing.assert_array_equal(a_in1, a_out0)
    np.testing.assert_allclose(trial.tensor(f"{act}_output_1").value(1), np.tanh(a_out0), rtol=1e-6)
    np.testing.assert_allclose(trial.tensor(f"{act}_input_0").value(2), trial.tensor(f"{body}_output_0").value(2))
    assert trial.tensor(f"{body}_output_0").value(2).shape == (32, 8)


@pytest.mark.parametrize("hybridize", [False, True], ids=["imperative", "hybridized"])
def test_cnn_deferred_shapes_and_outputs(out_dir, hybridize, smd_log):
    """A CNN whose parameter shapes are only known after the first forward; block outputs are
    available without hybridize, and clearly reported missing (once) with it."""
    net = cnn()
    if hybridize:
        net.hybridize()
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    hook = make_hook(out_dir, save_config=smd.SaveConfig(save_interval=2), include_collections=ALL + ["layers"])
    hook.register_block(net)
    hook.register_block(loss_fn)
    by_hand = ByHand(net)
    train(net, 5, data=cnn_data, loss_fn=loss_fn, record=by_hand)
    hook.close()
    trial = smd.create_trial(out_dir)
    assert trial.steps() == [0, 2, 4]
    np.testing.assert_array_equal(trial.tensor("conv0_weight").value(0), by_hand.weights[0]["conv0_weight"])
    assert trial.tensor("conv0_weight").value(0).shape == (4, 1, 3, 3)
    assert trial.tensor("dense0_weight").value(0).shape == (10, 128)
    np.testing.assert_array_equal(trial.tensor("gradient/conv1_weight").value(4), by_hand.grads[4]["conv1_weight"])
    outputs = [n for n in trial.tensor_names(collection="layers") if "_output_" in n]
    model_out = trial.tensor("hybridsequential0_output_0").value(2)
    assert model_out.shape == (16, 10)
    warning = "is hybridized, so Gluon runs it as one graph"
    if hybridize:
        assert outputs == ["hybridsequential0_output_0", LOSS]
        assert smd_log.text.count(warning) == 1
        assert "conv0" in smd_log.text and "hybridize(active=False)" in smd_log.text
    else:
        inner = ["conv0_output_0", "conv0_relu_output_0", "conv1_output_0", "conv1_tanh_output_0",
                 "dense0_output_0", "flatten0_output_0", "pool0_output_0"]
        assert outputs == sorted(inner + ["hybridsequential0_output_0", LOSS])
        np.testing.assert_array_equal(trial.tensor("dense0_output_0").value(2), model_out)
        assert trial.tensor("conv1_output_0").value(4).shape == (16, 8, 4, 4)
        assert warning not in smd_log.text


def test_graph_outputs_of_a_hybridized_network(out_dir):
    """The supported way to see inside a hybridized network: MXNet's operator monitor."""
    net = mlp()
    net.hybridize()
    hook = make_hook(out_dir, save_config=smd.SaveConfig(save_interval=1),
                     include_regex=["relu_fwd_output$"], include_collections=["weights", "biases"])
    hook.register_block(net, graph_outputs=True)
    train(net, 3)
    hook.close()
    trial = smd.create_trial(out_dir)
    assert trial.tensor_names(collection="default") == ["dense0_relu_fwd_output"]
    x, _ = mlp_data()
    for step in range(3):
        w, b = trial.tensor("dense0_weight").value(step), trial.tensor("dense0_bias").value(step)
        expected = np.maximum(x.asnumpy() @ w.T + b, 0)
        np.testing.assert_allclose(trial.tensor("dense0_relu_fwd_output").value(step), expected, rtol=1e-5, atol=1e-6)


def test_reductions_computed_with_mxnet_match_the_core_definition(out_dir):
    rc = smd.ReductionConfig(reductions=["min", "max", "mean", "std", "variance", "sum", "median"],
                             abs_reductions=["mean"], norms=["l1", "l2"], abs_norms=["l2"], save_raw_tensor=True,
                             save_shape=True)
    trial, _, _, _ = run_mlp(out_dir, steps=2, save_config=smd.SaveConfig(save_interval=1), reduction_config=rc)
    for name in ("dense0_weight", "gradient/dense0_weight"):
        t = trial.tensor(name)
        raw = t.value(1)
        stored = t.reduction_values(1)
        assert len(stored) == 11
        for (op, is_abs), value in stored.items():
            np.testing.assert_allclose(value, [compute_reduction(raw, op, is_abs)], rtol=1e-5, err_msg=op)
        assert t.shape(1) == (16, 10)
    # losses are never reduced
    assert trial.tensor(LOSS).reduction_values(1) == {}


def test_reductions_only_do_not_save_raw(out_dir):
    rc = smd.ReductionConfig(norms=["l2"], save_shape=True)
    trial, _, _, by_hand = run_mlp(out_dir, steps=2, save_config=smd.SaveConfig(save_interval=1), reduction_config=rc)
    t = trial.tensor("gradient/dense0_weight")
    with pytest.raises(TensorUnavailableForStep):
        t.value(0)
    assert t.shape(0) == (16, 10)
    np.testing.assert_allclose(t.reduction_value(0, "l2"), np.linalg.norm(by_hand.grads[0]["dense0_weight"]), rtol=1e-5)


def test_scalars_custom_tensors_and_record_tensor_value(out_dir):
    net = mlp()
    hook = make_hook(out_dir, save_config=smd.SaveConfig(save_interval=2), include_collections=["losses"])
    hook.register_block(net)
    x, y = mlp_data()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    for step in range(4):
        with autograd.record():
            out = net(x)
            loss = nd.mean(nd.square(out - y.reshape((-1, 1))))
        hook.record_tensor_value("mse_loss", loss)
        hook.save_scalar("lr", trainer.learning_rate)
        hook.save_tensor("logits_mean", out.mean(axis=0), collections_to_write="custom")
        loss.backward()
        trainer.step(1)
    hook.close()
    trial = smd.create_trial(out_dir)
    assert trial.tensor("mse_loss_output_0").steps() == [0, 2]
    assert "mse_loss_output_0" in trial.tensor_names(collection="losses")
    assert trial.tensor("scalar/lr").steps() == [0, 1, 2, 3]
    assert trial.tensor("logits_mean").steps() == [0, 2]
    assert trial.tensor("logits_mean").value(0).shape == (3,)


def test_trainer_steps_and_accumulated_gradients(out_dir):
    """With grad_req="add" and zero_grad() after each update, gradients must be read at
    trainer.step(): register_trainer does that, and makes a step one update."""
    net, loss_fn = mlp(), gluon.loss.SoftmaxCrossEntropyLoss()
    net.collect_params().setattr("grad_req", "add")
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    hook = make_hook(out_dir, save_config=smd.SaveConfig(save_interval=1))
    hook.register_block(net)
    hook.register_block(loss_fn)
    hook.register_trainer(trainer)
    hook.set_mode(TRAIN)
    x, y = mlp_data()
    accumulated, weights = [], []
    for step in range(3):
        weights.append(net[0].weight.data().asnumpy().copy())
        for micro in range(4):
            part = slice(micro * 8, (micro + 1) * 8)
            with autograd.record():
                loss = loss_fn(net(x[part]), y[part])
            loss.backward()
        accumulated.append(net[0].weight.grad().asnumpy().copy())
        trainer.step(32)
        net.collect_params().zero_grad()
    hook.close()
    trial = smd.create_trial(out_dir)
    assert trial.steps() == [0, 1, 2]
    for step in range(3):
        np.testing.assert_array_equal(trial.tensor("gradient/dense0_weight").value(step), accumulated[step])
        np.testing.assert_array_equal(trial.tensor("dense0_weight").value(step), weights[step])
    # the loss of every micro-batch is kept, with continuing indices
    assert trial.tensor_names(regex="softmaxcrossentropyloss0_output") == [
        f"softmaxcrossentropyloss0_output_{i}" for i in range(4)]
    assert "step" not in trainer.__dict__  # close() gave the Trainer its own methods back


def test_frozen_parameters_have_no_gradient(out_dir):
    net = mlp()
    net[0].collect_params().setattr("grad_req", "null")
    hook = make_hook(out_dir, save_config=smd.SaveConfig(save_interval=1))
    hook.register_block(net)
    train(net, 3)
    hook.close()
    assert not hook.disabled
    trial = smd.create_trial(out_dir)
    assert "gradient/dense0_weight" not in trial.tensor_names()
    assert trial.tensor("gradient/dense1_weight").steps() == [0, 1, 2]
    np.testing.assert_array_equal(trial.tensor("dense0_weight").value(0), trial.tensor("dense0_weight").value(2))


def _hook_counts(net):
    blocks, stack = [], [net]
    while stack:
        b = stack.pop()
        blocks.append(b)
        stack.extend(b._children.values())
    return sum(len(b._forward_hooks) + len(b._forward_pre_hooks) for b in blocks)


def test_remove_detaches_everything(out_dir):
    net = mlp()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    hook = make_hook(out_dir, save_all=True, save_config=smd.SaveConfig(save_interval=1))
    hook.register_block(net)
    hook.register_trainer(trainer)
    train(net, 2, trainer=trainer)
    assert _hook_counts(net) > 0 and "step" in trainer.__dict__
    hook.remove()
    assert _hook_counts(net) == 0 and "step" not in trainer.__dict__
    train(net, 2, trainer=trainer)  # training goes on without the hook
    hook.close()
    trial = smd.create_trial(out_dir)
    assert trial.steps() == [0, 1]
    assert {"hybridsequential0_input_0", "dense0_output_0", "gradient/dense1_bias"} <= set(trial.tensor_names())


def test_json_configured_hook_and_use_smdebug(tmp_path, monkeypatch):
    cfg = {"LocalPath": str(tmp_path / "zcc"),
           "HookParameters": {"save_interval": "2", "reductions": "max", "save_raw_tensor": "true"},
           "CollectionConfigurations": [{"CollectionName": "weights"},
                                        {"CollectionName": "gradients", "CollectionParameters": {"save_interval": "3"}}]}
    (tmp_path / "hook.json").write_text(json.dumps(cfg))
    monkeypatch.setenv("SMDEBUG_CONFIG_FILE_PATH", str(tmp_path / "hook.json"))
    monkeypatch.setenv("USE_SMDEBUG", "0")
    assert smd.get_hook(create_if_not_exists=True) is None
    monkeypatch.delenv("USE_SMDEBUG")
    hook = smd.get_hook(create_if_not_exists=True)
    assert isinstance(hook, smd.Hook) and smd.get_hook() is hook
    net, loss_fn = mlp(), gluon.loss.SoftmaxCrossEntropyLoss()
    hook.register_block(net)
    hook.register_block(loss_fn)
    train(net, 7, loss_fn=loss_fn)
    hook.close()
    trial = smd.create_trial(str(tmp_path / "zcc"))
    assert trial.tensor("dense0_weight").steps() == [0, 2, 4, 6]
    assert trial.tensor("gradient/dense0_weight").steps() == [0, 3, 6]
    assert trial.tensor(LOSS).steps() == [0, 2, 4, 6]
    w = trial.tensor("dense0_weight")
    np.testing.assert_allclose(w.reduction_value(4, "max"), w.value(4).max())


def test_stop_signal_ends_the_training_loop(out_dir, monkeypatch):
    from smdebug.core.stop_signal import write_stop_signal

    monkeypatch.setenv("SMDEBUG_STOP_CHECK_INTERVAL", "0")
    net, loss_fn = mlp(), gluon.loss.SoftmaxCrossEntropyLoss()
    hook = make_hook(out_dir, save_config=smd.SaveConfig(save_interval=1))
    hook.register_block(net)
    hook.register_block(loss_fn)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    x, y = mlp_data()
    completed = 0
    with pytest.raises(TrainingStopRequested) as info:
        for step in range(20):
            if step == 3:
                write_stop_signal(out_dir, "SomeRule", 2, "why")
            with autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            trainer.step(32)
            completed += 1
    assert completed == 3  # the forward call of step 3 raised
    assert info.value.rule == "SomeRule"
    assert hook.stop_requested
    trial = smd.create_trial(out_dir)
    assert trial.steps() == [0, 1, 2]
    assert trial.tensor("gradient/dense0_weight").steps() == [0, 1, 2]  # step 2's, read before stopping
    assert os.path.exists(os.path.join(out_dir, END_OF_JOB_FILE))
    assert _hook_counts(net) == 0  # later forward calls run without the hook
    net(x)


def test_api_misuse_is_reported(out_dir, smd_log):
    hook = make_hook(out_dir)
    with pytest.raises(SMDebugTypeError):
        hook.register_block("not a block")
    with pytest.raises(SMDebugTypeError):
        hook.register_trainer(object())
    net = mlp()
    hook.register_block(net)
    hook.register_block(net)
    assert "already registered" in smd_log.text
    with pytest.raises(SMDebugValueError):
        hook.register_block(mlp())
    with pytest.raises(ValueError):
        hook.set_mode("train")  # not a ModeKeys: a mistake in the script, raised at once (as in 1.0.x)
    assert hook.mode == smd.modes.GLOBAL
    hook.close()


def test_trainer_steps_with_eval_in_between(out_dir):
    net, loss_fn = mlp(), gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    hook = make_hook(out_dir, save_config=smd.SaveConfig(save_interval=1))
    hook.register_block(net)
    hook.register_block(loss_fn)
    hook.register_trainer(trainer)
    by_hand = ByHand(net)
    x, y = mlp_data()
    hook.set_mode(TRAIN)
    train(net, 2, loss_fn=loss_fn, trainer=trainer, record=by_hand)
    hook.set_mode(EVAL)
    for _ in range(2):
        loss_fn(net(x), y)
    hook.set_mode(TRAIN)
    train(net, 1, loss_fn=loss_fn, trainer=trainer, record=by_hand)
    hook.close()
    trial = smd.create_trial(out_dir)
    assert trial.steps(TRAIN) == [0, 1, 2] and trial.steps(EVAL) == [0, 1]
    assert [trial.mode(s) for s in trial.steps()] == [TRAIN, TRAIN, EVAL, EVAL, TRAIN]
    grad = trial.tensor("gradient/dense1_weight")
    assert grad.steps() == [0, 1, 4]
    np.testing.assert_array_equal(grad.value(2, mode=TRAIN), by_hand.grads[2]["dense1_weight"])
    np.testing.assert_array_equal(trial.tensor("dense1_weight").value(4), by_hand.weights[2]["dense1_weight"])


def test_tensorboard_export(out_dir):
    trial, _, _, _ = run_mlp(out_dir, steps=2, save_config=smd.SaveConfig(save_interval=1), export_tensorboard=True)
    tb_files = [f for _, _, files in os.walk(os.path.join(out_dir, "tensorboard")) for f in files]
    assert tb_files and all(f.endswith(".tfevents") for f in tb_files)
    assert trial.steps() == [0, 1]


def test_an_internal_failure_never_stops_training(out_dir, monkeypatch, smd_log):
    net = mlp()
    hook = make_hook(out_dir, save_config=smd.SaveConfig(save_interval=1), include_collections=["weights"])
    hook.register_block(net)
    calls = {"n": 0}
    real = hook._save_parameters

    def broken():
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("boom")
        real()

    monkeypatch.setattr(hook, "_save_parameters", broken)
    losses = train(net, 5)
    assert len(losses) == 5 and hook.disabled
    assert "boom" in smd_log.text
    hook.close()
    assert smd.create_trial(out_dir).steps() == [0, 1]  # what was saved before the failure is intact


def test_a_custom_collection_that_matches_nothing(out_dir, smd_log):
    """Asked for directly (as 1.0.x scripts and tests did), preparing a collection of the user's with no
    regex and no tensor names raises InvalidCollectionConfiguration; in training it is logged once and
    skipped, and the other collections are saved."""
    from smdebug.exceptions import InvalidCollectionConfiguration

    hook = make_hook(out_dir, include_collections=["empty_one", "weights"], save_config=smd.SaveConfig(save_interval=1))
    hook.get_collection("empty_one")
    with pytest.raises(InvalidCollectionConfiguration, match="empty_one"):
        hook._prepare_collections()
    net = mlp()
    hook.register_block(net)
    train(net, 3)
    hook.close()
    trial = smd.create_trial(out_dir)
    assert trial.steps() == [0, 1, 2]
    assert set(trial.tensor_names(collection="weights")) == {n for n in MLP_PARAMS if n.endswith("weight")}
    assert "'empty_one' has no include_regex" in smd_log.text


def test_collection_modules_and_singleton_utils_of_1_0(out_dir):
    """1.0.x's module paths: CollectionKeys from smdebug.mxnet.collection, the hook from singleton_utils."""
    from smdebug.core.collection import CollectionKeys
    from smdebug.mxnet import collection, singleton_utils

    assert collection.CollectionKeys is CollectionKeys
    hook = make_hook(out_dir)
    singleton_utils.set_hook(hook)
    assert singleton_utils.get_hook() is hook and smd.get_hook() is hook
    singleton_utils.del_hook()
    assert singleton_utils.get_hook() is None
    hook.close()
