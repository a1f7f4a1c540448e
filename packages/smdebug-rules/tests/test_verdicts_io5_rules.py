"""Verdicts on run kinds that fooled WeightUpdateRatio, DeadRelu, SaturatedActivation and ImproperOutput (probe 5):

* gradient accumulation and models called several times per optimizer step: bit-identical weights between two
  saves are no optimizer step between them, not a tiny step (a weight that never moves still fires);
* batches of one sample: DeadRelu and SaturatedActivation pool consecutive saves until a share of "< 1%" means
  something (100 samples at the default), NotEvaluated with the count before that;
* recurrent cells: SaturatedActivation says their tanh/sigmoid are inside the cell, not that there are none;
* ImproperOutput: CTCLoss takes log-probabilities, a regression loss broadcasting (N, 1) against (N,), sigmoid
  rows given to a categorical cross-entropy (not a binary one).

Real tiny PyTorch runs under ``Hook.recommended`` (what users run) and hand-made runs, read by ``run_rules``.
"""

import numpy as np
import pytest

from smdebug import SaveConfig
from smdebug.core import loss_inputs
from smdebug.rules import run_rules
from smdebug.rules.results import ISSUES, NO_ISSUES, NOT_APPLICABLE, NOT_EVALUATED

from _hooks import NumpyHook

torch = pytest.importorskip("torch")
nn = torch.nn
smd = pytest.importorskip("smdebug.pytorch")


pytestmark = pytest.mark.usefixtures("torch_one_thread")


def _rule(path, rule, params=None):
    return run_rules(str(path), [(rule, dict(params or {}))]).rules[0]


def _data(n=256, features=8, classes=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=g)
    y = ((x[:, 0] > 0).long() + (x[:, 1] > 0).long()).clamp(max=classes - 1)
    return x, y


def _mlp(features=8, hidden=16, classes=3, seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, classes))


# --------------------------------------------------------------------------------------------------------
# WeightUpdateRatio: no optimizer step between two saves
# --------------------------------------------------------------------------------------------------------
def _accumulating(out_dir, accumulate=4, steps=60, lr=0.1, step_optimizer=True, copy=False, batch=16):
    """Gradient accumulation: the optimizer steps every ``accumulate`` forward calls (hook steps)."""
    x, y = _data()
    model = _mlp()
    hook = smd.Hook.recommended(str(out_dir))
    hook.register_module(model)
    loss_fn = nn.CrossEntropyLoss()
    hook.register_loss(loss_fn)
    params = (_mlp(seed=1) if copy else model).parameters()
    opt = torch.optim.SGD(params, lr=lr)
    losses = []
    for i in range(steps * accumulate):
        start = (i * batch) % len(x)
        loss = loss_fn(model(x[start:start + batch]), y[start:start + batch]) / accumulate
        loss.backward()
        losses.append(loss.item() * accumulate)
        if (i + 1) % accumulate == 0:
            if step_optimizer:
                opt.step()
            opt.zero_grad()
            model.zero_grad()
    hook.close()
    return losses


def test_gradient_accumulation_is_no_tiny_update(tmp_path):
    losses = _accumulating(tmp_path / "accum")
    assert np.mean(losses[-20:]) < 0.8 * np.mean(losses[:20])  # it learns
    r = _rule(tmp_path / "accum", "WeightUpdateRatio")
    assert r.status == NO_ISSUES, (r.detail, r.findings)


def test_a_model_called_twice_per_update_is_no_tiny_update(tmp_path):
    # siamese: the registered model runs on both views before one optimizer step
    x, _ = _data()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    hook = smd.Hook.recommended(str(tmp_path))
    hook.register_module(model)
    loss_fn = nn.CosineEmbeddingLoss()
    hook.register_loss(loss_fn)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(1)
    for step in range(80):
        a = x[(step * 16) % 256:(step * 16) % 256 + 16]
        b = a + 0.1 * torch.randn(a.shape, generator=g)
        opt.zero_grad()
        loss_fn(model(a), model(b), torch.ones(len(a))).backward()
        opt.step()
    hook.close()
    r = _rule(tmp_path, "WeightUpdateRatio")
    assert r.status == NO_ISSUES, (r.detail, r.findings)


