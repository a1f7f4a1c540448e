"""ClassImbalance on a semi-supervised run (mean teacher: a few labelled samples per batch, the rest taught by a
consistency loss) saved with Hook.recommended: 15 TRAIN saves of about 9 labels each. Ten balanced classes give
counts such as 18 against 6 at the extremes; moving both counts two standard deviations at once allowed a ratio of
13 and the verdict was NotEvaluated ("save labels at more steps") -- the exact bound on the two classes' ratio
(binomial given their sum) is below 10, and the counts are judged. A labelled set that really is imbalanced still
fires, and so few labels of a set at the threshold still leave it undecided rather than called balanced."""

from __future__ import annotations

import pytest

from smdebug.rules.results import ISSUES, NO_ISSUES, NOT_EVALUATED
from _judging import judged  # noqa: E402

torch = pytest.importorskip("torch")
nn = torch.nn


def mean_teacher_run(path, labelled_classes, epochs: int = 12) -> str:
    """A student MLP and its exponential-moving-average teacher on 10 Gaussian classes (1400 rows, 64 features);
    the labelled rows are the first ones of each class in ``labelled_classes`` (a list of class ids, one per
    labelled row); batches of 64 hold about 9 of them. EVAL passes on a balanced validation set every epoch."""
    import torch.nn.functional as F

    import smdebug.pytorch as smd

    torch.manual_seed(0)
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    centres = 1.5 * torch.randn(10, 64, generator=g)
    y = torch.arange(1400) % 10
    x = centres[y] + torch.randn(1400, 64, generator=g)
    y_val = torch.arange(500) % 10
    x_val = centres[y_val] + torch.randn(500, 64, generator=g)
    # the labelled rows: for each class id listed, the next row of that class not yet taken
    taken = {c: 0 for c in range(10)}
    labelled = torch.zeros(1400, dtype=torch.bool)
    for c in labelled_classes:
        labelled[c + 10 * taken[c]] = True
        taken[c] += 1
    student = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    teacher = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    teacher.load_state_dict(student.state_dict())
    for p in teacher.parameters():
        p.requires_grad_(False)
    ce = nn.CrossEntropyLoss()
    hook = smd.Hook.recommended(str(path))
    hook.register_module(student)
    hook.register_loss(ce)
    opt = torch.optim.Adam(student.parameters(), 2e-3)
    for _ in range(epochs):
        hook.set_mode(smd.modes.TRAIN)
        order = torch.randperm(1400, generator=g)
        for b in range(0, 1400 - 63, 64):
            i = order[b:b + 64]
            out = student(x[i])
            with torch.no_grad():
                target = teacher(x[i] + 0.1 * torch.randn(len(i), 64, generator=g)).softmax(1)
            mask = labelled[i]
            supervised = ce(out[mask], y[i][mask]) if mask.any() else out.sum() * 0
            loss = supervised + F.mse_loss(out.softmax(1), target)
            opt.zero_grad()
            loss.backward()
            opt.step()
            with torch.no_grad():
                for pt, ps in zip(teacher.parameters(), student.parameters()):
                    pt.mul_(0.99).add_(ps, alpha=0.01)
        hook.set_mode(smd.modes.EVAL)
        with torch.no_grad():
            ce(student(x_val), y_val)
    hook.close()
    return str(path)


def test_a_semi_supervised_run_s_few_balanced_labels_are_judged(tmp_path):
    r = judged(mean_teacher_run(tmp_path / "run", [c % 10 for c in range(200)]), "ClassImbalance")  # 20 labelled rows per class
    assert r.status == NO_ISSUES, (r.status, r.detail, [f.reason for f in r.findings])
    assert r.steps_evaluated > 0


def test_a_semi_supervised_run_s_imbalanced_labels_fire(tmp_path):
    # 200 labelled rows: class 0 100 of them, class 1 5, the rest about 11 each (ratio 20)
    classes = [0] * 100 + [1] * 5 + [2 + c % 8 for c in range(95)]
    r = judged(mean_teacher_run(tmp_path / "run", classes), "ClassImbalance")
    assert r.status == ISSUES, (r.status, r.detail)
    assert "class 0 has" in r.findings[0].reason and "class 1" in r.findings[0].reason, r.findings[0].reason


def test_few_labels_of_a_set_at_the_threshold_stay_undecided(tmp_path):
    # 200 labelled rows: class 0 70, class 1 7 (ratio 10, the threshold), the rest about 15 each: a hundred-odd
    # labels can neither show the ratio above 10 nor rule it out, and the verdict says how many were saved
    classes = [0] * 70 + [1] * 7 + [2 + c % 8 for c in range(123)]
    r = judged(mean_teacher_run(tmp_path / "run", classes), "ClassImbalance")
    assert r.status == NOT_EVALUATED, (r.status, r.detail, [f.reason for f in r.findings])
    assert "of samples=500 labels saved" in r.detail and "saved steps" in r.detail, r.detail
