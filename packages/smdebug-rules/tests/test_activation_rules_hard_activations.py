"""PyTorch's piecewise-linear activations are judged by the rule that knows how each fails, with its own bounds.

Hardswish is exactly 0, with no gradient, for every input at or below -3, so its units die like a ReLU's
(DeadRelu); between -3 and 0 it is negative but passes a gradient, so it is alive there. Hardtanh and
Hardsigmoid are flat outside [min_val, max_val] and [-3, 3] (SaturatedActivation). Mish is a smooth SiLU-like
unit. The hook put none of them in any collection, so both rules said "the hook found no such layers" on
models built of them (probe 14a x F4)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from _judging import judged  # noqa: E402
from _torch_runs import classification_data, train_torch  # noqa: E402
from smdebug.core.activations import activation_layers  # noqa: E402
from smdebug.trials import create_trial  # noqa: E402

COLLECTIONS = ("relu_activations", "tanh_activations", "sigmoid_activations", "silu_activations", "losses")


def run(tmp_path, activation, *, bias=None, gain=None):
    """An MLP 10-32-3 through ``activation``, trained 4 full-batch SGD steps on 128 rows: its first layer's
    biases set to ``bias`` and its weights scaled by ``gain`` where given (where the activation's inputs sit)."""
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(10, 32), activation, nn.Linear(32, 3))
    with torch.no_grad():
        if gain is not None:
            model[0].weight.mul_(gain)
        if bias is not None:
            model[0].bias.fill_(bias)
    return train_torch(tmp_path / "run", model, classification_data(), steps=4, lr=0.01,
                       include_collections=COLLECTIONS)


def status(path, rule):
    return judged(path, rule).status


def test_hardswish_units_below_minus_3_are_dead(tmp_path):
    # every input near -6: Hardswish outputs exactly 0 there and passes no gradient
    assert status(run(tmp_path, nn.Hardswish(), bias=-6.0, gain=0.1), "DeadRelu") == "IssuesFound"


def test_hardswish_units_between_minus_3_and_0_are_alive(tmp_path):
    # every input near -1: the outputs are negative, never 0, and the gradient flows
    assert status(run(tmp_path, nn.Hardswish(), bias=-1.0, gain=0.1), "DeadRelu") == "NoIssuesFound"


def test_hardtanh_judged_with_its_own_bounds(tmp_path):
    # inputs near 4: flat for a Hardtanh(-1, 1), far inside a smooth tanh's +-9.5
    result = judged(run(tmp_path, nn.Hardtanh(), bias=4.0), "SaturatedActivation")
    assert result.status == "IssuesFound", result
    assert "Hardtanh units" in result.findings[0].reason and "[-1, 1]" in result.findings[0].reason


def test_hardtanh_in_its_linear_range_is_not_saturated(tmp_path):
    assert status(run(tmp_path, nn.Hardtanh(-2.0, 2.0)), "SaturatedActivation") == "NoIssuesFound"


def test_hardsigmoid_judged_with_its_own_bounds(tmp_path):
    result = judged(run(tmp_path, nn.Hardsigmoid(), bias=5.0), "SaturatedActivation")
    assert result.status == "IssuesFound", result
    assert "Hardsigmoid units" in result.findings[0].reason and "[-3, 3]" in result.findings[0].reason


def test_mish_joins_silu_and_relu6_stays_a_relu(tmp_path):
    model = nn.Sequential(nn.Linear(10, 8), nn.Mish(), nn.Linear(8, 8), nn.ReLU6(), nn.Linear(8, 3))
    path = train_torch(tmp_path / "run", model, classification_data(), steps=2, include_collections=COLLECTIONS)
    layers = activation_layers(create_trial(path))
    assert [layer.type for layer in layers["silu_activations"]] == ["Mish"]
    assert [layer.type for layer in layers["relu_activations"]] == ["ReLU6"]
    assert layers["tanh_activations"] == []
