"""The first five built-in rules on real (tiny) PyTorch runs: a run that has the problem, a healthy one
where the rule must stay quiet."""

import numpy as np
import pytest
import torch
import torch.nn as nn

from smdebug.rules import run_rules

from _torch_runs import classification_data, mlp, train_torch


def findings(path, rule, **params):
    result = run_rules(str(path), [(rule, {k: str(v) for k, v in params.items()})])
    rule_result = result.rules[0]
    assert rule_result.error is None, rule_result.error
    return [f.step for f in rule_result.findings]


@pytest.fixture(scope="module")
def healthy(tmp_path_factory):
    """A ReLU MLP learning a learnable task with a sound learning rate."""
    return train_torch(tmp_path_factory.mktemp("healthy"), mlp(depth=2), classification_data(), steps=30, lr=0.1)


def test_vanishing_gradient_in_a_deep_sigmoid_network(tmp_path, healthy):
    # 12 sigmoid layers: the derivative is at most 1/4 per layer, so the first layer's gradient all but vanishes.
    deep = mlp(depth=12, hidden=16, activation=nn.Sigmoid)
    path = train_torch(tmp_path, deep, classification_data(), steps=10, lr=0.1)
    assert findings(path, "vanishing_gradient") == list(range(10))
    assert findings(healthy, "vanishing_gradient") == []


def test_exploding_tensor_with_a_huge_learning_rate(tmp_path, healthy):
    with np.errstate(all="ignore"):
        path = train_torch(tmp_path, mlp(depth=2), classification_data(scale=100.0), steps=15, lr=1e30)
    steps = findings(path, "exploding_tensor", collection_names="weights,gradients,losses")
    assert steps and steps[0] <= 3 and steps == list(range(steps[0], 15))  # once broken, broken for good
    assert findings(healthy, "exploding_tensor", collection_names="weights,gradients,losses") == []


def test_unchanged_tensor_on_a_frozen_layer(tmp_path, healthy):
    model = mlp(depth=2)
    for p in model.fc0.parameters():
        p.requires_grad_(False)
    path = train_torch(tmp_path, model, classification_data(), steps=8, lr=0.1)
    # fc0's weight never changes: found from the third saved step on (num_steps=3 values needed).
    assert findings(path, "unchanged_tensor", tensor_regex="fc0.weight") == list(range(2, 8))
    assert findings(path, "unchanged_tensor", tensor_regex="fc1.weight") == []
    assert findings(healthy, "unchanged_tensor", collection_names="weights") == []


def test_all_zero_gradients_of_a_layer_behind_dead_relus(tmp_path, healthy):
    model = mlp(depth=1)
    with torch.no_grad():
        model.fc0.bias.fill_(-100.0)  # every ReLU unit is off: nothing flows back into fc0
    path = train_torch(tmp_path, model, classification_data(), steps=5, lr=0.1)
    # a gradient is one batch's: all zeros at 3 saves in a row (patience), not at one
    assert findings(path, "all_zero", tensor_regex="gradient/.*fc0") == list(range(2, 5))
    assert findings(path, "all_zero", tensor_regex="gradient/.*fc0", patience=1) == list(range(5))
    assert findings(healthy, "all_zero", collection_names="gradients") == []


def test_tensor_variance_of_weights_blowing_up(tmp_path, healthy):
    with np.errstate(all="ignore"):
        path = train_torch(tmp_path, mlp(depth=1), classification_data(scale=50.0), steps=10, lr=50.0)
    steps = findings(path, "tensor_variance", collection_names="weights", max_threshold=100)
    assert steps and steps[0] >= 1 and steps == list(range(steps[0], steps[-1] + 1))
    assert findings(healthy, "tensor_variance", collection_names="weights", max_threshold=100, min_threshold=1e-6) == []
