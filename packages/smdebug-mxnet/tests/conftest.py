import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))  # models.py


@pytest.fixture(autouse=True)
def _fast_trials(monkeypatch):
    monkeypatch.setenv("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")
    yield
    from smdebug.core import singleton

    singleton.del_hook()


@pytest.fixture(autouse=True)
def _fresh_gluon_names():
    """Gluon numbers blocks per process (dense0, dense1...): each test starts from 0 again."""
    mx = pytest.importorskip("mxnet")
    with mx.name.NameManager():
        yield


@pytest.fixture
def out_dir(tmp_path):
    return str(tmp_path / "run")


@pytest.fixture
def smd_log():
    """What the smdebug logger says during the test (it does not propagate to caplog)."""
    from smdebug.core.testing import capture_smdebug_log

    with capture_smdebug_log() as log:
        yield log
