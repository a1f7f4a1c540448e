"""A run's record of its losses (``_meta.losses``) listing more losses than any hook records is ignored with one
warning naming the collections file (probe 14c F10).

Every rule that judges losses reads the tensors of each recorded loss at every step: the record of a real run
repeated 20,000 times made a 0.8 s judgement take 47 s. The run is written by the real writer; only its record
is then edited."""

from __future__ import annotations

import json
import logging

from smdebug.core import loss_inputs
from smdebug.trials import create_trial

from _hostile import collections_path, edit_collections, write_simple_run

RECORD = {"name": "CrossEntropyLoss", "type": "CrossEntropyLoss", "expects": "logits",
          "predictions": "^CrossEntropyLoss_input_0$", "targets": "^CrossEntropyLoss_input_1$"}


def _with_losses(root, count: int) -> str:
    run = write_simple_run(root)

    def record(doc):
        doc.setdefault("_meta", {})["losses"] = [dict(RECORD, name=f"L{i}") for i in range(count)]
    edit_collections(run, record)
    return run


def test_a_record_of_as_many_losses_as_a_hook_writes_is_read(tmp_path):
    run = _with_losses(tmp_path / "run", loss_inputs.MAX_LOSSES)
    assert len(loss_inputs.recorded_losses(create_trial(run))) == loss_inputs.MAX_LOSSES


def test_a_longer_record_is_ignored_saying_which_file(tmp_path, caplog):
    run = _with_losses(tmp_path / "run", 20_000)
    trial = create_trial(run)
    assert trial.collections_file == collections_path(run)
    with caplog.at_level(logging.WARNING, logger="smdebug"):
        for _ in range(3):  # (rules ask at every step: said once)
            assert loss_inputs.recorded_losses(trial) is None
    said = [r.getMessage() for r in caplog.records if "_meta.losses" in r.getMessage()]
    assert len(said) == 1, said
    assert collections_path(run) in said[0] and "20,000 losses" in said[0], said[0]
    assert json.load(open(collections_path(run)))["_meta"]["losses"][0] == dict(RECORD, name="L0")
