"""A ``tensorboard_dir`` the hook cannot write (seventh red-team pass): the TensorBoard files stop, the run
itself is saved.

Before: the first TensorBoard write failed on the hook's writer thread like a write of the run, and the
hook stopped saving ("cannot save to <out_dir>", naming the wrong folder): a run configured with
``"tensorboard_dir": "/dev/null"`` (or a path below a file) held its collections file and no step.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest

from _support import NumpyHook, train_logistic_regression


def _blocked_file(tmp_path):
    f = tmp_path / "a_file"
    f.write_bytes(b"not a folder")
    return str(f)  # (the hook makes <dir>/GLOBAL: "Not a directory")


def _mode_folder_taken(tmp_path):
    tb = tmp_path / "tb"
    tb.mkdir()
    (tb / "GLOBAL").write_bytes(b"")  # a file where the hook makes its mode's folder
    return str(tb)


@pytest.mark.parametrize("make_dir", [_blocked_file, _mode_folder_taken], ids=["file", "mode-folder-is-a-file"])
def test_a_tensorboard_dir_that_cannot_be_written_costs_the_tensorboard_files_only(tmp_path, make_dir, smdebug_log):
    from smdebug.core.save_config import SaveConfig
    from smdebug.trials import create_trial

    tb_dir = make_dir(tmp_path)
    out = tmp_path / "run"
    hook = NumpyHook(out_dir=str(out), save_config=SaveConfig(save_interval=1), export_tensorboard=True,
                     tensorboard_dir=tb_dir, include_collections=["weights", "losses"])
    history = train_logistic_regression(hook, steps=6)
    hook.close()

    trial = create_trial(str(out))
    assert trial.steps() == list(range(6))
    _assert_every_step_saved_and_one_tensorboard_error(trial, history, smdebug_log, tb_dir)


# --- a tensorboard_dir inside the run's own files (eighth pass) --------------------------------------
# Before: written to. TensorBoard files went into index/, events/, collections/, workers_ended/ or claims/
# of the run (its readers list those folders), and a tensorboard_dir at the run's training_job_end.ts made
# that name a folder: the run could never be marked finished ("readers will treat the run as still running").

_OWN_PARTS = ["index", "index/000000000", "events", "events/000000000000", "collections", "workers_ended",
              "claims", "training_job_end.ts", "stop_training.json", "claim.smd"]


def _tfevents_under(folder):
    """TensorBoard files under ``folder`` (in a mode's folder, GLOBAL/...: not the run's own event files)."""
    import os

    modes = {"TRAIN", "EVAL", "PREDICT", "GLOBAL"}
    return [os.path.join(r, n) for r, _d, fs in os.walk(folder) for n in fs
            if ".tfevents" in n and os.path.basename(r) in modes]


@pytest.mark.parametrize("part", _OWN_PARTS + ["link-to-index", "another-runs-index"])
def test_a_tensorboard_dir_inside_a_runs_own_files_is_refused_and_the_run_saved(tmp_path, part, smdebug_log):
    import os

    from smdebug.core.save_config import SaveConfig
    from smdebug.trials import create_trial

    out = tmp_path / "run"
    if part == "link-to-index":  # (a path that looks elsewhere: the check follows links, as writing would)
        os.makedirs(out / "index")
        os.symlink(out / "index", tmp_path / "link")
        tb_dir = str(tmp_path / "link" / "tb")
    elif part == "another-runs-index":  # (an earlier run's folder: its readers would list the files too)
        other = NumpyHook(out_dir=str(tmp_path / "other"), save_config=SaveConfig(save_interval=1),
                          include_collections=["losses"])
        train_logistic_regression(other, steps=2)
        other.close()
        tb_dir = str(tmp_path / "other" / "index" / "tb")
    else:
        tb_dir = str(out / part)
    hook = NumpyHook(out_dir=str(out), save_config=SaveConfig(save_interval=1), export_tensorboard=True,
                     tensorboard_dir=tb_dir, include_collections=["weights", "losses"])
    assert hook.tensorboard_dir is None  # refused when the hook is made, before the first step
    history = train_logistic_regression(hook, steps=5)
    hook.close()

    assert not _tfevents_under(tmp_path)
    trial = create_trial(str(out))
    assert trial.loaded_all_steps  # (the end marker was written: no folder took its name)
    assert trial.steps() == list(range(5))
    _assert_every_step_saved_and_one_tensorboard_error(trial, history, smdebug_log, tb_dir)


@pytest.mark.parametrize("where", ["tensorboard", ".", "index_copy", "my_events"])
def test_a_tensorboard_dir_beside_the_runs_own_files_is_written(tmp_path, where, smdebug_log):
    from smdebug.core.save_config import SaveConfig

    out = tmp_path / "run"
    tb_dir = str(out / where)
    hook = NumpyHook(out_dir=str(out), save_config=SaveConfig(save_interval=1), export_tensorboard=True,
                     tensorboard_dir=tb_dir, include_collections=["losses"])
    train_logistic_regression(hook, steps=3)
    hook.close()
    assert _tfevents_under(tb_dir)
    assert not smdebug_log.messages(logging.ERROR)


def _assert_every_step_saved_and_one_tensorboard_error(trial, history, smdebug_log, tb_dir):
    """The run holds every trained step's weights and loss, and the log one error naming the TensorBoard folder
    (the run is still saved), none of the hook's 'cannot save to'."""
    for step, w, _, loss in history:
        np.testing.assert_array_equal(trial.tensor("weights/w").value(step), w)
        assert trial.tensor("loss").value(step)[0] == pytest.approx(loss)
    errors = smdebug_log.messages(logging.ERROR)
    assert len(errors) == 1, errors
    assert tb_dir in errors[0] and "TensorBoard" in errors[0] and "still saved" in errors[0], errors[0]
    assert not any("cannot save to" in m for m in smdebug_log.messages())
