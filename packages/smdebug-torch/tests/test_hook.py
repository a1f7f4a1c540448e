"""The PyTorch hook on real models: what is saved at which step, names, modes, reductions, options."""

import json
import logging

import numpy as np
import pytest
import torch
import torch.nn as nn

import smdebug.pytorch as smd
from models import CNN, MLP, DictModel, cnn_data, mlp_data, train
from smdebug.core.reductions import compute_reduction
from smdebug.exceptions import SMDebugTypeError, TensorUnavailableForStep

ALL = ["weights", "biases", "gradients", "losses"]


def make_hook(out_dir, **kw):
    kw.setdefault("include_collections", ALL)
    return smd.Hook(out_dir=out_dir, **kw)


def run_mlp(out_dir, steps=12, **kw):
    torch.manual_seed(0)
    model, loss_fn = MLP(), nn.CrossEntropyLoss()
    hook = make_hook(out_dir, **kw)
    hook.register_module(model)
    hook.register_loss(loss_fn)
    hook.set_mode(smd.modes.TRAIN)
    losses = train(model, steps, loss_fn=loss_fn)
    hook.close()
    return smd.create_trial(out_dir), losses, model


def test_names_and_values_users_know(out_dir):
    trial, losses, model = run_mlp(out_dir, steps=4, save_config=smd.SaveConfig(save_interval=1))
    assert trial.tensor_names() == [
        "CrossEntropyLoss_output_0", "MLP_fc1.bias", "MLP_fc1.weight", "MLP_fc2.bias", "MLP_fc2.weight",
        "gradient/MLP_fc1.bias", "gradient/MLP_fc1.weight", "gradient/MLP_fc2.bias", "gradient/MLP_fc2.weight",
    ]
    assert trial.tensor_names(collection="weights") == ["MLP_fc1.weight", "MLP_fc2.weight"]
    assert trial.tensor_names(collection="losses") == ["CrossEntropyLoss_output_0"]
    saved_losses = [float(trial.tensor("CrossEntropyLoss_output_0").value(s)) for s in range(4)]
    assert saved_losses == pytest.approx(losses, rel=1e-6)
    # weights are saved before the step's forward: step 3 holds what the 3rd optimizer step produced,
    # and the final weights equal step 3's minus one more update
    w3 = trial.tensor("MLP_fc2.weight").value(3)
    g3 = trial.tensor("gradient/MLP_fc2.weight").value(3)
    np.testing.assert_allclose(model.fc2.weight.detach().numpy(), w3 - 0.1 * g3, rtol=1e-5, atol=1e-6)


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
    trial, _, _ = run_mlp(out_dir, save_config=config)
    for name in trial.tensor_names():
        assert trial.tensor(name).steps() == expected, name


def test_collection_schedules_and_defaults(out_dir):
    torch.manual_seed(0)
    model, loss_fn = MLP(), nn.CrossEntropyLoss()
    hook = make_hook(out_dir, save_config=smd.SaveConfig(save_interval=3))
    hook.get_collection("gradients").save_config = smd.SaveConfig(save_steps=[2])
    hook.get_collection("losses").save_config = {smd.modes.TRAIN: smd.SaveConfigMode(save_interval=1)}
    hook.register_module(model)
    hook.register_loss(loss_fn)
    hook.set_mode(smd.modes.TRAIN)
    train(model, 7, loss_fn=loss_fn)
    hook.close()
    trial = smd.create_trial(out_dir)
    assert trial.tensor("MLP_fc1.weight").steps() == [0, 3, 6]
    assert trial.tensor("gradient/MLP_fc1.weight").steps() == [0, 2]
    assert trial.tensor("CrossEntropyLoss_output_0").steps() == list(range(7))


def test_default_hook_saves_losses_every_500_steps(out_dir):
    trial, _, _ = run_mlp(out_dir, steps=3, include_collections=None)
    assert trial.tensor_names() == ["CrossEntropyLoss_output_0"]
    assert trial.steps() == [0]


