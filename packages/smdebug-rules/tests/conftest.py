import pytest


@pytest.fixture(autouse=True)
def fast_end(monkeypatch):
    # Runs here are finished before they are read: no need to wait for late writers.
    monkeypatch.setenv("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")
