"""The names of a model's input statistics, shared by the hooks (what to save) and the rules (what pairs up)."""

import pytest

from smdebug.core.statistic_names import MEAN, STD, VARIANCE, statistic_kind


@pytest.mark.parametrize("name, expected", [
    ("bn1.running_mean", (MEAN, "bn1.")),
    ("bn1.running_var", (VARIANCE, "bn1.")),
    ("batch_normalization/moving_variance", (VARIANCE, "batch_normalization/")),
    ("Net.mu", (MEAN, "Net.")),
    ("Net.sd", (STD, "Net.")),
    ("Net.input_mean", (MEAN, "Net.input_")),
    ("Net.input_Std", (STD, "Net.input_")),  # any case: the hook saved it, the rules must pair it
    ("offset", (MEAN, "")),
])
def test_statistics_are_named_with_the_prefix_they_share_with_their_pair(name, expected):
    assert statistic_kind(name) == expected


@pytest.mark.parametrize("name", ["Net.upscale", "Net.meaning", "Net.weight", "Net.shifted", "gradient_norm"])
def test_a_word_inside_another_word_is_no_statistic(name):
    assert statistic_kind(name) is None