class _Xent(nn.Module):
    """A loss module whose class name does not contain "Loss" (the default pattern of the losses collection)."""

    def forward(self, logits, labels):
        return nn.functional.cross_entropy(logits, labels)


def test_a_registered_loss_is_saved_whatever_its_class_is_called(out_dir):
    torch.manual_seed(0)
    model, loss_fn = MLP(), _Xent()
    hook = make_hook(out_dir, save_config=smd.SaveConfig(save_interval=1), include_collections=["losses"])
    hook.register_module(model)
    hook.register_loss(loss_fn)
    losses = train(model, 3, loss_fn=loss_fn)
    hook.close()
    trial = smd.create_trial(out_dir)
    assert trial.tensor_names(collection="losses") == ["_Xent_output_0"]
    assert np.allclose([trial.tensor("_Xent_output_0").value(s) for s in range(3)], losses)


def test_train_and_eval_modes_no_grad(out_dir):
    torch.manual_seed(0)
    model, loss_fn = MLP(), nn.CrossEntropyLoss()
    cfg = smd.SaveConfig(mode_save_configs={smd.modes.TRAIN: smd.SaveConfigMode(save_interval=2),
                                            smd.modes.EVAL: smd.SaveConfigMode(save_interval=1)})
    hook = make_hook(out_dir, save_config=cfg)
    hook.register_module(model)
    hook.register_loss(loss_fn)
    x, y = mlp_data()
    for epoch in range(2):
        hook.set_mode(smd.modes.TRAIN)
        train(model, 4, loss_fn=loss_fn)
        hook.set_mode(smd.modes.EVAL)
        model.eval()
        with torch.no_grad():
            for _ in range(3):
                loss_fn(model(x), y)
        model.train()
    hook.close()
    trial = smd.create_trial(out_dir)
    assert trial.steps(smd.modes.TRAIN) == [0, 2, 4, 6]
    assert trial.steps(smd.modes.EVAL) == [0, 1, 2, 3, 4, 5]
    assert trial.tensor("gradient/MLP_fc1.weight").steps(smd.modes.EVAL) == []
    assert trial.tensor("CrossEntropyLoss_output_0").steps(smd.modes.EVAL) == [0, 1, 2, 3, 4, 5]
    assert trial.mode(4) == smd.modes.EVAL and trial.mode_step(4) == 0


def test_module_inputs_outputs_nested_and_reused_modules(out_dir):
    torch.manual_seed(0)
    model = CNN()
    hook = make_hook(out_dir, save_config=smd.SaveConfig(save_interval=1), include_collections=["acts", "losses"])
    hook.get_collection("acts").add_module_tensors(model.act, inputs=True, outputs=True)
    hook.get_collection("acts").add_module_tensors(model.features[3][0])  # nested Sequential
    hook.register_module(model)
    loss_fn = nn.CrossEntropyLoss()
    hook.register_loss(loss_fn)
    train(model, 3, data=cnn_data, loss_fn=loss_fn, unpack=lambda out: out[0])
    hook.close()
    trial = smd.create_trial(out_dir)
    names = trial.tensor_names(collection="acts")
    # the reused module's tensors continue their indices instead of overwriting each other
    assert names == ["act_input_0", "act_input_1", "act_output_0", "act_output_1", "features.3.0_output_0"]
    a_in1, a_out0 = trial.tensor("act_input_1").value(1), trial.tensor("act_output_0").value(1)
    np.testing.assert_array_equal(a_in1, a_out0)
    np.testing.assert_allclose(trial.tensor("act_output_1").value(1), np.tanh(a_out0), rtol=1e-6)
    assert trial.tensor("features.3.0_output_0").value(2).shape == (32, 8, 4, 4)


