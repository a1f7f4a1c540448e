import pytest


@pytest.fixture(autouse=True)
def fast_end(monkeypatch):
    # Runs here are finished before they are read: no need to wait for late writers.
    monkeypatch.setenv("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")


@pytest.fixture(scope="session")
def moto_server():
    """A real moto server on loopback for the session (SNS, SQS, SageMaker over HTTP)."""
    from smdebug_test_support.s3 import MotoServer

    with MotoServer() as server:
        yield server


@pytest.fixture
def aws(moto_server, monkeypatch):
    """boto3 pointed at the moto server, with a clean state for each test."""
    moto_server.reset()
    for key, value in moto_server.env.items():
        monkeypatch.setenv(key, value)
    return moto_server
