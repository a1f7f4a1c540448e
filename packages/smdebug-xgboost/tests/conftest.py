import numpy as np
import pytest

ALL_COLLECTIONS = ["hyperparameters", "metrics", "losses", "predictions", "labels", "feature_importance",
                   "average_shap", "full_shap", "trees"]


@pytest.fixture(autouse=True)
def _fast_trials(monkeypatch):
    monkeypatch.setenv("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")
    yield
    from smdebug.core import singleton

    singleton.del_hook()


@pytest.fixture
def out_dir(tmp_path):
    return str(tmp_path / "run")


def regression_data(rows=120, features=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(rows, features)).astype(np.float32)
    y = 2 * X[:, 0] + X[:, 1] - 0.5 * X[:, 2] + rng.normal(scale=0.1, size=rows)
    return X, y.astype(np.float32)


def binary_data(rows=150, features=4, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(rows, features)).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=0.5, size=rows) > 0).astype(np.float32)
    return X, y


def multiclass_data(rows=150, features=4, classes=3, seed=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(rows, features)).astype(np.float32)
    y = np.digitize(X[:, 0] + 0.3 * X[:, 1], [-0.5, 0.5]).astype(np.float32)
    assert len(np.unique(y)) == classes
    return X, y


@pytest.fixture
def smd_log():
    """What the smdebug logger says during the test (it does not propagate to caplog)."""
    from smdebug.core.testing import capture_smdebug_log

    with capture_smdebug_log() as log:
        yield log
