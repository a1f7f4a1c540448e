"""ClassImbalance on runs whose class mix changes over time (probe 15b F2). Hook.recommended saves labels at steps
0-9 each and then ever further apart, so the class counts summed over the saves hold most of their labels in the
first ten batches: a curriculum that starts with two classes and adds the others later was "class 1 has 194
samples, class 5 5", and a sampler that balances the classes after a skewed warm-up read as the skew. A class
introduced late is the data changing, and the counts weighted by the training steps each save stands for are the
mix the model trained on: neither is an imbalance. A set that is imbalanced throughout (shuffled) is still found,
live and after the run."""

from __future__ import annotations

import os
import shutil

import pytest

from smdebug.core.locations import END_OF_JOB_FILE
from smdebug.rules.results import IN_PROGRESS, ISSUES, NO_ISSUES

torch = pytest.importorskip("torch")
nn = torch.nn

from _torch_runs import mlp  # noqa: E402
from _judging import judged  # noqa: E402
import smdebug.pytorch as smd  # noqa: E402

pytestmark = pytest.mark.usefixtures("torch_one_thread")

CLASSES = 6
BATCH = 64


def _batch(classes_at_step, step: int, g):
    """A batch of learnable data: the class shows in its own feature; the labels drawn by ``classes_at_step``."""
    y = classes_at_step(step, g)
    x = torch.randn(BATCH, 10, generator=g)
    x[torch.arange(BATCH), y] += 3.0
    return x, y


def _train(out, classes_at_step, steps=330):
    g = torch.Generator().manual_seed(0)
    model = mlp(classes=CLASSES, hidden=32)
    loss_fn = nn.CrossEntropyLoss()
    hook = smd.Hook.recommended(str(out))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(steps):
        x, y = _batch(classes_at_step, step, g)
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    hook.close()
    return str(out)


def _live_copy(run, where):
    """The run as a follower saw it while it trained: the same files, without the end marker."""
    shutil.copytree(run, where)
    os.remove(os.path.join(where, END_OF_JOB_FILE))
    return where


def _curriculum(step, g):
    # two classes for the first 30 steps, four until step 100, then all six: balanced at every stage
    allowed = 2 if step < 30 else 4 if step < 100 else CLASSES
    return torch.randint(0, allowed, (BATCH,), generator=g)


def test_a_curriculum_adding_classes_is_no_imbalance(tmp_path):
    run = _train(tmp_path / "run", _curriculum)
    r = judged(run, "ClassImbalance")
    assert r.status == NO_ISSUES, (r.status, [f.reason for f in r.findings])
    assert "first showed at step" in r.detail and "a class introduced over the run" in r.detail, r.detail
    live = judged(_live_copy(run, str(tmp_path / "live")), "ClassImbalance")
    assert live.status == IN_PROGRESS and not live.findings, (live.status, [f.reason for f in live.findings])


def _balanced_after_warm_up(step, g):
    # a warm-up on the data as it comes (every class present, but 1 and 2 once each in a batch of class 0), then a
    # sampler that balances the classes
    if step < 11:
        y = torch.zeros(BATCH, dtype=torch.long)
        y[:CLASSES - 1] = torch.arange(1, CLASSES)
        return y
    return torch.randint(0, CLASSES, (BATCH,), generator=g)


def test_a_sampler_balanced_after_warm_up_is_no_imbalance(tmp_path):
    run = _train(tmp_path / "run", _balanced_after_warm_up, steps=100)
    r = judged(run, "ClassImbalance")
    assert r.status == NO_ISSUES, (r.status, [f.reason for f in r.findings])
    assert "weighted by the training steps each save stands for" in r.detail, r.detail


def _imbalanced(step, g):
    # shuffled throughout: class 0 fifty times as frequent as each of the others
    p = torch.tensor([50.0] + [1.0] * (CLASSES - 1))
    return torch.multinomial(p, BATCH, replacement=True, generator=g)


def test_an_imbalanced_set_is_still_found_live_and_after_the_run(tmp_path):
    run = _train(tmp_path / "run", _imbalanced)
    r = judged(run, "ClassImbalance")
    assert r.status == ISSUES and "ratio" in r.findings[0].reason, (r.status, r.detail)
    live = judged(_live_copy(run, str(tmp_path / "live")), "ClassImbalance")
    assert live.findings and "ratio" in live.findings[0].reason, (live.status, live.detail)


def _first_epoch_in_order(step, g):
    # a first epoch in the data set's order (sorted by class: 3 batches of each class in turn), then shuffled
    if step < 3 * CLASSES:
        return torch.full((BATCH,), step // 3, dtype=torch.long)
    return torch.randint(0, CLASSES, (BATCH,), generator=g)


def test_a_first_epoch_in_class_order_is_no_imbalance_of_the_finished_run(tmp_path):
    run = _train(tmp_path / "run", _first_epoch_in_order)
    r = judged(run, "ClassImbalance")
    assert r.status == NO_ISSUES, (r.status, [f.reason for f in r.findings])


def test_the_chance_allowance_stays_cheap_over_millions_of_weighted_labels(monkeypatch):
    """The weighted counts of a long run reach millions of labels' worth, judged at every step: the exact binomial
    bound (a log-factorial per label, bisected) is taken as normal above 20,000 labels, where both agree."""
    from smdebug.rules.generic import classification_rules as rules

    exact = {}
    for most, least in ((15000, 5001), (18100, 1901)):
        monkeypatch.setattr(rules, "_EXACT_LABELS", 10 ** 9)
        exact[most, least] = rules._ratio_upper_bound(most, least)
        monkeypatch.setattr(rules, "_EXACT_LABELS", 20000)
        assert abs(rules._ratio_upper_bound(most, least) / exact[most, least] - 1) < 0.002
    assert 3.0 < rules._ratio_upper_bound(3_000_000, 1_000_000) < 3.01  # (4 million labels: no list of them)
