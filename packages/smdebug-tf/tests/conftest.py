import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest  # noqa: E402


def _split_cpu():
    """Two logical CPU devices, so MirroredStrategy has two replicas (must run before TF uses a device)."""
    try:
        import tensorflow as tf
    except ImportError:
        return
    try:
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(2)
    except RuntimeError:
        pass  # already initialised by an earlier import


_split_cpu()


@pytest.fixture(autouse=True)
def _fresh_state(monkeypatch):
    monkeypatch.setenv("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")
    yield
    from smdebug.core import singleton

    singleton.del_hook()


@pytest.fixture
def out_dir(tmp_path):
    return str(tmp_path / "run")
