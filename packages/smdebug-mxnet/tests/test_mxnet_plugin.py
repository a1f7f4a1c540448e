"""What smdebug-mxnet does beyond the skeleton: lazy re-exports, array conversion, worker identity."""

import importlib
import subprocess
import sys
import types

import numpy as np
import pytest


@pytest.fixture
def plugins():
    from smdebug.core.plugins import manager

    manager.reset_for_tests()
    yield manager
    manager.reset_for_tests()


def test_lazy_reexports_are_the_core_objects():
    import smdebug.mxnet as smd

    expected = {
        "SaveConfig": ("smdebug.core.save_config", "SaveConfig"),
        "SaveConfigMode": ("smdebug.core.save_config", "SaveConfigMode"),
        "ReductionConfig": ("smdebug.core.reduction_config", "ReductionConfig"),
        "Collection": ("smdebug.mxnet.collection", "Collection"),
        "CollectionKeys": ("smdebug.core.collection", "CollectionKeys"),
        "modes": ("smdebug.core.modes", "ModeKeys"),
        "create_trial": ("smdebug.trials", "create_trial"),
        "Hook": ("smdebug.mxnet.hook", "Hook"),
        "get_hook": ("smdebug.mxnet.hook", "get_hook"),
    }
    for name, (module, attr) in expected.items():
        assert getattr(smd, name) is getattr(importlib.import_module(module), attr), name
    assert set(expected) <= set(dir(smd))
    with pytest.raises(AttributeError):
        smd.NoSuchThing  # noqa: B018


def test_importing_the_package_does_not_import_mxnet():
    code = ("import sys, smdebug.mxnet as smd; smd.SaveConfig; smd.modes; smd.create_trial; smd.CollectionKeys; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'mxnet'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_mxnet_arrays_convert_through_the_plugin(plugins):
    mx = pytest.importorskip("mxnet")
    x = mx.nd.arange(6).reshape((2, 3)) * 2
    out = plugins.tensor_to_numpy(x)
    assert isinstance(out, np.ndarray) and out.dtype == np.float32
    np.testing.assert_array_equal(out, np.arange(6, dtype=np.float32).reshape(2, 3) * 2)

    sparse = mx.nd.sparse.row_sparse_array((mx.nd.ones((1, 2)), mx.nd.array([1])), shape=(3, 2))
    assert plugins.tensor_to_numpy(sparse).tolist() == [[0, 0], [1, 1], [0, 0]]

    bf16 = mx.nd.array([1, 2, 3]).astype(np.dtype([("bfloat16", np.uint16)]))
    widened = plugins.tensor_to_numpy(bf16)
    assert widened.dtype == np.float32 and widened.tolist() == [1.0, 2.0, 3.0]

    assert plugins.tensor_to_numpy(mx.np.ones((2,))).tolist() == [1.0, 1.0]  # the numpy-style interface
    assert plugins.tensor_to_numpy(mx.nd.array([1, 2], dtype="int64")).dtype == np.int64


def test_worker_comes_from_horovod_when_initialised(plugins, monkeypatch):
    assert plugins.detect_worker("mxnet").name == "worker_0"  # no Horovod: a single worker

    hvd = types.ModuleType("horovod.mxnet")
    hvd.is_initialized = lambda: False
    hvd.rank, hvd.size = (lambda: 1), (lambda: 3)
    monkeypatch.setitem(sys.modules, "horovod.mxnet", hvd)
    assert plugins.detect_worker("mxnet").size == 1  # imported, not initialised

    hvd.is_initialized = lambda: True
    worker = plugins.detect_worker("mxnet")
    assert (worker.rank, worker.size, worker.name) == (1, 3, "worker_1")
    # Another framework's hook asking gets no answer from the MXNet plugin.
    assert plugins.detect_worker("tensorflow").size == 1


def test_horovod_workers_write_their_own_files(tmp_path, plugins, monkeypatch):
    mx = pytest.importorskip("mxnet")
    import smdebug.mxnet as smd
    from models import mlp, train

    hvd = types.ModuleType("horovod.mxnet")
    hvd.is_initialized, hvd.rank, hvd.size = (lambda: True), (lambda: 1), (lambda: 2)
    monkeypatch.setitem(sys.modules, "horovod.mxnet", hvd)
    out_dir = str(tmp_path / "run")
    with mx.name.NameManager():
        net = mlp()
    hook = smd.Hook(out_dir, save_config=smd.SaveConfig(save_interval=1), include_collections=["weights"],
                    include_workers="all")
    hook.register_block(net)
    train(net, 2)
    hook.close()
    assert (tmp_path / "run" / "collections" / "000000000" / "worker_1_collections.json").exists()
    assert (tmp_path / "run" / "events" / "000000000001" / "000000000001_worker_1.tfevents").exists()