def test_dict_outputs_and_save_all(out_dir):
    torch.manual_seed(0)
    model = DictModel()
    hook = make_hook(out_dir, save_all=True, save_config=smd.SaveConfig(save_interval=1))
    hook.register_module(model)
    train(model, 2, unpack=lambda out: out["logits"])
    hook.close()
    trial = smd.create_trial(out_dir)
    names = trial.tensor_names()
    assert {"DictModel_output_0", "DictModel_output_1", "body.fc1_output_0", "DictModel_body.fc1.weight"} <= set(names)
    np.testing.assert_allclose(trial.tensor("DictModel_output_1").value(0).sum(axis=1), 1.0, rtol=1e-5)


def test_reductions_on_device_match_the_core_definition(out_dir):
    rc = smd.ReductionConfig(reductions=["min", "max", "mean", "std", "variance", "sum", "median"],
                             abs_reductions=["mean"], norms=["l1", "l2"], abs_norms=["l2"], save_raw_tensor=True,
                             save_shape=True)
    trial, _, _ = run_mlp(out_dir, steps=2, save_config=smd.SaveConfig(save_interval=1), reduction_config=rc)
    t = trial.tensor("MLP_fc1.weight")
    raw = t.value(1)
    stored = t.reduction_values(1)
    assert len(stored) == 11
    for (op, is_abs), value in stored.items():
        np.testing.assert_allclose(value, [compute_reduction(raw, op, is_abs)], rtol=1e-5, err_msg=op)
    assert t.shape(1) == (16, 10)
    # losses are never reduced
    assert trial.tensor("CrossEntropyLoss_output_0").reduction_values(1) == {}


def test_reductions_only_do_not_save_raw(out_dir):
    rc = smd.ReductionConfig(norms=["l2"], save_shape=True)
    trial, _, _ = run_mlp(out_dir, steps=2, save_config=smd.SaveConfig(save_interval=1), reduction_config=rc)
    with pytest.raises(TensorUnavailableForStep):
        trial.tensor("gradient/MLP_fc1.weight").value(0)
    assert trial.tensor("gradient/MLP_fc1.weight").shape(0) == (16, 10)
    assert trial.tensor("gradient/MLP_fc1.weight").reduction_value(0, "l2") > 0


def test_scalars_custom_tensors_and_record_tensor_value(out_dir):
    torch.manual_seed(0)
    model = MLP()
    hook = make_hook(out_dir, save_config=smd.SaveConfig(save_interval=2), include_collections=["losses"])
    hook.register_module(model)
    x, y = mlp_data()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(4):
        opt.zero_grad()
        out = model(x)
        loss = nn.functional.cross_entropy(out, y)
        hook.record_tensor_value("nll_loss", loss)
        hook.save_scalar("lr", 0.1)
        hook.save_tensor("logits_mean", out.mean(dim=0), collections_to_write="custom")
        loss.backward()
        opt.step()
    hook.close()
    trial = smd.create_trial(out_dir)
    assert trial.tensor("nll_loss_output_0").steps() == [0, 2]
    assert "nll_loss_output_0" in trial.tensor_names(collection="losses")
    assert trial.tensor("scalar/lr").steps() == [0, 1, 2, 3]
    assert trial.tensor("logits_mean").steps() == [0, 2]
    assert trial.tensor("logits_mean").value(0).shape == (3,)


def test_frozen_parameters(out_dir):
    torch.manual_seed(0)
    model = MLP()
    model.fc1.requires_grad_(False)
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    hook = make_hook(out_dir, save_config=smd.SaveConfig(save_interval=1))
    hook.register_module(model)
    train(model, 3, optimizer=opt)
    hook.close()
    assert not hook.disabled
    trial = smd.create_trial(out_dir)
    assert "gradient/MLP_fc1.weight" not in trial.tensor_names()
    assert trial.tensor("gradient/MLP_fc2.weight").steps() == [0, 1, 2]
    np.testing.assert_array_equal(trial.tensor("MLP_fc1.weight").value(0), trial.tensor("MLP_fc1.weight").value(2))


