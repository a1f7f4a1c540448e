"""The model's graph in the TensorBoard output of KerasHook, read by TensorFlow's and TensorBoard's readers."""

import glob
import os
import re

import pytest
import tensorflow as tf

import models
import smdebug.tensorflow as smd


def _fit(out_dir, tb_dir, model=None, **hook_kwargs):
    x, y = models.data()
    model = model or models.dense()
    hook = smd.KerasHook(out_dir, tensorboard_dir=tb_dir, save_config=smd.SaveConfig(save_interval=2),
                         include_collections=["weights", "losses"], **hook_kwargs)
    model.fit(x, y, batch_size=8, epochs=2, verbose=0, callbacks=[hook])
    model.evaluate(x, y, batch_size=8, verbose=0, callbacks=[hook])
    hook.close()
    return model


def _has_layer(names, layer):
    """A node inside the layer's name scope (TensorFlow may suffix a scope name with _<n>)."""
    pattern = re.compile(rf"(^|/){re.escape(layer)}(_\d+)?/")
    return any(pattern.search(n) for n in names)


def _graph_events(folder):
    events = []
    for path in sorted(glob.glob(os.path.join(folder, "*.tfevents"))):
        events += [e for e in tf.compat.v1.train.summary_iterator(path) if e.HasField("graph_def")]
    return events


def test_graph_written_once_in_train_folder(tmp_path):
    tb = str(tmp_path / "tb")
    _fit(str(tmp_path / "run"), tb)
    events = _graph_events(os.path.join(tb, "TRAIN"))
    assert len(events) == 1
    graph = tf.compat.v1.GraphDef.FromString(events[0].graph_def)
    names = [n.name for n in graph.node]
    assert _has_layer(names, "dense") and _has_layer(names, "out"), names
    assert any(n.endswith("/MatMul") for n in names)
    assert not _graph_events(os.path.join(tb, "EVAL"))  # only the TRAIN folder gets the graph


def test_graph_read_by_tensorboard(tmp_path):
    event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    tb = str(tmp_path / "tb")
    _fit(str(tmp_path / "run"), tb)
    acc = event_accumulator.EventAccumulator(os.path.join(tb, "TRAIN"))
    acc.Reload()
    assert acc.Tags()["graph"] is True
    names = [n.name for n in acc.Graph().node]
    assert _has_layer(names, "mlp") and _has_layer(names, "dense") and _has_layer(names, "out"), names
    assert "loss" in acc.Tags()["scalars"]  # the scalars are still there, next to the graph


def test_export_tensorboard_writes_graph_under_out_dir(tmp_path):
    out = str(tmp_path / "run")
    x, y = models.data()
    model = models.dense()
    hook = smd.KerasHook(out, export_tensorboard=True, save_config=smd.SaveConfig(save_interval=2),
                         include_collections=["losses"])
    model.fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[hook])
    hook.close()
    folders = [os.path.dirname(p) for p in glob.glob(os.path.join(out, "**", "*.tfevents"), recursive=True)
               if os.path.basename(os.path.dirname(p)) == "TRAIN" and "events" not in p.split(os.sep)]
    assert folders
    assert sum(len(_graph_events(f)) for f in set(folders)) == 1


def test_no_tensorboard_no_graph(tmp_path):
    out = str(tmp_path / "run")
    _fit(out, None)
    assert not glob.glob(os.path.join(out, "**", "TRAIN", "*.tfevents"), recursive=True)


def test_subclassed_model_without_input_spec_still_trains(tmp_path):
    tb = str(tmp_path / "tb")
    model = models.Subclassed()
    model.compile(optimizer="sgd", loss="mse")
    _fit(str(tmp_path / "run"), tb, model=model)
    assert os.path.isdir(os.path.join(tb, "TRAIN"))  # scalars still written; a graph only if traceable


def test_graph_of_a_model_with_dict_inputs(tmp_path):
    tb = str(tmp_path / "tb")
    x, y = models.two_data()
    model = models.two_in_two_out()
    hook = smd.KerasHook(str(tmp_path / "run"), tensorboard_dir=tb, include_collections=["losses"])
    model.fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[hook])
    hook.close()
    (event,) = _graph_events(os.path.join(tb, "TRAIN"))
    names = [n.name for n in tf.compat.v1.GraphDef.FromString(event.graph_def).node]
    for layer in ("h", "cat", "reg", "cls"):
        assert _has_layer(names, layer), (layer, names)
