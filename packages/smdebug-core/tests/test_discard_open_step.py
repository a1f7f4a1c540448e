"""BaseHook.discard_open_step: a step begun by something that was not training (the zero-code attach's first
module call before a trainer's callback took over) is forgotten, files and numbers, so the trainer numbers its
own steps; never once a step was saved (numbers already written cannot be given again)."""

import os

import numpy as np

from _support import NumpyHook
from smdebug.core.modes import ModeKeys
from smdebug.core.save_config import SaveConfig
from smdebug.trials import create_trial


def _hook(out):
    return NumpyHook(out_dir=str(out), save_config=SaveConfig(save_interval=1), include_collections=["weights"])


def _files(out):
    return sorted(os.path.relpath(os.path.join(d, f), out) for d, _, fs in os.walk(out) for f in fs)


def test_the_open_step_is_forgotten_and_the_next_one_takes_its_number(tmp_path):
    out = tmp_path / "run"
    hook = _hook(out)
    hook.set_mode(ModeKeys.TRAIN)
    before = hook.step, dict(hook.mode_steps)
    hook.begin_step()
    hook.record("weights/w", np.full(3, -1.0, np.float32))  # (a shape check's call: not training)
    assert hook.discard_open_step(*before)
    for value in (1.0, 2.0):
        hook.begin_step()
        hook.record("weights/w", np.full(3, value, np.float32))
        hook.end_step()
    hook.close()
    trial = create_trial(str(out))
    assert trial.steps() == [0, 1] and trial.steps(ModeKeys.TRAIN) == [0, 1]
    assert [float(trial.tensor("weights/w").value(s)[0]) for s in (0, 1)] == [1.0, 2.0]
    assert not [f for f in _files(out) if "tmp" in f.lower()]  # (the discarded step's unfinished files are gone)


def test_nothing_is_discarded_once_a_step_was_saved_or_when_none_is_open(tmp_path):
    hook = _hook(tmp_path / "run")
    before = hook.step, dict(hook.mode_steps)
    assert not hook.discard_open_step(*before)  # (no step open)
    hook.begin_step()
    hook.record("weights/w", np.zeros(3, np.float32))
    hook.end_step()
    hook.begin_step()
    hook.record("weights/w", np.ones(3, np.float32))
    assert not hook.discard_open_step(*before)
    assert hook.step == 1
    hook.end_step()
    hook.close()
    assert create_trial(str(tmp_path / "run")).steps() == [0, 1]