class _PlainNamed(nn.Module):
    """Parameters named as papers write them, not ``weight``/``bias``."""

    def __init__(self):
        super().__init__()
        self.W = nn.Parameter(torch.randn(8, 20) * 0.1)
        self.b_enc = nn.Parameter(torch.zeros(8))
        self.pos = nn.Parameter(torch.randn(1, 20) * 0.1)
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        return self.head(torch.relu((x + self.pos) @ self.W.t() + self.b_enc))


def test_parameters_named_neither_weight_nor_bias_are_weights_or_biases(out_dir):
    model = _PlainNamed()
    hook = make_hook(out_dir, save_config=smd.SaveConfig(save_interval=1))
    hook.register_module(model)
    initial = model.W.detach().clone().numpy()
    train(model, 2, data=lambda: (torch.randn(16, 20), torch.randint(0, 3, (16,))), loss_fn=nn.CrossEntropyLoss())
    hook.close()
    trial = smd.create_trial(out_dir)
    assert trial.tensor_names(collection="weights") == ["_PlainNamed_W", "_PlainNamed_head.weight", "_PlainNamed_pos"]
    assert trial.tensor_names(collection="biases") == ["_PlainNamed_b_enc", "_PlainNamed_head.bias"]
    np.testing.assert_array_equal(trial.tensor("_PlainNamed_W").value(0), initial)


def test_gradient_accumulation_counts_optimizer_steps(out_dir):
    torch.manual_seed(0)
    model, loss_fn = MLP(), nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    hook = make_hook(out_dir, save_config=smd.SaveConfig(save_interval=1))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    hook.register_optimizer(opt)
    x, y = mlp_data()
    accumulated = []
    for step in range(3):
        opt.zero_grad()
        for micro in range(4):
            loss_fn(model(x[micro * 16:(micro + 1) * 16]), y[micro * 16:(micro + 1) * 16]).backward()
        accumulated.append(model.fc1.weight.grad.clone().numpy())
        opt.step()
    hook.close()
    trial = smd.create_trial(out_dir)
    assert trial.steps() == [0, 1, 2]
    for step in range(3):
        np.testing.assert_allclose(trial.tensor("gradient/MLP_fc1.weight").value(step), accumulated[step], rtol=1e-6)
    # losses of every micro-batch are kept, with continuing indices
    assert trial.tensor_names(regex="CrossEntropyLoss_output") == [f"CrossEntropyLoss_output_{i}" for i in range(4)]


@pytest.mark.parametrize("scaled", [False, True], ids=["plain", "grad-scaler"])
def test_gradient_accumulation_without_registered_optimizer(out_dir, scaled):
    """Steps are forward calls; the optimizer steps every 4th. Gradients due at a step with no optimizer
    step are saved at the next optimizer step (the gradient it applies, unscaled), none skipped."""
    accumulate, interval, calls = 4, 5, 40
    torch.manual_seed(0)
    model, loss_fn = MLP(), nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0) if scaled else None
    hook = make_hook(out_dir, save_config=smd.SaveConfig(save_interval=interval), include_collections=["gradients"])
    hook.register_module(model)
    x, y = mlp_data()
    applied = {}
    for call in range(calls):
        batch = slice(call % 4 * 16, (call % 4 + 1) * 16)
        loss = loss_fn(model(x[batch]), y[batch]) / accumulate
        (scaler.scale(loss) if scaled else loss).backward()
        if (call + 1) % accumulate == 0:
            if scaled:
                scaler.unscale_(opt)
            applied[call] = model.fc1.weight.grad.clone().numpy()
            if scaled:
                scaler.step(opt)
                scaler.update()
            else:
                opt.step()
            opt.zero_grad()
    hook.close()
    assert not hook.disabled
    steps = smd.create_trial(out_dir).tensor("gradient/MLP_fc1.weight")
    # step 0 is saved from backward (no optimizer step has been seen yet); every later due step's
    # gradients at the first optimizer step at or after it
    due = range(interval, calls, interval)
    expected = sorted({min(s for s in applied if s >= d) for d in due if any(s >= d for s in applied)})
    assert steps.steps() == [0] + expected
    for step in expected:
        np.testing.assert_allclose(steps.value(step), applied[step], rtol=1e-6)


