"""Two hooks of one process on one out_dir (a notebook cell run twice, a second hook made by mistake) both
write, over each other's step files: the second is told so at its first step, naming the directory and
what to do (it used to happen without a word). Hooks on directories of their own are told nothing."""

import logging

from _support import NumpyHook, train_logistic_regression
from smdebug import SaveConfig
from smdebug.trials import create_trial

SAID = "another hook of this process, not closed, also writes to"


def _hook(out_dir):
    return NumpyHook(out_dir=str(out_dir), save_config=SaveConfig(save_interval=1), include_collections=["weights"])


def test_a_second_hook_on_a_run_directory_is_told(tmp_path, caplog):
    first, second = _hook(tmp_path / "run"), _hook(tmp_path / "run")
    with caplog.at_level(logging.WARNING, logger="smdebug"):
        train_logistic_regression(first, steps=2)
        train_logistic_regression(second, steps=3)
    first.close()
    second.close()
    said = [r.getMessage() for r in caplog.records if SAID in r.getMessage()]
    assert said == [f"smdebug: {SAID} {tmp_path / 'run'}; if both save steps they write over each other's files. "
                    "Close the first one (hook.close()) before making another, or give each hook its own out_dir."]


def test_hooks_on_directories_of_their_own_are_told_nothing(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="smdebug"):
        first, second = _hook(tmp_path / "one"), _hook(tmp_path / "two")
        train_logistic_regression(first, steps=2)
        train_logistic_regression(second, steps=3)
        first.close()
        second.close()
    assert not [r for r in caplog.records if SAID in r.getMessage()]
    assert create_trial(str(tmp_path / "two")).steps() == [0, 1, 2]
