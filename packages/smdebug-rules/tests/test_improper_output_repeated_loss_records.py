"""ImproperOutput reads each loss's tensors once per step, however often the run's record of its losses lists the
loss (probe 14c F10).

A record (``_meta.losses`` of the collections file) listing the same loss thousands of times under other names,
from a buggy writer or an attacker, made the rule read and decode the same tensors once per entry at every step:
5,000 entries, 13 s for a run judged in 0.8 s; 20,000, 47 s. Now losses that read the same tensors and are
judged alike are judged once, and a record longer than any hook writes (smdebug.core.loss_inputs.MAX_LOSSES) is
ignored with a warning naming the file, as if the run had none (the loss is then found by its tensors' names).
The run is a real PyTorch run recorded with Hook.recommended; only its record is edited."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from smdebug.core.locations import collections_file_name
from smdebug.rules import run_rules
from smdebug.trials import create_trial

torch = pytest.importorskip("torch")
nn = torch.nn

from _torch_runs import classification_data, mlp, train_recommended  # noqa: E402

pytestmark = pytest.mark.usefixtures("torch_one_thread")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    torch.set_num_threads(1)
    path = tmp_path_factory.mktemp("losses") / "run"
    x, y = classification_data(n=256)
    train_recommended(path, mlp(), x, y, nn.CrossEntropyLoss(), steps=20)
    return str(path)


def _repeated(run: str, to: str, copies: int) -> str:
    """A copy of ``run`` whose record lists its loss ``copies`` times, each under another name."""
    shutil.copytree(run, to)
    path = os.path.join(to, collections_file_name("worker_0"))
    doc = json.load(open(path))
    (loss,) = doc["_meta"]["losses"]
    doc["_meta"]["losses"] = [dict(loss, name=f"loss{i}") for i in range(copies)]
    json.dump(doc, open(path, "w"))
    return to


def _judged(path: str):
    """ImproperOutput's result on the run at ``path``, and how many values it read."""
    trial = create_trial(path)
    with trial.read_log() as log:
        (result,) = run_rules(trial, ["ImproperOutput"]).rules
    assert result.error is None, result.error
    return result, log.values


@pytest.mark.parametrize("copies", [50, 1_000])  # (1,000: more than MAX_LOSSES, the record is ignored)
def test_a_loss_listed_many_times_is_read_once_per_step(run, tmp_path, copies):
    once, reads = _judged(run)
    assert once.steps_evaluated > 0
    many, reads_many = _judged(_repeated(run, str(tmp_path / "many"), copies))
    assert reads_many == reads  # (50 copies: 50 times as many reads)
    assert (many.status, many.steps_evaluated, many.findings_total) == (
        once.status, once.steps_evaluated, once.findings_total)