def test_optimizer_steps_after_evaluation_get_their_own_step(out_dir):
    """TRAIN, TRAIN, EVAL, EVAL, TRAIN with register_optimizer: the last TRAIN step is not merged into
    the EVAL step still open before it."""
    torch.manual_seed(0)
    model, loss_fn = MLP(), nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    hook = make_hook(out_dir, save_config=smd.SaveConfig(save_interval=1))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    hook.register_optimizer(opt)
    x, y = mlp_data()
    grads = []
    for mode in ("train", "train", "eval", "eval", "train"):
        if mode == "eval":
            hook.set_mode(smd.modes.EVAL)
            with torch.no_grad():
                loss_fn(model(x), y)
            continue
        hook.set_mode(smd.modes.TRAIN)
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        grads.append(model.fc1.weight.grad.clone().numpy())
        opt.step()
    hook.close()
    trial = smd.create_trial(out_dir)
    assert trial.steps(mode=smd.modes.TRAIN) == [0, 1, 2] and trial.steps(mode=smd.modes.EVAL) == [0, 1]
    assert trial.steps() == [0, 1, 2, 3, 4]
    np.testing.assert_allclose(trial.tensor("gradient/MLP_fc1.weight").value(2, mode=smd.modes.TRAIN), grads[2],
                               rtol=1e-6)


def _hook_counts(model, opt=None):
    counts = sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())
    counts += sum(len(p._backward_hooks or {}) for p in model.parameters())
    if opt is not None:
        counts += len(opt._optimizer_step_pre_hooks) + len(opt._optimizer_step_post_hooks)
    return counts


def test_remove_detaches_everything(out_dir):
    torch.manual_seed(0)
    model = MLP()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    before = _hook_counts(model, opt)
    hook = make_hook(out_dir, save_all=True, save_config=smd.SaveConfig(save_interval=1))
    hook.register_module(model)
    hook.register_optimizer(opt)
    train(model, 2, optimizer=opt)
    assert _hook_counts(model, opt) > before
    hook.remove()
    assert _hook_counts(model, opt) == before
    train(model, 2, optimizer=opt)  # training goes on without the hook
    hook.close()
    assert smd.create_trial(out_dir).steps() == [0, 1]


def test_data_parallel_uses_the_inner_model_names(out_dir):
    torch.manual_seed(0)
    model = nn.DataParallel(MLP())
    hook = make_hook(out_dir, save_config=smd.SaveConfig(save_interval=1))
    hook.register_module(model)
    train(model, 2)
    hook.close()
    assert "MLP_fc1.weight" in smd.create_trial(out_dir).tensor_names()


@pytest.mark.parametrize("dtype, stored", [(torch.float16, np.float16), (torch.bfloat16, np.float32)])
def test_mixed_precision(out_dir, dtype, stored):
    torch.manual_seed(0)
    model = MLP().to(dtype)
    hook = make_hook(out_dir, save_config=smd.SaveConfig(save_interval=1))
    hook.register_module(model)
    x, y = mlp_data()
    loss_fn = nn.CrossEntropyLoss()
    for _ in range(2):
        loss_fn(model(x.to(dtype)).float(), y).backward()
    hook.close()
    trial = smd.create_trial(out_dir)
    w = trial.tensor("MLP_fc1.weight").value(1)
    assert w.dtype == stored  # bfloat16 has no numpy dtype: documented widening to float32
    np.testing.assert_array_equal(w, model.fc1.weight.detach().float().numpy().astype(stored))


