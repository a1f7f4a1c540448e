"""The public API of smdebug.tensorflow: lazy loading, a clear message without TensorFlow, plugin hooks."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import smdebug.tensorflow as smd
from smdebug.tensorflow import plugin


def run_python(code, **env):
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                            env={**os.environ, **env})
    return result


def test_importing_the_package_does_not_import_tensorflow():
    result = run_python(
        "import sys, smdebug.tensorflow as smd; smd.SaveConfig; smd.modes; smd.CollectionKeys; smd.Collection; "
        "smd.get_hook; print('tensorflow' in sys.modules, 'keras' in sys.modules)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "False"]


def test_a_missing_tensorflow_is_reported_clearly():
    code = ("import sys; sys.modules['tensorflow'] = None; sys.modules['keras'] = None\n"
            "import smdebug.tensorflow as smd\n"
            "try:\n    smd.KerasHook\nexcept ModuleNotFoundError as e:\n    print('MSG', e)\n")
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert "MSG smdebug.tensorflow.KerasHook needs TensorFlow" in result.stdout
    assert "pip install --find-links dist 'smdebug-tf[framework]'" in result.stdout


def test_public_names():
    for name in ("KerasHook", "SessionHook", "EstimatorHook", "get_hook", "SaveConfig", "SaveConfigMode",
                 "ReductionConfig", "Collection", "CollectionKeys", "modes", "create_trial"):
        assert getattr(smd, name) is not None
    assert smd.EstimatorHook is smd.SessionHook
    assert set(smd.__all__) >= {"KerasHook", "SessionHook", "get_hook"}


def test_tensor_to_numpy_and_worker_detection(monkeypatch):
    import tensorflow as tf

    np.testing.assert_array_equal(plugin.smdebug_tensor_to_numpy(tf.constant([1, 2])), [1, 2])
    assert plugin.smdebug_tensor_to_numpy(np.zeros(2)) is None
    strings = plugin.smdebug_tensor_to_numpy(tf.constant([b"a", "\u00e9".encode()]))
    assert strings.tolist() == ["a", "\u00e9"]
    bf16 = plugin.smdebug_tensor_to_numpy(tf.constant([1.5], dtype=tf.bfloat16))
    assert bf16.dtype == np.float32 and bf16.tolist() == [1.5]
    sliced = tf.IndexedSlices(tf.constant([[1.0, 2.0]]), tf.constant([1]), tf.constant([3, 2]))
    np.testing.assert_array_equal(plugin.smdebug_tensor_to_numpy(sliced), [[0, 0], [1, 2], [0, 0]])

    monkeypatch.delenv("TF_CONFIG", raising=False)
    assert plugin.smdebug_detect_worker("tensorflow") is None
    cluster = {"chief": ["h:1"], "worker": ["h:2", "h:3"], "ps": ["h:4"]}
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": cluster, "task": {"type": "worker", "index": 1}}))
    info = plugin.smdebug_detect_worker("tensorflow")
    assert (info.rank, info.size, info.name) == (2, 3, "worker_2")
    assert plugin.smdebug_detect_worker("pytorch") is None
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": cluster, "task": {"type": "ps", "index": 0}}))
    assert plugin.smdebug_detect_worker("tensorflow") is None
    monkeypatch.setenv("TF_CONFIG", "not json")
    assert plugin.smdebug_detect_worker("tensorflow") is None


def test_collection_helpers():
    import keras

    coll = smd.Collection("mine")
    layer = keras.layers.Dense(2, name="proj")
    coll.add_keras_layer(layer, inputs=True, outputs=True)
    assert coll.matches("model/proj/outputs") and coll.matches("proj/inputs_1")
    assert not coll.matches("model/proj/kernel") and not coll.matches("projector/outputs")
    v = keras.Variable(np.zeros(2), name="w")
    coll.add([v, "explicit"])
    assert "explicit" in coll.tensor_names and v.path in coll.tensor_names
    with pytest.raises(TypeError):
        coll.add(object())
