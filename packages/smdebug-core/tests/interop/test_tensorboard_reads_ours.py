"""TensorBoard's own reader loads our ``events/*.tfevents`` files.

The original wrote a constant footer in ``events/`` files, which TensorBoard's reader rejects as a
data-CRC failure. Our records end with a checksum-steering field so that the footer is both the
original's constant and the true CRC of the payload. Here TensorBoard's record reader (the pure-Python
one it uses without TensorFlow, which verifies both CRCs) must accept every record, and its event
loaders and ``make_ndarray`` must give back the tags, steps and values we wrote.

The last test covers ``export_tensorboard=True``: TensorBoard summaries (scalars, histograms) under
``<out_dir>/tensorboard/<MODE>/`` as the original wrote them (spec §13).

TensorBoard's ``RawEventFileLoader`` swallows a CRC failure by silently ending the file, so the tests
count records: TensorBoard must yield exactly as many as the index lists.
"""

from __future__ import annotations

import glob
import json
import os
import struct

import numpy as np
import pytest

# tensorboard is a hard requirement of this module (not importorskip): a missing reader must fail.
from tensorboard.backend.event_processing import event_accumulator  # noqa: E402
from tensorboard.backend.event_processing.event_file_loader import EventFileLoader, RawEventFileLoader  # noqa: E402
from tensorboard.compat.proto import types_pb2  # noqa: E402
from tensorboard.compat.tensorflow_stub import errors as tb_errors  # noqa: E402
from tensorboard.compat.tensorflow_stub import pywrap_tensorflow  # noqa: E402
from tensorboard.util import tensor_util  # noqa: E402

from interop_support import InteropHook, Written, assert_same_array  # noqa: E402
from smdebug.core.modes import ModeKeys  # noqa: E402
from smdebug.core.reduction_config import ReductionConfig  # noqa: E402
from smdebug.core.save_config import SaveConfig  # noqa: E402
from smdebug.core.tfevent.records import MAGIC_FOOTER, encode_record, iter_records, masked_crc  # noqa: E402
from smdebug.core.tfevent.tensor_codec import encode_tensor_event  # noqa: E402

pytestmark = pytest.mark.interop

TRAIN, EVAL, GLOBAL = ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.GLOBAL


def _values(rng, g, rank):
    return {
        "weights/float16": (rng.normal(size=(3, 2)) * 10).astype(np.float16),
        "weights/float32": rng.normal(size=(4, 5)).astype(np.float32),
        "weights/float64": rng.normal(size=(7,)),
        "weights/int32": np.arange(-3, 3, dtype=np.int32) * (g + rank + 1),
        "weights/int64": np.array([2**50 + g, -(2**45)], dtype=np.int64),
        "weights/uint8": np.array([0, 128, 255, g], dtype=np.uint8),
        "weights/bool": np.array([[True, False], [g % 2 == 1, True]]),
        "weights/int8": np.array([-128, g, 127], dtype=np.int8),
        "weights/complex64": np.array([1 - 1j, g + 0.5j], dtype=np.complex64),
        "weights/zero_d": np.array(g + rank * 0.5, dtype=np.float32),
        "weights/empty_name_dims": np.ones((1, 1, 1), dtype=np.float32),
        "strings/s": np.array(["worker %d" % rank, "step %d" % g, "ünï"]),
        "loss": np.array([1.0 / (g + 1)], dtype=np.float32),
        "weights/large": rng.normal(size=(300, 400)).astype(np.float32),  # 480 kB, multi-byte lengths
        "weights/fortran": np.asfortranarray(rng.normal(size=(3, 5))),
    }


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """Two workers of our hook, TRAIN/EVAL/GLOBAL steps, raw tensors of many dtypes, reductions."""
    path = tmp_path_factory.mktemp("tb") / "run"
    written = Written(path, workers=["worker_0", "worker_1"])
    hooks = [
        InteropHook(
            out_dir=str(path), rank=rank, world_size=2, include_workers="all",
            save_config=SaveConfig(save_interval=1), include_collections=["weights", "losses", "strings"],
        )
        for rank in (0, 1)
    ]
    for hook in hooks:
        hook.get_collection("strings").include("^strings/")
        hook.get_collection("weights").reduction_config = ReductionConfig(
            reductions=["mean", "max"], norms=["l2"], abs_reductions=["min"], save_raw_tensor=True
        )
    rng = np.random.default_rng(5)
    for mode in [TRAIN, TRAIN, EVAL, GLOBAL, TRAIN]:
        for rank, hook in enumerate(hooks):
            hook.set_mode(mode)
            hook.begin_step()
            written.step(hook.step, mode, hook.mode_steps[mode])
            for name, value in _values(rng, hook.step, rank).items():
                assert hook.record(name, value)
                written.value(name, hook.step, f"worker_{rank}", value)
            hook.end_step()
    for hook in hooks:
        hook.close()
    return written


