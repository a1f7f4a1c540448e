"""ClassImbalance's misprediction test and Confusion when Hook.recommended's tapered schedule saves the last labels long before
the run ends (0-9, 10, 20 ... 160, then 500: a 300-step run's last labels are at step 160). The model saved there
is judged when the training loss had reached its final level by then (a model collapsed by weight decay to
predicting one class, as probe 9's k_b_l2_one: it fires); a model still learning after its last labels is not
judged by them: ClassImbalance's NoIssuesFound says that the test was not reached rather than claiming it, and
Confusion, which has nothing else to judge, is NotEvaluated and says why."""

from __future__ import annotations

import pytest

from smdebug.rules.results import ISSUES, NO_ISSUES, NOT_EVALUATED

torch = pytest.importorskip("torch")
nn = torch.nn

from _torch_runs import classification_data, mlp, train_recommended  # noqa: E402
from _judging import judged  # noqa: E402


def three_class_run(path, weight_decay: float, lr: float) -> str:
    torch.set_num_threads(1)
    x, y = classification_data(n=512, classes=3)  # classes 0, 1, 2 in about 1 : 2 : 1
    model = mlp(classes=3, hidden=32)
    opt = torch.optim.SGD(model.parameters(), lr=lr, weight_decay=weight_decay)
    train_recommended(path, model, x, y, nn.CrossEntropyLoss(), steps=300, optimizer=opt, batch_size=64)
    return str(path)


@pytest.fixture(scope="module")
def collapsed(tmp_path_factory):
    # weight decay 1.0 pulls every weight to 0 within a few steps: the loss is flat at the label prior's entropy
    # from then on, and the model predicts the majority class for every sample
    return three_class_run(tmp_path_factory.mktemp("collapsed") / "run", weight_decay=1.0, lr=0.5)


@pytest.fixture(scope="module")
def still_learning(tmp_path_factory):
    return three_class_run(tmp_path_factory.mktemp("still_learning") / "run", weight_decay=0.0, lr=0.02)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    # (a little weight decay gives the loss a floor, reached well before step 160)
    return three_class_run(tmp_path_factory.mktemp("trained") / "run", weight_decay=0.02, lr=0.5)


def test_a_collapsed_model_is_judged_by_its_early_last_labels(collapsed):
    r = judged(collapsed, "ClassImbalance")
    assert r.status == ISSUES, (r.status, r.detail)
    reason = r.findings[0].reason
    assert "mispredicts class" in reason and "at step 160 of 299" in reason, reason


def test_a_model_still_learning_after_its_last_labels_says_the_test_was_not_reached(still_learning):
    r = judged(still_learning, "ClassImbalance")
    assert r.status == NO_ISSUES, (r.status, [f.reason for f in r.findings])
    assert r.detail and "misprediction test" in r.detail and "not reached" in r.detail, r.detail
    assert "step 160 of 299" in r.detail and "still falling" in r.detail, r.detail


def test_a_model_trained_by_its_last_labels_is_judged_and_quiet(trained):
    r = judged(trained, "ClassImbalance")
    assert r.status == NO_ISSUES, (r.status, [f.reason for f in r.findings])
    assert r.detail is None, r.detail


def test_confusion_judges_a_collapsed_model_by_its_early_last_labels(collapsed):
    r = judged(collapsed, "Confusion")
    assert r.status == ISSUES, (r.status, r.detail)
    reason = r.findings[0].reason
    assert "predicted correctly" in reason and "at step 160 of 299" in reason, reason


def test_confusion_does_not_judge_a_model_still_learning_after_its_last_labels(still_learning):
    r = judged(still_learning, "Confusion")
    assert r.status == NOT_EVALUATED, (r.status, [f.reason for f in r.findings])
    assert "step 160 of 299" in r.detail and "still falling" in r.detail, r.detail


def test_confusion_judges_a_model_trained_by_its_last_labels_and_is_quiet(trained):
    r = judged(trained, "Confusion")
    assert r.status == NO_ISSUES, (r.status, [f.reason for f in r.findings])