@pytest.mark.parametrize("how", ["no optimizer step", "optimizer over a copy", "lr 1e-12"])
def test_weights_that_never_move_still_fire_under_accumulation(tmp_path, how):
    _accumulating(tmp_path, steps=30, step_optimizer=how != "no optimizer step", copy=how == "optimizer over a copy",
                  lr=1e-12 if how == "lr 1e-12" else 0.1)
    r = _rule(tmp_path, "WeightUpdateRatio")
    assert r.status == ISSUES, (r.detail, r.findings)
    assert "< small_threshold" in r.findings[0].reason


def _weights(path, values):
    hook = NumpyHook(out_dir=str(path), save_config=SaveConfig(save_interval=1), include_collections=["weights"])
    for v in values:
        hook.begin_step()
        hook.record("w", np.asarray(v, np.float64))
        hook.end_step()
    hook.close()
    return str(path)


def test_a_weight_that_stops_moving_for_good_still_fires(tmp_path):
    # accumulation of 2 (identical pairs), then no step at all from step 8 on: the last stretch is longer than
    # the run's period between updates
    w = [1.0, 1.0, 2.0, 2.0, 3.0, 3.0, 4.0, 4.0] + [5.0] * 8
    r = _rule(_weights(tmp_path / "stops", w), "WeightUpdateRatio")
    assert r.status == ISSUES and [f.step for f in r.findings][0] == 9, (r.detail, r.findings)
    # the same period to the end: quiet
    r = _rule(_weights(tmp_path / "period", [1.0, 1.0, 2.0, 2.0, 3.0, 3.0, 4.0, 4.0]), "WeightUpdateRatio")
    assert r.status == NO_ISSUES, (r.detail, r.findings)
    # tiny, non-zero updates at every save: still fire
    r = _rule(_weights(tmp_path / "tiny", [1.0 + 1e-9 * i for i in range(6)]), "WeightUpdateRatio")
    assert r.status == ISSUES, (r.detail, r.findings)


# --------------------------------------------------------------------------------------------------------
# DeadRelu / SaturatedActivation: enough samples
# --------------------------------------------------------------------------------------------------------
def test_batch_of_one_is_not_judged_sample_by_sample(tmp_path):
    x, y = _data()
    model = _mlp()
    hook = smd.Hook.recommended(str(tmp_path))
    hook.register_module(model)
    loss_fn = nn.CrossEntropyLoss()
    hook.register_loss(loss_fn)
    opt = torch.optim.SGD(model.parameters(), lr=0.02)
    for step in range(120):
        opt.zero_grad()
        loss_fn(model(x[step:step + 1]), y[step:step + 1]).backward()
        opt.step()
    hook.close()
    r = _rule(tmp_path, "DeadRelu")
    assert r.status == NOT_EVALUATED, (r.detail, r.findings)
    # the saves of 1 sample each (Hook.recommended's schedule over 120 steps) never hold 100
    assert "needs at least 100 samples" in r.detail and "1_output_0 held 14 in 14 consecutive saves" in r.detail


def _activations(path, name, batches):
    hook = NumpyHook(out_dir=str(path), save_config=SaveConfig(save_interval=1), include_regex=[".*"])
    for b in batches:
        hook.begin_step()
        hook.record(name, np.asarray(b, np.float32))
        hook.end_step()
    hook.close()
    return str(path)


def test_dead_relu_pools_small_batches_until_100_samples(tmp_path):
    # 25 samples per save; units 0-6 of 10 never active: judged once 4 saves hold 100 samples
    batch = np.zeros((25, 10), np.float32)
    batch[:, 7:] = 1.0
    r = _rule(_activations(tmp_path / "dead", "layer0_relu_output_0", [batch] * 6), "DeadRelu")
    assert r.status == ISSUES and r.findings[0].step == 3, (r.detail, r.findings)
    assert "of 100 samples (the 4 saves of steps 0-3)" in r.findings[0].reason
    # a healthy sparse layer: each unit on in 1 of 25 samples (a different one per save): quiet
    sparse = np.zeros((25, 10), np.float32)
    sparse[np.arange(10) * 2, np.arange(10)] = 1.0
    r = _rule(_activations(tmp_path / "sparse", "layer0_relu_output_0", [sparse] * 6), "DeadRelu")
    assert r.status == NO_ISSUES, (r.detail, r.findings)
    # never 100 samples: NotEvaluated, saying what was seen and what is needed
    r = _rule(_activations(tmp_path / "few", "layer0_relu_output_0", [batch[:1]] * 5), "DeadRelu")
    assert r.status == NOT_EVALUATED and "needs at least 100 samples" in r.detail and "held 5 in 5" in r.detail


