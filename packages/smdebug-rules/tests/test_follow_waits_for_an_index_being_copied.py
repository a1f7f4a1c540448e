"""A followed run whose newest index file is still being copied is judged once the copy is complete (probe 14c
F5).

A run folder watched through a copy of a training folder (cp, scp, a network file system) shows a file being
copied cut short for a few seconds. ``rules run --follow`` gave up at once: exit 2, every rule an Error
"Empty/Corrupt Index File ... step=N", though the file was whole seconds later. Now the follower waits for it and
gives the finished run's verdicts. The run is a real PyTorch run recorded with Hook.recommended, followed while
its end marker is away and its last index file cut short; the copy completes, then the job ends."""

from __future__ import annotations

import shutil
import threading

import pytest

from smdebug.core.locations import END_OF_JOB_FILE, index_file_name
from smdebug.rules import run_rules
from smdebug.rules.results import ERROR

torch = pytest.importorskip("torch")
nn = torch.nn

from _torch_runs import classification_data, mlp, train_recommended  # noqa: E402

pytestmark = pytest.mark.usefixtures("torch_one_thread")

RULES = ["LossNotDecreasing", "ImproperOutput", "VanishingGradient"]
STEPS = 20


def test_a_followed_run_waits_for_its_index_being_copied(tmp_path):
    finished = tmp_path / "finished"
    x, y = classification_data(n=256)
    train_recommended(finished, mlp(), x, y, nn.CrossEntropyLoss(), steps=STEPS)
    afterwards = {r.name: r for r in run_rules(str(finished), RULES).rules}

    live = tmp_path / "live"
    shutil.copytree(finished, live)
    (live / END_OF_JOB_FILE).unlink()  # still training
    newest = live / index_file_name(STEPS - 1, "worker_0")
    whole = newest.read_bytes()
    newest.write_bytes(whole[: len(whole) // 3])  # halfway through its copy

    copied = []

    def copy_then_end(result):
        # every step before the one being copied was judged: the copy completes, then the job ends
        if result.last_step == STEPS - 2 and not copied:
            copied.append(threading.Timer(0.3, lambda: newest.write_bytes(whole)))
            copied[0].start()
        if result.last_step == STEPS - 1 and not (live / END_OF_JOB_FILE).exists():
            threading.Timer(0.3, lambda: (live / END_OF_JOB_FILE).write_bytes(b"")).start()

    followed = run_rules(str(live), RULES, follow=True, poll_interval=0.1, timeout=120, on_progress=copy_then_end)
    assert followed.training_ended and followed.last_step == STEPS - 1
    assert not [(r.name, r.error) for r in followed.rules if r.status == ERROR]
    for r in followed.rules:
        after = afterwards[r.name]
        assert (r.status, r.findings_total) == (after.status, after.findings_total), (r.name, r.status, r.detail)
