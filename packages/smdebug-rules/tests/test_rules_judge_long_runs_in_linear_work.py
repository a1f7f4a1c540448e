"""Judging a run costs work in proportion to its steps, not to their square (probe 14c F6).

Every rule, at every step, asked the trial whether the run had grown with ``steps(show_incomplete_steps=True)`` (a
copy of every step, for its length), and waited for the step through a look that copied them again: judging a run
of n steps built about 20 lists of n steps per step. 5,000 steps took 8.5 s, 20,000 93 s, 100,000 more than 15
minutes (Hook.recommended saves the loss at every step, so a real job of 100,000 steps has that many). The loss
curve rules also read windows of a quarter of the run at every step (LossNotDecreasing's medians) and every block
of half of it at every tenth save (OscillatingLoss). The trial now keeps counts and ends at hand (``step_count()``,
``last_step()``), a window's median is kept as the window moves, and only the blocks judged are read. The tests
count the steps in every list of steps the trial builds, and the saves in every window the curve rules read,
while the recommended rules judge a real run saved at every step."""

from __future__ import annotations

import collections

import pytest

from smdebug.rules import run_rules
from smdebug.rules.generic import curve_rules, curves
from smdebug.rules.results import ERROR
from smdebug.trials import create_trial

torch = pytest.importorskip("torch")
nn = torch.nn

from _torch_runs import classification_data, mlp, train_recommended  # noqa: E402

pytestmark = pytest.mark.usefixtures("torch_one_thread")

STEPS = 1000


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    torch.set_num_threads(1)
    path = tmp_path_factory.mktemp("long") / "run"
    x, y = classification_data(n=256)
    train_recommended(path, mlp(), x, y, nn.CrossEntropyLoss(), steps=STEPS)
    trial = create_trial(str(path))
    assert len(trial.steps()) == STEPS and trial.tensor("CrossEntropyLoss_output_0").steps() == list(range(STEPS))
    return str(path)


def _counting(owner, name: str, built: collections.Counter, monkeypatch=None) -> None:
    """Count in ``built[name]`` the items in what ``owner.name`` returns (or, for a function taking a sequence,
    is given), from now on: a list of n items costs n to build or to read."""
    method = getattr(owner, name)

    def counted(*args, **kwargs):
        out = method(*args, **kwargs)
        built[name] += len(out) if name != "block_means" else len(args[0])
        return out
    if monkeypatch is None:
        setattr(owner, name, counted)
    else:
        monkeypatch.setattr(owner, name, counted)


def test_the_trial_builds_lists_of_steps_in_proportion_to_the_run(run):
    trial = create_trial(run)
    built = collections.Counter()
    for name in ("_steps_for", "tensor_steps"):  # (the trial's one place that builds lists of steps, and tensors')
        _counting(trial, name, built)
    result = run_rules(trial)
    assert result.steps_evaluated == STEPS and not [r.name for r in result.rules if r.status == ERROR]
    # (a few lists of every step for the whole judgement, not ~20 per step judged: 45 million steps before)
    assert sum(built.values()) <= 50 * STEPS, dict(built)


def test_the_loss_curve_rules_read_windows_in_proportion_to_the_run(run, monkeypatch):
    read = collections.Counter()
    _counting(curves.Curve, "between", read, monkeypatch)
    _counting(curve_rules, "block_means", read, monkeypatch)
    rules = ["LossNotDecreasing", "OscillatingLoss"]
    result = run_rules(run, rules)
    assert result.steps_evaluated == STEPS
    assert all(r.steps_evaluated and r.status != ERROR for r in result.rules), [(r.name, r.error) for r in result.rules]
    # (LossNotDecreasing read a quarter of the run at every step: 1.5 million saves before, for 1,000 steps)
    assert sum(read.values()) <= 50 * STEPS, dict(read)
