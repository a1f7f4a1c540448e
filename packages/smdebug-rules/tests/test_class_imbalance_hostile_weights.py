"""ClassImbalance on a run whose recorded class weights name their label tensor by a pattern that backtracks for
hours in ``re`` (``^(a+)+$`` against a label tensor named ``aaa...a!``, both written by whoever can write the run
folder; red team 10): the rule matches it through ``ClassWeights.applies_to``, in bounded time, and judges the
labels unweighted."""

from __future__ import annotations

import glob
import json
import subprocess
import sys

import numpy as np

from test_data_rules import write

CHILD = """
import sys
from smdebug.rules import run_rules
(result,) = run_rules(sys.argv[1], [("ClassImbalance", {"labels_regex": "a+!"})]).rules
print(result.status, result.error)
"""


def test_a_slow_class_weights_pattern_does_not_hang_the_rule(tmp_path):
    label = "a" * 40 + "!"
    rng = np.random.default_rng(0)
    steps = [{label: rng.integers(0, 2, 64), "predictions": rng.integers(0, 2, 64)} for _ in range(10)]
    write(tmp_path, steps, collections={"labels": [label.replace("!", "[!]")], "predictions": ["^predictions$"]})
    (path,) = glob.glob(str(tmp_path / "collections" / "*" / "*collections.json"))
    with open(path) as f:
        doc = json.load(f)
    doc.setdefault("_meta", {})["class_weights"] = [
        {"source": "CrossEntropyLoss(weight=...)", "weights": {"1": 19.0}, "targets": "^(a+)+$"}]
    with open(path, "w") as f:
        json.dump(doc, f)
    # (a child process with a timeout: a hang in re cannot be interrupted from this one)
    done = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    status, error = done.stdout.split()[-2:]
    assert status in ("NoIssuesFound", "IssuesFound") and error == "None", done.stdout
