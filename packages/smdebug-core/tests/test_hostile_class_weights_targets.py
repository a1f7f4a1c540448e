"""The class weights a run records name their label tensors by a regex (``_meta.class_weights[].targets``)
taken from the run's collections file (red team 10).

ClassImbalance matched it with ``re.search(entry.targets, name)``: a pattern such as ``^(a+)+$`` against a label
tensor named ``aaa...a!`` (both written by whoever can write the run folder) backtracks for hours, the rule
hanging on the first step it weighs. :meth:`ClassWeights.applies_to` matches it in bounded time, as the run's
other patterns are (a collection's ``include_regex``, the loss records' ``targets``): a pattern too slow to
match is set aside with one warning and applies to nothing. The run is written by the real writer; only its
collections file is edited.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

from _hostile import SLOW_PATTERNS, edit_collections, write_simple_run

CHILD = """
import json, sys, time
from smdebug.core.class_weights import recorded_class_weights
from smdebug.trials import create_trial
trial = create_trial(sys.argv[1])
names = json.loads(sys.argv[2])
answers = []
for entry in recorded_class_weights(trial):
    answers.append([entry.applies_to(name) for name in names])
print(json.dumps(answers))
"""


def _run_with_class_weights(tmp_path, names, entries) -> str:
    run = write_simple_run(tmp_path / "run", names=names)

    def record(doc):
        doc["_meta"]["class_weights"] = entries

    edit_collections(run, record)
    return run


def test_a_slow_targets_pattern_is_matched_in_bounded_time(tmp_path):
    patterns = [pattern for pattern, _ in SLOW_PATTERNS]
    names = [name for _, name in SLOW_PATTERNS]
    run = _run_with_class_weights(tmp_path, names, [
        {"source": "CrossEntropyLoss(weight=...)", "weights": {"1": 19.0}, "targets": p} for p in patterns])
    started = time.monotonic()
    # (a child process: a hang in re cannot be interrupted from this one)
    done = subprocess.run([sys.executable, "-c", CHILD, run, json.dumps(names)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert time.monotonic() - started < 100
    answers = json.loads(done.stdout.splitlines()[-1])
    assert len(answers) == len(patterns)
    # each slow pattern, against the name it explodes on, applies to nothing
    assert not any(answers[i][i] for i in range(len(patterns)))


def test_targets_still_find_their_label_tensors(tmp_path):
    names = ["CrossEntropyLoss_input_1", "other_labels"]
    run = _run_with_class_weights(tmp_path, names, [
        {"source": "CrossEntropyLoss(weight=...)", "weights": {"1": 19.0}, "targets": "^CrossEntropyLoss_input_1$"},
        {"source": "class_weight of Model.fit", "weights": {"0": 2.0}, "targets": None},
        {"source": "BCEWithLogitsLoss(pos_weight=...)", "weights": {"1": 3.0}, "targets": "labels"}])
    done = subprocess.run([sys.executable, "-c", CHILD, run, json.dumps(names)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[-1]) == [[True, False], [True, True], [False, True]]