def test_json_configured_hook_and_use_smdebug(tmp_path, monkeypatch):
    cfg = {"LocalPath": str(tmp_path / "zcc"),
           "HookParameters": {"save_interval": "2"},
           "CollectionConfigurations": [{"CollectionName": "weights"},
                                        {"CollectionName": "gradients", "CollectionParameters": {"save_interval": "3"}}]}
    (tmp_path / "hook.json").write_text(json.dumps(cfg))
    monkeypatch.setenv("SMDEBUG_CONFIG_FILE_PATH", str(tmp_path / "hook.json"))
    monkeypatch.setenv("USE_SMDEBUG", "0")
    assert smd.get_hook(create_if_not_exists=True) is None
    monkeypatch.delenv("USE_SMDEBUG")
    hook = smd.get_hook(create_if_not_exists=True)
    assert isinstance(hook, smd.Hook) and smd.get_hook() is hook
    torch.manual_seed(0)
    model = MLP()
    hook.register_module(model)
    train(model, 7)
    hook.close()
    trial = smd.create_trial(str(tmp_path / "zcc"))
    assert trial.tensor("MLP_fc1.weight").steps() == [0, 2, 4, 6]
    assert trial.tensor("gradient/MLP_fc1.weight").steps() == [0, 3, 6]


def test_api_misuse_is_reported(out_dir):
    hook = make_hook(out_dir)
    with pytest.raises(SMDebugTypeError):
        hook.register_module("not a module")
    with pytest.raises(SMDebugTypeError):
        hook.register_loss(42)
    with pytest.raises(SMDebugTypeError):
        hook.register_optimizer(object())
    hook.close()


def _torch_hooks(model, loss_fn):
    from torch.optim import optimizer as torch_optimizer

    modules = [*model.modules(), loss_fn]
    return (sum(len(m._forward_hooks) + len(m._forward_pre_hooks) + len(m._backward_hooks) for m in modules)
            + sum(len(p._backward_hooks or {}) + len(getattr(p, "_post_accumulate_grad_hooks", None) or {})
                  for p in model.parameters())
            + len(torch_optimizer._global_optimizer_pre_hooks) + len(torch_optimizer._global_optimizer_post_hooks))