def test_saturated_activation_pools_small_batches(tmp_path):
    sat = np.full((10, 4), 20.0, np.float32)
    r = _rule(_activations(tmp_path / "sat", "layer0_tanh_input_0", [sat] * 12), "SaturatedActivation")
    assert r.status == ISSUES and r.findings[0].step == 9, (r.detail, r.findings)
    r = _rule(_activations(tmp_path / "few", "layer0_tanh_input_0", [sat[:1]] * 3), "SaturatedActivation")
    assert r.status == NOT_EVALUATED and "held 3 in 3" in r.detail, r.detail


def test_recurrent_cells_are_named_not_denied(tmp_path):
    torch.manual_seed(0)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.gru = nn.GRU(4, 8, batch_first=True)
            self.out = nn.Linear(8, 2)

        def forward(self, x):
            return self.out(self.gru(x)[0][:, -1])

    model, loss_fn = Net(), nn.CrossEntropyLoss()
    hook = smd.Hook.recommended(str(tmp_path))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(0)
    for _ in range(12):
        x = torch.randn(32, 5, 4, generator=g)
        opt.zero_grad()
        loss_fn(model(x), (x[:, :, 0].sum(1) > 0).long()).backward()
        opt.step()
    hook.close()
    r = _rule(tmp_path, "SaturatedActivation")
    assert r.status == NOT_APPLICABLE and "inside recurrent cells (Net_gru)" in r.detail, r.detail
    assert "no layers of the types" not in r.detail


# --------------------------------------------------------------------------------------------------------
# ImproperOutput
# --------------------------------------------------------------------------------------------------------
class _CTCNet(nn.Module):
    def __init__(self, log_softmax=True):
        super().__init__()
        torch.manual_seed(0)
        self.rnn = nn.GRU(6, 16)
        self.out = nn.Linear(16, 5)
        self.log_softmax = log_softmax

    def forward(self, x):  # (T, N, F) -> (T, N, C)
        z = self.out(self.rnn(x)[0])
        return z.log_softmax(-1) if self.log_softmax else z


def _ctc_run(out_dir, log_softmax):
    model, loss_fn = _CTCNet(log_softmax), nn.CTCLoss(zero_infinity=True)
    hook = smd.Hook.recommended(str(out_dir))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(0)
    for _ in range(15):
        x = torch.randn(12, 8, 6, generator=g)
        targets = torch.randint(1, 5, (8, 3), generator=g)
        opt.zero_grad()
        loss_fn(model(x), targets, torch.full((8,), 12), torch.full((8,), 3)).backward()
        opt.step()
    hook.close()
    return str(out_dir)


def test_ctc_loss_is_judged_as_taking_log_probabilities(tmp_path):
    r = _rule(_ctc_run(tmp_path / "ok", True), "ImproperOutput")
    assert r.status == NO_ISSUES, (r.detail, r.findings)
    r = _rule(_ctc_run(tmp_path / "raw", False), "ImproperOutput")
    assert r.status == ISSUES and "expects log-probabilities" in r.findings[0].reason, (r.detail, r.findings)


def _regression_run(out_dir, squeeze_target):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(256, 5, generator=g)
    y = x @ torch.tensor([1.0, -2.0, 0.5, 0.0, 3.0]) + 0.1 * torch.randn(256, generator=g)
    torch.manual_seed(0)
    model, loss_fn = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 1)), nn.MSELoss()
    hook = smd.Hook.recommended(str(out_dir))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(20):
        xb, yb = x[(step * 32) % 256:][:32], y[(step * 32) % 256:][:32]
        opt.zero_grad()
        with pytest.warns(UserWarning) if squeeze_target else _nothing():
            loss = loss_fn(model(xb), yb if squeeze_target else yb[:, None])
        loss.backward()
        opt.step()
    hook.close()
    return str(out_dir)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_regression_loss_broadcasting_output_against_targets_fires(tmp_path):
    r = _rule(_regression_run(tmp_path / "broadcast", True), "ImproperOutput")
    assert r.status == ISSUES, (r.detail, r.findings)
    assert "of shape (32, 1) with targets" in r.findings[0].reason and "(32, 32)" in r.findings[0].reason
    r = _rule(_regression_run(tmp_path / "ok", False), "ImproperOutput")
    assert r.status == NO_ISSUES, (r.detail, r.findings)


