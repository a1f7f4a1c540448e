import pytest


@pytest.fixture(autouse=True)
def fast_end(monkeypatch):
    # Runs here are finished before they are read: no need to wait for late writers.
    monkeypatch.setenv("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")


@pytest.fixture
def torch_one_thread():
    """torch on one intra-op thread for the test: tiny models' threads only contend for the shared CPU. Used
    by files that train torch models (``pytestmark = pytest.mark.usefixtures("torch_one_thread")``); torch is
    imported only then, so files without it still collect."""
    from smdebug_test_support.threads import one_torch_thread

    with one_torch_thread():
        yield


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