@pytest.mark.parametrize("depth", [2, 40])
def test_a_quiet_step_leaves_one_hook_whatever_the_number_of_modules(out_dir, depth):
    """On a step where nothing is due, PyTorch calls into the hook once (the model's forward pre-hook);
    module, parameter and optimizer hooks are there only on steps that save."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 8), *(m for _ in range(depth) for m in (nn.Linear(8, 8), nn.ReLU())),
                          nn.Linear(8, 3))
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    hook = smd.Hook(out_dir=out_dir, save_config=smd.SaveConfig(save_interval=3),
                    include_collections=["weights", "gradients", "losses", "relu_activations"])
    hook.register_module(model)
    hook.register_loss(loss_fn)
    before = _torch_hooks(model, loss_fn)
    x, y = mlp_data()
    during = []
    for _ in range(7):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        during.append(_torch_hooks(model, loss_fn) - before)  # mid-step: forward done, backward to come
        loss.backward()
        opt.step()
    hook.close()
    quiet = [during[s] for s in range(7) if s % 3]
    assert quiet == [0] * len(quiet)  # (the forward pre-hook is in `before`: it stays attached)
    saving = [during[s] for s in (0, 3, 6)]
    assert min(saving) >= depth + 1  # the ReLUs' forward hooks and the loss's, at least
    assert smd.create_trial(out_dir).steps() == [0, 3, 6]


class _TwoParts(nn.Module):
    """A container whose parts the loop calls one by one (a GAN's generator and critic): never called itself."""

    def __init__(self):
        super().__init__()
        self.g, self.d = nn.Linear(4, 4), nn.Linear(4, 1)


@pytest.fixture
def smdebug_warnings(caplog):
    """The ``smdebug`` logger's records (it does not propagate to the root logger caplog listens on)."""
    logger = logging.getLogger("smdebug")
    logger.addHandler(caplog.handler)
    caplog.set_level(logging.WARNING, logger="smdebug")
    yield caplog
    logger.removeHandler(caplog.handler)


def test_a_registered_model_never_called_is_said_at_close(tmp_path, smdebug_warnings):
    model = _TwoParts()
    hook = make_hook(str(tmp_path / "run"))
    hook.register_module(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        loss = model.d(model.g(torch.randn(8, 4))).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    hook.close()
    said = [r.getMessage() for r in smdebug_warnings.records if "never called" in r.getMessage()]
    assert len(said) == 1 and "_TwoParts" in said[0] and "Register the module" in said[0], smdebug_warnings.text


def test_a_model_that_was_called_is_not_said_never_called(tmp_path, smdebug_warnings):
    run_mlp(str(tmp_path / "run"), steps=2)
    assert "never called" not in smdebug_warnings.text


@pytest.mark.parametrize("how", ["functional", "registered", "recorded"])
def test_a_run_that_saved_no_loss_says_why_at_close(tmp_path, smdebug_warnings, how):
    # (a functional loss runs no module: every loss rule found nothing, and nothing said why -- probe 17a F9)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    hook = smd.Hook.recommended(str(tmp_path / "run"))
    hook.register_module(model)
    loss_fn = nn.CrossEntropyLoss()
    if how == "registered":
        hook.register_loss(loss_fn)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
        loss = loss_fn(model(x), y) if how == "registered" else torch.nn.functional.cross_entropy(model(x), y)
        if how == "recorded":
            hook.record_tensor_value("loss", loss)
        opt.zero_grad()
        loss.backward()
        opt.step()
    hook.close()
    said = [r.getMessage() for r in smdebug_warnings.records if "no loss was saved" in r.getMessage()]
    if how == "functional":
        assert len(said) == 1 and "hook.register_loss(loss_fn)" in said[0], smdebug_warnings.text
    else:
        assert not said, said


def test_a_models_own_input_statistics_are_saved_with_the_normalisation_statistics(tmp_path):
    """Buffers a model registers to standardise its input in its forward (``mean``/``std``, ``mu``/``sd``) are
    saved beside BatchNorm's running statistics; other buffers (a mask, a 2-D table, an integer counter) are not."""

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mu", torch.full((4,), 100.0))
            self.register_buffer("sd", torch.full((4,), 50.0))
            self.register_buffer("mask", torch.ones(4))
            self.register_buffer("table_mean", torch.zeros(4, 4))
            self.register_buffer("count_scale", torch.zeros(4, dtype=torch.long))
            self.fc = nn.Linear(4, 2)

        def forward(self, x):
            return self.fc((x - self.mu) / self.sd * self.mask)

    model = Net()
    out = str(tmp_path / "run")
    hook = make_hook(out, include_collections=["normalization_statistics"], save_config=smd.SaveConfig(save_interval=1))
    hook.register_module(model)
    model(torch.randn(8, 4))
    hook.close()
    hook.remove()
    names = set(smd.create_trial(out).tensor_names(collection="normalization_statistics"))
    assert names == {"Net_mu", "Net_sd"}, names


def test_batchnorm_running_statistics_are_saved_only_when_asked(tmp_path):
    torch.manual_seed(0)
    model = nn.Sequential(nn.BatchNorm1d(4), nn.Linear(4, 2))
    for include, expected in ((["normalization_statistics"], True), (ALL, False)):
        out = str(tmp_path / str(expected))
        hook = make_hook(out, include_collections=include, save_config=smd.SaveConfig(save_interval=1))
        hook.register_module(model)
        for _ in range(2):
            model(torch.randn(8, 4) * 50 + 100)
        hook.close()
        hook.remove()
        names = smd.create_trial(out).tensor_names()
        assert ("Sequential_0.running_mean" in names and "Sequential_0.running_var" in names) == expected, names
        if expected:  # (read before each forward: the first save is the initial 0)
            value = smd.create_trial(out).tensor("Sequential_0.running_mean").value(1)
            assert np.all(value > 5), value