def _event_files(path):
    files = sorted(glob.glob(os.path.join(path, "events", "*", "*.tfevents")))
    assert files
    return files


def _index_for(path, event_file):
    step_dir, name = event_file.split(os.sep)[-2:]
    step = int(step_dir)
    index = os.path.join(path, "index", format(step // 1000, "09"), name.replace(".tfevents", ".json"))
    with open(index) as f:
        return step, json.load(f)


def test_tensorboard_record_reader_accepts_every_record(run):
    """TensorBoard's stub PyRecordReader checks the length CRC and the data CRC of each record."""
    total = 0
    for path in _event_files(run.path):
        reader = pywrap_tensorflow.PyRecordReader_New(path.encode(), 0, b"", None)
        n = 0
        while True:
            try:
                reader.GetNext()  # raises DataLossError on any CRC mismatch
            except tb_errors.OutOfRangeError:
                break
            n += 1
        _, index = _index_for(run.path, path)
        assert n == len(index["tensor_payload"]), path
        with open(path, "rb") as f:
            data = f.read()
        assert n == len(list(iter_records(data, path)))
        total += n
    assert total > 100


def test_raw_loader_yields_every_record(run):
    for path in _event_files(run.path):
        _, index = _index_for(run.path, path)
        records = list(RawEventFileLoader(path).Load())
        assert len(records) == len(index["tensor_payload"]), path
        with open(path, "rb") as f:
            data = f.read()
        for item, rec in zip(index["tensor_payload"], records):
            # the record TensorBoard returns is the one our index points at
            start = item["start_idx"]
            assert data[start + 12 : start + item["length"] - 4] == rec


def _tb_value(tensor_proto):
    if tensor_proto.dtype == types_pb2.DT_INVALID and tensor_proto.string_val:
        # strings are stored as the original did (dtype left unset), which make_ndarray cannot map
        shape = [d.size for d in tensor_proto.tensor_shape.dim]
        return np.array([s.decode("utf-8") for s in tensor_proto.string_val]).reshape(shape)
    return tensor_util.make_ndarray(tensor_proto)


def test_event_loader_tags_steps_and_values(run):
    seen = 0
    for path in _event_files(run.path):
        step, index = _index_for(run.path, path)
        worker = os.path.basename(path)[13:-len(".tfevents")]
        events = list(EventFileLoader(path).Load())
        assert [e.summary.value[0].tag for e in events] == [i["tensorname"] for i in index["tensor_payload"]]
        mode, mode_step = run.steps[step]
        for ev in events:
            assert ev.step == step and ev.wall_time > 0
            assert len(ev.summary.value) == 1
            value = ev.summary.value[0]
            # TensorBoard's SummaryMetadata has ONE plugin_data: the wire's two entries (mode_step,
            # mode) merge into the last one, so TensorBoard sees plugin "mode" with the mode number.
            assert value.metadata.plugin_data.plugin_name == "mode"
            assert value.metadata.plugin_data.content == str(ModeKeys[mode].value).encode()
            arr = _tb_value(value.tensor)
            tag = value.tag
            if tag.startswith("smdebug/reductions/"):
                assert arr.shape == (1,)
                continue
            assert_same_array(arr, run.tensors[tag][step][worker]["value"], f"{tag}@{step}/{worker}")
            seen += 1
    assert seen == sum(len(ws) for per in run.tensors.values() for ws in per.values())


def test_event_accumulator_loads_a_step_directory(run):
    step = 3  # GLOBAL step, both workers' files in one directory
    acc = event_accumulator.EventAccumulator(
        os.path.join(run.path, "events", format(step, "012")), size_guidance={event_accumulator.TENSORS: 0}
    )
    acc.Reload()
    tags = set(acc.Tags()["tensors"])
    assert set(run.tensors) <= tags
    assert "smdebug/reductions/l2/weights/float32" in tags
    events = acc.Tensors("weights/float32")
    assert [e.step for e in events] == [step, step]  # one per worker, in file-name order
    for e, worker in zip(events, ["worker_0", "worker_1"]):
        assert_same_array(tensor_util.make_ndarray(e.tensor_proto), run.tensors["weights/float32"][step][worker]["value"])


def test_control_the_originals_footer_is_rejected_by_tensorboard(tmp_path):
    """Why the steering suffix matters: the same event framed the original's way (constant footer,
    no suffix) is dropped by TensorBoard, while our framing of it is read."""
    payload = encode_tensor_event("w", np.arange(6, dtype=np.float32).reshape(2, 3), 3, ModeKeys.TRAIN, 1)
    header = struct.pack("<Q", len(payload))
    originals = header + struct.pack("<I", masked_crc(header)) + payload + struct.pack("<I", MAGIC_FOOTER)
    ours = encode_record(payload)
    assert ours[-4:] == originals[-4:] == struct.pack("<I", MAGIC_FOOTER)
    (tmp_path / "orig.tfevents").write_bytes(originals)
    (tmp_path / "ours.tfevents").write_bytes(ours)
    assert list(RawEventFileLoader(str(tmp_path / "orig.tfevents")).Load()) == []
    (event,) = list(EventFileLoader(str(tmp_path / "ours.tfevents")).Load())
    assert event.step == 3 and event.summary.value[0].tag == "w"
    np.testing.assert_array_equal(
        tensor_util.make_ndarray(event.summary.value[0].tensor), np.arange(6, dtype=np.float32).reshape(2, 3)
    )


def test_export_tensorboard_writes_scalars_and_histograms(tmp_path):
    """``export_tensorboard=True`` (spec §6.2/§13): TensorBoard files under ``<out_dir>/tensorboard/<MODE>/``
    with real CRC footers, holding scalar summaries of scalar-collection tensors (``loss``) and of
    ``save_scalar`` values (tag ``scalar/<name>``) at their global steps, and histograms
    ``<collection>/<tensor>`` of the other saved tensors (the tensor's name alone when it starts with its
    collection's name)."""
    out = tmp_path / "run"
    hook = InteropHook(
        out_dir=str(out), export_tensorboard=True, save_config=SaveConfig(save_interval=1),
        include_collections=["weights", "losses"],
    )
    expected = {}  # (mode, tag, global step) -> value
    rng = np.random.default_rng(9)
    for mode in [TRAIN, TRAIN, TRAIN, EVAL, EVAL]:
        hook.set_mode(mode)
        hook.begin_step()
        loss = np.float32(1.0 / (hook.step + 1))
        hook.record("loss", loss)
        hook.record("weights/w", rng.normal(size=(4, 4)).astype(np.float32))
        hook.save_scalar("acc", 0.25 * hook.step)
        expected[(mode.name, "loss", hook.step)] = float(loss)
        expected[(mode.name, "scalar/acc", hook.step)] = 0.25 * hook.step
        hook.end_step()
    hook.close()
    tb_dir = out / "tensorboard"
    files = sorted(glob.glob(str(tb_dir / "*" / "*.tfevents")))
    assert files, f"no TensorBoard files under {tb_dir}: export_tensorboard=True wrote nothing"
    scalars, histogram_tags = {}, set()
    for path in files:
        mode = os.path.basename(os.path.dirname(path))
        with open(path, "rb") as f:
            n_records = len(list(iter_records(f.read(), path)))
        assert len(list(RawEventFileLoader(path).Load())) == n_records, f"TensorBoard rejected records of {path}"
        for ev in EventFileLoader(path).Load():
            for v in ev.summary.value:
                plugin = v.metadata.plugin_data.plugin_name
                if plugin == "scalars":
                    scalars[(mode, v.tag, ev.step)] = float(tensor_util.make_ndarray(v.tensor))
                elif plugin == "histograms":
                    histogram_tags.add((mode, v.tag))
    for key, value in expected.items():
        assert key in scalars, f"TensorBoard finds no scalar {key}; it has {sorted(scalars)[:10]}"
        assert scalars[key] == pytest.approx(value, rel=1e-6), key
    assert ("TRAIN", "weights/w") in histogram_tags  # the original wrote weights/weights/w