def _keras_like(path, loss_type, predictions, labels):
    """A run as the Keras hook writes it: ``predictions`` and ``labels`` under a loss record of ``loss_type``
    that expects probabilities (from_logits=False)."""
    hook = NumpyHook(out_dir=str(path), save_config=SaveConfig(save_interval=1), include_regex=[".*"])
    loss_inputs.add_loss(hook, loss_inputs.LossInputs("loss", loss_type, loss_inputs.PROBABILITIES,
                                                      r"^predictions$", r"^labels$"))
    for p, y in zip(predictions, labels):
        hook.begin_step()
        hook.record("predictions", np.asarray(p, np.float32))
        hook.record("labels", np.asarray(y, np.float32))
        hook.end_step()
    hook.close()
    return str(path)


def test_sigmoid_rows_given_to_a_categorical_cross_entropy_fire(tmp_path):
    rng = np.random.default_rng(0)
    sig = [1 / (1 + np.exp(-rng.normal(0, 1, (32, 10)))) for _ in range(4)]  # rows sum to ~5
    soft = [np.exp(z) / np.exp(z).sum(1, keepdims=True) for z in (rng.normal(0, 2, (32, 10)) for _ in range(4))]
    onehot = [np.eye(10)[rng.integers(0, 10, 32)] for _ in range(4)]
    multilabel = [(rng.random((32, 10)) < 0.4).astype(np.float32) for _ in range(4)]
    for loss_type in ("categorical_crossentropy", "CategoricalCrossentropy"):
        r = _rule(_keras_like(tmp_path / loss_type, loss_type, sig, onehot), "ImproperOutput")
        assert r.status == ISSUES and "do not sum to 1" in r.findings[0].reason, (r.detail, r.findings)
        # (Keras 3 trains a fused sigmoid on its logits, as a softmax: what is wrong is the outputs, not the
        # training -- "the loss divides each row by its sum, silently" claimed the training was: probe 16b F4)
        assert "the model's outputs are no class probabilities (Keras 3 computes the loss from the logits" in \
            r.findings[0].reason, r.findings[0].reason
    r = _rule(_keras_like(tmp_path / "sparse", "sparse_categorical_crossentropy", sig,
                          [rng.integers(0, 10, 32) for _ in range(4)]), "ImproperOutput")
    assert r.status == ISSUES, (r.detail, r.findings)
    # a softmax: quiet; independent sigmoids under a binary cross-entropy (multi-label): quiet
    r = _rule(_keras_like(tmp_path / "softmax", "categorical_crossentropy", soft, onehot), "ImproperOutput")
    assert r.status == NO_ISSUES, (r.detail, r.findings)
    for loss_type in ("binary_crossentropy", "BinaryCrossentropy"):
        r = _rule(_keras_like(tmp_path / f"ml_{loss_type}", loss_type, sig, multilabel), "ImproperOutput")
        assert r.status == NO_ISSUES, (r.detail, r.findings)


def _relu_head_run(out_dir, head_activation):
    """Standardised regression targets (about half below 0) under a head with ``head_activation``."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(256, 5, generator=g)
    y = x @ torch.tensor([1.0, -2.0, 0.5, 0.0, 3.0])
    y = (y - y.mean()) / y.std()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 1), *([head_activation()] if head_activation
                                                                          else []))
    loss_fn = nn.MSELoss()
    hook = smd.Hook.recommended(str(out_dir))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(60):
        xb, yb = x[(step * 32) % 256:][:32], y[(step * 32) % 256:][:32]
        opt.zero_grad()
        loss_fn(model(xb), yb[:, None]).backward()
        opt.step()
    hook.close()
    return str(out_dir)


def test_a_regression_output_clamped_at_zero_fires(tmp_path):
    # a ReLU left on the output layer: the half of the targets below 0 is out of reach (the old finding was
    # DeadRelu's, on one batch of 16 where the output unit happened to be off)
    r = _rule(_relu_head_run(tmp_path / "relu", nn.ReLU), "ImproperOutput")
    assert r.status == ISSUES and "never went below 0" in r.findings[0].reason, (r.detail, r.findings)
    r = _rule(_relu_head_run(tmp_path / "linear", None), "ImproperOutput")
    assert r.status == NO_ISSUES, (r.detail, r.findings)
