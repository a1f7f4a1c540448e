"""Index documents that two readers would read two ways, and shapes no tensor can have (red team 9).

A JSON object may not name a key twice, but parsers accept it and disagree on which counts: Python's json
takes the last, the meta this reader takes from the text's start (to learn a step's mode without parsing
the payload) is the first, other tools (jq, a browser) differ again. An index file giving "meta" or
"tensor_payload" twice showed one step here and another to the next tool: it is damage. An index shape whose
sizes are each in range but multiply past 2**63 - 1 (no array has that many elements) was returned by
``tensor.shape()`` as the tensor's shape. Runs are written by the real writer; only the index text is
edited, as an attacker with write access to the folder would.
"""

from __future__ import annotations

import pytest

from _hostile import edit_index, index_path, write_simple_run
from smdebug.exceptions import IndexReaderException
from smdebug.trials import create_trial


def _append_to_document(run, step, text):
    path = index_path(run, step)
    with open(path) as f:
        doc = f.read().rstrip()
    assert doc.endswith("}")
    with open(path, "w") as f:
        f.write(doc[:-1] + ", " + text + "}")


@pytest.mark.parametrize("second", [
    '"tensor_payload": [{"tensorname": "w", "start_idx": 0, "length": 5}]',
    '"meta" : {"mode": "EVAL", "mode_step": 7}',
])
def test_an_index_giving_a_key_twice_is_damage(tmp_path, second):
    run = write_simple_run(tmp_path / "run", steps=range(3))
    _append_to_document(run, 1, second)
    with pytest.raises(IndexReaderException, match="more than once") as e:
        trial = create_trial(run)
        trial.tensor("w").value(1)
    assert "000000000001_worker_0.json" in str(e.value)
    trial = create_trial(run, skip_damaged=True)  # the step is set aside, the rest read
    assert trial.tensor("w").steps() == [0, 2]


def test_names_that_spell_the_keys_are_names(tmp_path):
    names = ("meta", "tensor_payload", "shape_payload")
    run = write_simple_run(tmp_path / "run", names=names, steps=range(2))
    trial = create_trial(run)
    assert sorted(trial.tensor_names()) == sorted(names)
    assert [float(trial.tensor(n).value(1)[0]) for n in names] == [1.0, 2.0, 3.0]


def test_a_shape_of_more_elements_than_any_tensor_is_refused(tmp_path):
    run = write_simple_run(tmp_path / "run", steps=range(3))

    def add_shape(doc):
        doc["shape_payload"] = [{"tensorname": "w", "originalname": "w", "shape": [1 << 32, 1 << 32, 1 << 32]}]

    edit_index(run, 1, add_shape)
    with pytest.raises(IndexReaderException, match="more elements than any tensor"):
        create_trial(run).tensor("w").shape(1)
    assert create_trial(run).tensor("w").shape(2) == (3,)  # (the other steps: shapes of their values)


def test_large_shapes_that_fit_still_read(tmp_path):
    run = write_simple_run(tmp_path / "run", steps=range(2))

    def add_shape(doc):
        doc["shape_payload"] = [{"tensorname": "w", "originalname": "w", "shape": [1 << 30, 1 << 30, 4]}]

    edit_index(run, 1, add_shape)
    assert create_trial(run).tensor("w").shape(1) == (1 << 30, 1 << 30, 4)


def test_a_meta_nested_deeper_than_json_parses_is_damage_not_a_crash(tmp_path):
    # The mode and step are read from the meta alone when it comes first (the payload is parsed later); a
    # meta holding arrays nested 100,000 deep made that read raise RecursionError out of create_trial.
    run = write_simple_run(tmp_path / "run", steps=range(3))
    path = index_path(run, 1)
    with open(path) as f:
        doc = f.read()
    assert doc.startswith('{"meta": {')
    with open(path, "w") as f:
        f.write(doc.replace('"meta": {', '"meta": {"x": ' + "[" * 100_000 + "]" * 100_000 + ", ", 1))
    with pytest.raises(IndexReaderException, match="Empty/Corrupt Index File") as e:
        create_trial(run)
    assert "000000000001_worker_0.json" in str(e.value)
    assert create_trial(run, skip_damaged=True).tensor("w").steps() == [0, 2]
