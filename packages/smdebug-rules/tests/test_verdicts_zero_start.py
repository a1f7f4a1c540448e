"""Verdicts on healthy runs whose model starts at zero somewhere (a zero-initialised classifier head,
residual branches whose last normalisation scale starts at zero), on logits that start out inside [0, 1],
and on cross-entropy targets coded for another loss.

A layer that starts at zero sends no gradient back at the first step: the weights behind it get a gradient
of exactly zero then, and an update of zero, and learn normally from the next step. That is no vanishing
gradient and no stuck weight. Logits that start out small are no probabilities either: a model's logits
leave [0, 1] as it learns, a softmax's rows always sum to 1."""

import numpy as np
import pytest

from smdebug.rules import run_rules
from smdebug.rules.generic import ImproperOutput, VanishingGradient
from smdebug.rules.rule_invoker import invoke_rule

from test_data_rules import run

torch = pytest.importorskip("torch")
nn = torch.nn
pytest.importorskip("smdebug.pytorch")

from _torch_runs import classification_data, train_recommended  # noqa: E402

RULES = ["VanishingGradient", "WeightUpdateRatio", "ImproperOutput"]


def _train(out_dir, model, x, y, loss_fn, steps=40, lr=0.5):
    return train_recommended(out_dir, model, x, y, loss_fn, steps=steps, lr=lr)


def _statuses(out_dir):
    return {r.name: r for r in run_rules(str(out_dir), RULES).rules}


def test_a_zero_initialised_head_is_healthy(tmp_path):
    torch.manual_seed(0)
    x, y = classification_data(256)
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))
    nn.init.zeros_(model[2].weight)
    nn.init.zeros_(model[2].bias)
    losses = _train(tmp_path, model, x, y, nn.CrossEntropyLoss())
    assert np.mean(losses[-5:]) < 0.6 * losses[0]  # it learns
    results = _statuses(tmp_path)
    for name in RULES:
        assert results[name].status == "NoIssuesFound", (name, results[name].detail, results[name].findings)


class _Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(width, width), nn.Linear(width, width)
        self.norm = nn.BatchNorm1d(width)
        nn.init.zeros_(self.norm.weight)  # the residual branch starts as the identity (zero_init_residual)

    def forward(self, x):
        return torch.relu(x + self.norm(self.fc2(torch.relu(self.fc1(x)))))


def test_residual_branches_that_start_at_zero_are_healthy(tmp_path):
    torch.manual_seed(1)
    x, y = classification_data(256)
    model = nn.Sequential(nn.Linear(10, 16), _Block(16), _Block(16), nn.Linear(16, 3))
    losses = _train(tmp_path, model, x, y, nn.CrossEntropyLoss())
    assert np.mean(losses[-5:]) < 0.6 * losses[0]
    results = _statuses(tmp_path)
    for name in ("VanishingGradient", "WeightUpdateRatio"):
        assert results[name].status == "NoIssuesFound", (name, results[name].detail, results[name].findings)


def test_gradients_that_stay_zero_still_vanish(tmp_path):
    """Every ReLU dead from the start: the first layer's gradient is exactly zero at every step."""
    torch.manual_seed(2)
    x, y = classification_data(256)
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))
    nn.init.constant_(model[0].bias, -100.0)
    _train(tmp_path, model, x, y, nn.CrossEntropyLoss(), steps=10)
    result = _statuses(tmp_path)["VanishingGradient"]
    assert result.status == "IssuesFound"
    assert "mean |gradient| 0 < threshold" in result.findings[0].reason and "at 3 steps" in result.findings[0].reason


def test_a_tiny_gradient_vanishes_at_once_a_zero_one_after_patience(tmp_path):
    small = np.full((4, 4), 1e-9)
    zero = np.zeros((4, 4))
    assert invoke_rule(VanishingGradient(run(tmp_path / "tiny", [{"gradient/w": small}]))) == [0]
    zeros_then_learning = [{"gradient/w": zero}, {"gradient/w": zero}] + [{"gradient/w": np.ones((4, 4))}] * 3
    assert invoke_rule(VanishingGradient(run(tmp_path / "start", zeros_then_learning))) == []
    rule = VanishingGradient(run(tmp_path / "stays", [{"gradient/w": zero}] * 4))
    assert invoke_rule(rule) == [2, 3]
    assert invoke_rule(VanishingGradient(run(tmp_path / "stays1", [{"gradient/w": zero}] * 2), patience="1")) == [0, 1]


def test_logits_that_start_inside_0_1_are_judged_over_the_run(tmp_path):
    rng = np.random.default_rng(3)
    early = rng.uniform(0.2, 0.4, size=(64, 3))  # rows do not sum to 1: no softmax
    later = rng.normal(scale=3.0, size=(64, 3))
    labels = rng.integers(0, 3, 64)
    learning = [{"CrossEntropyLoss_input_0": early, "CrossEntropyLoss_input_1": labels}] * 6 + [
        {"CrossEntropyLoss_input_0": later, "CrossEntropyLoss_input_1": labels}] * 4
    assert invoke_rule(ImproperOutput(run(tmp_path / "learning", learning))) == []
    # a sigmoid before the loss: in [0, 1] at every step, found once the run has ended (at its last save)
    squashed = [{"CrossEntropyLoss_input_0": 1 / (1 + np.exp(-rng.normal(scale=3.0, size=(64, 3)))),
                 "CrossEntropyLoss_input_1": labels} for _ in range(5)]
    rule = ImproperOutput(run(tmp_path / "sigmoid", squashed))
    assert invoke_rule(rule) == [4]
    assert "never left [" in rule.last_reason and "over the run" in rule.last_reason
    # all zeros (a zero-initialised head) says nothing
    zeros = [{"CrossEntropyLoss_input_0": np.zeros((64, 3)), "CrossEntropyLoss_input_1": labels}] * 5
    assert invoke_rule(ImproperOutput(run(tmp_path / "zeros", zeros))) == []


@pytest.mark.parametrize("labels, fires", [("0/1", False), ("-1/+1", True)])
def test_binary_cross_entropy_targets_coded_minus_one_plus_one(tmp_path, labels, fires):
    torch.manual_seed(4)
    x = torch.randn(256, 6)
    y = (x[:, :1] > 0).float()
    if labels == "-1/+1":
        y = 2 * y - 1
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))
    losses = _train(tmp_path, model, x, y, nn.BCEWithLogitsLoss(), steps=20)
    if fires:
        assert min(losses) < 0  # what the user sees: a cross-entropy below zero
    result = _statuses(tmp_path)["ImproperOutput"]
    assert result.status == ("IssuesFound" if fires else "NoIssuesFound"), (result.detail, result.findings)
    if fires:
        assert "targets" in result.findings[0].reason and "code them 0/1" in result.findings[0].reason
