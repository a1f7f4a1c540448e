"""Outside PyTorch (a Keras Input and an MXNet array are float32 unless told otherwise, ids included)
UnnormalizedInput takes a float table of non-negative whole numbers for ids only when it looks like ids: one
column, values that repeat as codes do, or columns that share one range. Counts and amounts of different things
in the thousands are measurements and are judged (probe 14a z F5: such a table was NotApplicable, "token or
category ids"). Runs written with the numpy hook (no framework recorded)."""

import numpy as np

from smdebug.rules.generic import UnnormalizedInput
from smdebug.rules.rule_invoker import invoke_rule

from test_data_rules import run

RNG = np.random.default_rng(0)


def judged(tmp_path, table):
    trial = run(tmp_path, [{"model_input_0": table}] * 2, collections={"inputs": "model_input"})
    rule = UnnormalizedInput(trial)
    return invoke_rule(rule), rule


def test_counts_of_different_things_are_measurements(tmp_path):
    counts = RNG.poisson([3.0, 40.0, 700.0, 12000.0], size=(64, 4)).astype(np.float32)
    fired, rule = judged(tmp_path, counts)
    assert fired == [0, 1] and "feature 3 has scale" in rule.last_reason, rule.last_reason


def test_one_column_of_large_ids_is_ids(tmp_path):
    users = RNG.integers(0, 100000, size=(64, 1)).astype(np.float32)
    fired, rule = judged(tmp_path, users)
    assert fired == [] and "token or category ids" in (rule.evaluation.not_applicable_reason() or ""), rule.evaluation.not_applicable_reason()


def test_repeating_codes_are_ids(tmp_path):
    # a padded token sequence: most values repeat (padding, frequent tokens)
    tokens = np.where(RNG.random((64, 20)) < 0.5, 0, RNG.zipf(1.5, size=(64, 20)) % 30000).astype(np.float32)
    fired, rule = judged(tmp_path, tokens)
    assert fired == [] and "token or category ids" in (rule.evaluation.not_applicable_reason() or ""), rule.evaluation.not_applicable_reason()
