"""Rules' tensor patterns run against names that come from the run: a hostile name (100,000 characters,
100,000 trailing digits) or a pattern that backtracks must cost seconds, not minutes, and never crash."""

import numpy as np
import pytest

from smdebug.rules import run_rules
from smdebug.rules.generic.selection import NamePattern, _search_form

from test_data_rules import write


def test_a_leading_dot_star_is_dropped_from_a_search():
    assert _search_form(".*relu_output") == "relu_output"
    assert _search_form(".*.*labels") == "labels"
    assert _search_form(".*tanh_input|.*sigmoid_input") == "tanh_input|.*sigmoid_input"
    for kept in (".*?x", ".*+x", "a.*b", "^.*x"):
        assert _search_form(kept) == kept
    pattern = NamePattern(".*relu_output")
    assert pattern.search("layer1_relu_output_0") and not pattern.search("layer1_tanh_output_0")


@pytest.mark.timeout(300)
def test_huge_names_cost_seconds_with_the_recommended_rules(tmp_path):
    long_name = "x" * 100_000
    digits = "labels_" + "1" * 100_000  # trailing digits: ClassImbalance orders its tensors by them
    write(tmp_path / "run", [{long_name: np.ones(4), digits: np.zeros(4), "relu_output_0": np.ones((8, 4))}] * 3)
    result = run_rules(str(tmp_path / "run"), ["DeadRelu", "SaturatedActivation", "ClassImbalance",
                                               "PoorWeightInitialization"])
    assert all(r.status != "Error" for r in result.rules), [(r.name, r.error) for r in result.rules]


@pytest.mark.timeout(300)
def test_a_rule_pattern_that_backtracks_is_set_aside(tmp_path):
    write(tmp_path / "run", [{"a" * 30 + "!": np.ones((8, 4)), "relu_output_0": np.ones((8, 4))}] * 2)
    result = run_rules(str(tmp_path / "run"), [("DeadRelu", {"tensor_regex": "(a|a)+$"}, None)])
    assert result.rules[0].status != "Error", result.rules[0].error
