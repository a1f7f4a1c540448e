"""``trial.step_count()`` and ``trial.last_step()`` cost nothing whatever the run's length, and the mode steps
a trial keeps sorted as they arrive agree with ``steps()`` (probe 14c F6).

Rules ask at every step whether the run grew; each asked for ``steps(show_incomplete_steps=True)`` (a copy of
every step) to take its length, so judging a run of n steps cost n^2 (20,000 steps: 93 s, 100,000: over 15
minutes). The runs are written by the real writer."""

from __future__ import annotations

import pytest

from smdebug.core.modes import ModeKeys
from smdebug.trials import create_trial

from _support import write_run


def _modes(step):
    # TRAIN steps, with an EVAL step after every fourth, and PREDICT steps at the end
    if step >= 40:
        return ModeKeys.PREDICT, step - 40
    return (ModeKeys.EVAL, step // 5) if step % 5 == 4 else (ModeKeys.TRAIN, step - step // 5)


@pytest.mark.parametrize("ended", [True, False])
def test_counts_and_last_steps_agree_with_the_lists(tmp_path, ended):
    workers = ("worker_0", "worker_1")
    # worker_1 has not written its last steps yet: they are incomplete while the run is live
    write_run(str(tmp_path), range(45), workers=workers, mode_of=_modes, end=ended,
              skip=lambda step, w: w == "worker_1" and step >= 42)
    trial = create_trial(str(tmp_path))
    for mode in (ModeKeys.GLOBAL, ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT, "train"):
        for incomplete in (True, False):
            steps = trial.steps(mode=mode, show_incomplete_steps=incomplete)
            assert trial.step_count(mode, show_incomplete_steps=incomplete) == len(steps), (mode, incomplete)
        every = trial.steps(mode=mode, show_incomplete_steps=True)
        assert every == sorted(every)
        assert trial.last_step(mode) == every[-1]
    assert trial.steps(mode=ModeKeys.EVAL) == list(range(8))
    assert trial.steps(mode=ModeKeys.PREDICT, show_incomplete_steps=True) == [0, 1, 2, 3, 4]
    assert trial.steps(mode=ModeKeys.PREDICT) == ([0, 1, 2, 3, 4] if ended else [0, 1])


def test_a_run_without_steps_of_a_mode(tmp_path):
    write_run(str(tmp_path), range(3))
    trial = create_trial(str(tmp_path))
    assert trial.step_count() == 3 and trial.step_count(ModeKeys.EVAL) == 0
    assert trial.last_step(ModeKeys.EVAL) is None and trial.last_step() == 2


def test_mode_steps_arriving_out_of_order_are_kept_sorted(tmp_path):
    write_run(str(tmp_path), range(6), mode_of=lambda s: (ModeKeys.TRAIN, 5 - s))
    trial = create_trial(str(tmp_path))
    assert trial.steps(mode=ModeKeys.TRAIN) == [0, 1, 2, 3, 4, 5]
    assert trial.step_count(ModeKeys.TRAIN) == 6 and trial.last_step(ModeKeys.TRAIN) == 5


def test_mode_steps_of_workers_aligned_by_mode_step(tmp_path):
    """Workers that number their global steps differently (worker b evaluated once first) are aligned by mode
    step, every step placed again (see Trial._realign): the sorted mode steps are built again with them."""
    write_run(str(tmp_path), range(6), workers=("a",), num_workers=2, end=False,
              mode_of=lambda s: (ModeKeys.TRAIN, s))
    write_run(str(tmp_path), range(7), workers=("b",), num_workers=2,
              mode_of=lambda s: (ModeKeys.EVAL, 0) if s == 0 else (ModeKeys.TRAIN, s - 1))
    trial = create_trial(str(tmp_path))
    assert trial.steps(mode=ModeKeys.TRAIN) == [0, 1, 2, 3, 4, 5]
    assert trial.steps(mode=ModeKeys.EVAL) == [0]
    for mode in (ModeKeys.GLOBAL, ModeKeys.TRAIN, ModeKeys.EVAL):
        steps = trial.steps(mode=mode)
        assert trial.step_count(mode) == len(steps) and trial.last_step(mode) == steps[-1], mode
