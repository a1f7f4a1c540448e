import os

import pytest


@pytest.fixture(autouse=True)
def _fast_trials(monkeypatch):
    monkeypatch.setenv("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")
    yield
    from smdebug.core import singleton

    singleton.del_hook()


@pytest.fixture
def out_dir(tmp_path):
    return str(tmp_path / "run")
