"""The cost of judging a run of many tensor names grows with the names plus the steps, not their product
(probe 17b F11: every rule matched every name against its collections at every step, and sorted the run's
names at every call; 20,000 names saved at one step of a 30-step run took 21 s, 100,000 minutes).

Counted, not timed: how often a name is matched against a collection over a whole judgement of the
recommended rules. A run written by the real writer.
"""

from __future__ import annotations

import numpy as np

from smdebug.core.collection import Collection
from smdebug.rules import run_rules
from smdebug.rules.rule_configs import recommended_rules

from test_data_rules import write  # noqa: E402

EXTRA, STEPS = 3000, 30


def test_names_are_matched_a_bounded_number_of_times_whatever_the_steps(tmp_path, monkeypatch):
    steps = [{"gradient/w": np.full((2, 2), 1e-3, np.float32)} for _ in range(STEPS)]
    steps[3].update({f"extra/t{i}": np.float32(i) for i in range(EXTRA)})
    write(tmp_path / "run", steps)
    calls = [0]
    original = Collection.matches

    def counted(self, name):
        calls[0] += 1
        return original(self, name)

    monkeypatch.setattr(Collection, "matches", counted)
    rules = [name for name, _ in recommended_rules("pytorch")]
    result = run_rules(str(tmp_path / "run"), rules=rules, ended=True)
    assert result.rules and all(r.status != "Error" for r in result.rules), result
    # (each name against each collection a few times over the judgement; before, about once per rule per step)
    collections = len(result.rules) + 10
    assert calls[0] < 4 * EXTRA * collections, calls[0]
