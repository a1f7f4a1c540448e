"""What smdebug-torch already does beyond the skeleton: lazy re-exports, tensor conversion, worker identity."""

import importlib

import numpy as np
import pytest


@pytest.fixture
def plugins():
    from smdebug.core.plugins import manager

    manager.reset_for_tests()
    yield manager
    manager.reset_for_tests()


def test_lazy_reexports_are_the_core_objects():
    import smdebug.pytorch as smd

    expected = {
        "SaveConfig": ("smdebug.core.save_config", "SaveConfig"),
        "SaveConfigMode": ("smdebug.core.save_config", "SaveConfigMode"),
        "ReductionConfig": ("smdebug.core.reduction_config", "ReductionConfig"),
        "Collection": ("smdebug.pytorch.collection", "Collection"),
        "CollectionKeys": ("smdebug.core.collection", "CollectionKeys"),
        "modes": ("smdebug.core.modes", "ModeKeys"),
        "create_trial": ("smdebug.trials", "create_trial"),
    }
    for name, (module, attr) in expected.items():
        assert getattr(smd, name) is getattr(importlib.import_module(module), attr), name
    assert set(expected) <= set(dir(smd))
    with pytest.raises(AttributeError):
        smd.NoSuchThing  # noqa: B018


def test_1_0_module_paths_give_the_same_objects():
    """Scripts written for 1.0.x import CollectionKeys from smdebug.pytorch.collection and the hook
    accessors from smdebug.pytorch.singleton_utils."""
    import smdebug.pytorch as smd
    from smdebug.pytorch import collection, singleton_utils

    assert collection.CollectionKeys is smd.CollectionKeys
    assert (singleton_utils.get_hook, singleton_utils.set_hook, singleton_utils.del_hook) == (
        smd.get_hook, smd.set_hook, smd.del_hook)


def test_torch_tensors_convert_through_the_plugin(plugins):
    torch = pytest.importorskip("torch")
    w = torch.arange(6, dtype=torch.float32).reshape(2, 3).requires_grad_()
    out = plugins.tensor_to_numpy(w * 2)
    assert isinstance(out, np.ndarray) and out.dtype == np.float32
    np.testing.assert_array_equal(out, np.arange(6, dtype=np.float32).reshape(2, 3) * 2)

    bf16 = plugins.tensor_to_numpy(torch.ones(3, dtype=torch.bfloat16))
    assert bf16.dtype == np.float32 and bf16.tolist() == [1.0, 1.0, 1.0]

    sparse = torch.sparse_coo_tensor([[0, 2]], [5.0, 7.0], (4,), check_invariants=True)
    assert plugins.tensor_to_numpy(sparse).tolist() == [5.0, 0.0, 7.0, 0.0]


def test_worker_comes_from_torch_distributed_when_initialised(plugins, monkeypatch):
    torch = pytest.importorskip("torch")
    dist = torch.distributed
    if not dist.is_available():
        pytest.skip("torch built without distributed support")
    assert plugins.detect_worker("pytorch").name == "worker_0"  # not initialised: single worker

    monkeypatch.setattr(dist, "is_initialized", lambda: True)
    monkeypatch.setattr(dist, "get_rank", lambda *a, **k: 2)
    monkeypatch.setattr(dist, "get_world_size", lambda *a, **k: 4)
    worker = plugins.detect_worker("pytorch")
    assert (worker.rank, worker.size, worker.name) == (2, 4, "worker_2")
    # Another framework's hook asking gets no answer from the torch plugin.
    assert plugins.detect_worker("tensorflow").size == 1


def test_importing_smdebug_pytorch_imports_no_trainer():
    """The trainer callbacks are optional extras: `import smdebug.pytorch` (and the hook) loads neither
    Lightning nor Transformers, whether they are installed or not."""
    import subprocess
    import sys

    code = ("import sys, smdebug.pytorch as smd; smd.Hook; import smdebug.pytorch.trainer_factories; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('lightning', 'pytorch_lightning', 'transformers', 'accelerate')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
