"""A followed run judged as the same finished run is judged afterwards (probe 12c M1, N2).

Rules judge some tests once training has ended, at the last saves (ClassImbalance's misprediction test at the last
labels, SlowConvergence at the loss's last save). A follower evaluates those steps while the run still trains --
the end marker comes after them -- so such a test was passed over for good: a live verdict said NoIssuesFound
(a collapsed classifier's mispredictions never judged) or NotEvaluated where the run judged afterwards fired.
Now, when a followed run ends, the rules that found nothing while it trained judge the finished run again.

The run is real (a PyTorch classifier collapsed by weight decay to predicting one class, recorded with
Hook.recommended); it is followed while its end marker is away, then the marker comes back, as a job ends."""

from __future__ import annotations

import os
import shutil
import threading
import time

import pytest

from smdebug.core.locations import END_OF_JOB_FILE
from smdebug.rules import run_rules
from smdebug.rules.results import ISSUES
from smdebug.trials import create_trial

torch = pytest.importorskip("torch")
nn = torch.nn

from _torch_runs import classification_data, mlp, train_recommended  # noqa: E402

RULES = ["ClassImbalance", "SlowConvergence", "VanishingGradient"]


@pytest.fixture(scope="module")
def collapsed(tmp_path_factory):
    torch.set_num_threads(1)
    path = tmp_path_factory.mktemp("collapsed") / "run"
    x, y = classification_data(n=512, classes=3)
    model = mlp(classes=3, hidden=32)
    opt = torch.optim.SGD(model.parameters(), lr=0.5, weight_decay=1.0)  # every weight pulled to 0 at once
    train_recommended(path, model, x, y, nn.CrossEntropyLoss(), steps=120, optimizer=opt, batch_size=64)
    return str(path)


def test_a_follower_that_judged_the_last_steps_before_the_end_gives_the_finished_runs_verdict(collapsed, tmp_path,
                                                                                             monkeypatch):
    monkeypatch.setenv("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")
    afterwards = {r.name: r for r in run_rules(collapsed, RULES).rules}
    assert afterwards["ClassImbalance"].status == ISSUES, afterwards["ClassImbalance"].detail

    live = tmp_path / "live"
    shutil.copytree(collapsed, live)
    marker = live / END_OF_JOB_FILE
    kept = marker.read_bytes()
    marker.unlink()  # still training, as far as a reader can tell
    last = create_trial(collapsed).steps()[-1]

    def end_the_job_once_every_step_was_judged(result):
        if result.last_step == last and not marker.exists():
            threading.Timer(0.5, lambda: marker.write_bytes(kept)).start()

    events = []
    followed = run_rules(str(live), RULES, follow=True, poll_interval=0.1, timeout=120,
                         on_progress=end_the_job_once_every_step_was_judged,
                         on_event=lambda event, rule, finding: events.append((event, rule.name)))
    assert followed.training_ended
    for r in followed.rules:
        after = afterwards[r.name]
        assert (r.status, r.findings_total) == (after.status, after.findings_total), (r.name, r.status, r.detail)
    assert "mispredicts class" in followed.rules[0].findings[0].reason
    # each rule's verdict is said once, and the finding of the second judgement reaches the caller
    assert sorted(name for event, name in events if event == "done") == sorted(RULES)
    assert ("finding", "ClassImbalance") in events
