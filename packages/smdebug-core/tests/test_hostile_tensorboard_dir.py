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
    for step, w, _, loss in history:
        np.testing.assert_array_equal(trial.tensor("weights/w").value(step), w)
        assert trial.tensor("loss").value(step)[0] == pytest.approx(loss)
    errors = smdebug_log.messages(logging.ERROR)
    assert len(errors) == 1, errors
    assert "TensorBoard" in errors[0] and tb_dir in errors[0] and "still saved" in errors[0]
    assert not any("cannot save to" in m for m in smdebug_log.messages())
