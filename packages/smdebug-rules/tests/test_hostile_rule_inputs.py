"""Values and names a damaged or forged run holds, which rules once spent minutes or gigabytes on (probe 17b):

* F8: tensor names of 100 KB -- the recurrent-layer pattern backtracked over the whole name from each of its
  positions, at every step (32 s for one name; minutes for a few);
* F5: a label of 3e9 (or 1e12) -- the class counts allocated a slot per id up to it (24 GB, then the machine
  killed the judgement); one of 100,000 made Confusion ask for a 75 GiB matrix;
* F6 and F7: a tree whose nodes link to the same child twice doubled TreeDepth's walk at every level (3.4 GB
  for 40 nodes); NaN node ids raised "cannot convert float NaN to integer" from deep inside.

Each is judged now in bounded time and memory, and said. Runs written by the real writer.
"""

from __future__ import annotations

import time

import numpy as np

from smdebug.rules import run_rules
from smdebug.rules.generic.activation_rules import recurrent_layers
from smdebug.rules.results import ERROR, NOT_APPLICABLE
from smdebug.trials import create_trial

from test_data_rules import write  # noqa: E402


def test_names_of_a_hundred_kilobytes_are_not_matched_for_minutes(tmp_path):
    huge = "Loss_" * 20000
    write(tmp_path / "run", [{"gradient/LSTM_rnn.weight_hh_l0": np.ones((4, 4), np.float32),
                              huge + "recurrent_kernel": np.float32(1.0), huge: np.float32(2.0)}])
    trial = create_trial(str(tmp_path / "run"))
    started = time.monotonic()
    assert recurrent_layers(trial) == ["LSTM_rnn"]
    assert time.monotonic() - started < 1.0


def test_a_label_of_a_trillion_is_no_class_id(tmp_path):
    labels = np.zeros(100, np.float64)
    labels[1::2] = 1e12  # (counted as classes, 7 TiB of slots)
    write(tmp_path / "run", [{"labels": labels, "predictions": np.zeros(100, np.float32)}] * 3,
          collections={"labels": ["^labels$"], "predictions": ["^predictions$"]})
    result = run_rules(str(tmp_path / "run"), rules=["ClassImbalance"], ended=True).rules[0]
    assert result.status == NOT_APPLICABLE and "no classifier's class ids" in result.detail, result


def test_a_confusion_matrix_of_a_hundred_thousand_classes_is_not_built(tmp_path):
    labels = np.arange(100, dtype=np.int64)
    labels[-1] = 100_000
    write(tmp_path / "run", [{"labels": labels, "predictions": labels}] * 3,
          collections={"labels": ["^labels$"], "predictions": ["^predictions$"]})
    result = run_rules(str(tmp_path / "run"), rules=["Confusion"], ended=True).rules[0]
    assert result.status == NOT_APPLICABLE and "is not built" in result.detail, result


def test_trees_linking_a_child_twice_are_walked_in_bounded_time(tmp_path):
    nodes = np.arange(40)
    # (every node links to the next one twice: 39 levels, each twice the last when duplicates are kept)
    links = np.array([f"0-{i + 1}" for i in range(39)] + [""])
    write(tmp_path / "run", [{"trees/Node": nodes, "trees/Yes": links, "trees/No": links}])
    started = time.monotonic()
    result = run_rules(str(tmp_path / "run"), rules=["TreeDepth"], ended=True).rules[0]
    assert time.monotonic() - started < 30
    assert result.findings and "depth 39" in result.findings[0].reason, result


def test_nan_node_ids_are_said_not_raised(tmp_path):
    write(tmp_path / "run", [{"trees/Node": np.arange(7)}, {"trees/Node": np.array([0.0, np.nan, 2.0])}])
    result = run_rules(str(tmp_path / "run"), rules=["TreeDepth"], ended=True).rules[0]
    assert result.status != ERROR, result
    assert "step 1 were not judged: trees/Node holds values that are no node ids" in (result.detail or ""), result
