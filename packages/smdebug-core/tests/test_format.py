"""Byte-level format: record framing, CRCs, tensor encoding of every dtype, index files."""

import json
import struct

import numpy as np
import pytest
from crc32c import crc32c

from smdebug.core.modes import ModeKeys
from smdebug.core.tfevent.index_file import build_index, parse_index_file
from smdebug.core.tfevent.records import (
    MAGIC_FOOTER,
    decode_record,
    encode_record,
    iter_records,
    masked_crc,
)
from smdebug.core.tfevent.tensor_codec import (
    decode_tensor_event,
    encode_tensor_event_parts,
    encode_tensor_event,
    make_numpy_array,
    numpy_to_tensor_proto,
    tensor_proto_to_numpy,
)
from smdebug.exceptions import EventFileCorrupted, IndexReaderException, SMDebugTypeError


def test_crc32c_check_value_and_length_vector():
    assert crc32c(b"123456789") == 0xE3069283
    header = struct.pack("<Q", 97)
    assert masked_crc(header) == 0x64908F00
    assert MAGIC_FOOTER == 0x062DC0B3


@pytest.mark.parametrize("n", [0, 1, 7, 97, 4096, 100_000])
def test_records_have_magic_footer_that_is_also_the_true_crc(n):
    payload = bytes(range(256)) * (n // 256) + bytes(n % 256)
    rec = encode_record(payload)
    (footer,) = struct.unpack("<I", rec[-4:])
    assert footer == MAGIC_FOOTER
    decoded, end = decode_record(rec)
    decoded = bytes(decoded)
    assert end == len(rec)
    assert decoded.startswith(payload)
    assert masked_crc(decoded) == footer  # TensorBoard's check


def test_plain_records_use_real_crc():
    rec = encode_record(b"hello", compat_footer=False)
    assert struct.unpack("<I", rec[-4:])[0] == masked_crc(b"hello")
    assert bytes(decode_record(rec)[0]) == b"hello"


def test_reader_accepts_original_constant_footer():
    # smdebug 1.0.x writes the constant without steering bytes: the payload CRC does not match it.
    payload = b"written by the original"
    header = struct.pack("<Q", len(payload))
    rec = header + struct.pack("<I", masked_crc(header)) + payload + struct.pack("<I", MAGIC_FOOTER)
    assert bytes(decode_record(rec)[0]) == payload


def test_corruptions_are_detected():
    rec = encode_record(encode_tensor_event("w", np.arange(6, dtype=np.float32), 3, ModeKeys.TRAIN, 1))
    flipped = bytearray(rec)
    flipped[30] ^= 0x01
    with pytest.raises(EventFileCorrupted, match="checksum"):
        decode_record(bytes(flipped), path="f.tfevents")
    bad_len = bytearray(rec)
    bad_len[0] ^= 0x01
    with pytest.raises(EventFileCorrupted, match="length checksum"):
        decode_record(bytes(bad_len))
    with pytest.raises(EventFileCorrupted, match="Truncated"):
        decode_record(rec[:-3], path="f.tfevents")
    with pytest.raises(EventFileCorrupted, match="Truncated record header"):
        decode_record(rec[:5])
    with pytest.raises(EventFileCorrupted) as info:
        list(iter_records(rec + rec[:20], path="x.tfevents"))
    assert info.value.path == "x.tfevents"


DTYPES = [np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
          np.uint32, np.uint64, np.complex64, np.complex128, np.bool_]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(), (1,), (2, 3), (0,), (3, 0, 2), (2, 1, 2, 2)])
def test_tensor_roundtrip_every_dtype_and_shape(dtype, shape):
    rng = np.random.default_rng(1)
    arr = (rng.normal(size=shape) * 100).astype(dtype)
    payload = encode_tensor_event("layer/w:0", arr, 12, ModeKeys.EVAL, 4, wall_time=1.5)
    (tag, value, step, mode, mode_step), = list(decode_tensor_event(payload))
    assert (tag, step, mode, mode_step) == ("layer/w:0", 12, ModeKeys.EVAL, 4)
    assert value.dtype == np.dtype(dtype)
    assert value.shape == shape
    np.testing.assert_array_equal(value, arr)


def test_big_endian_and_non_contiguous_arrays():
    arr = np.arange(12, dtype=">f4").reshape(3, 4)[:, ::2]
    value = tensor_proto_to_numpy(numpy_to_tensor_proto(arr, "t"))
    np.testing.assert_array_equal(value, arr)
    assert value.dtype == np.float32


def test_strings():
    arr = np.array(["a", "héllo", ""])
    value = tensor_proto_to_numpy(numpy_to_tensor_proto(arr, "s"))
    assert value.tolist() == ["a", "héllo", ""]
    value2 = tensor_proto_to_numpy(numpy_to_tensor_proto(np.array([["x", "y"], ["z", "w"]]), "s"))
    assert value2.shape == (2, 2)


def test_make_numpy_array_conventions():
    assert make_numpy_array(np.float64(2.5)).shape == (1,)
    assert make_numpy_array(3).shape == (1,)
    assert make_numpy_array(np.array(3.0)).shape == ()
    assert make_numpy_array([1, 2]).shape == (2,)
    as_array = make_numpy_array({"a": 1})  # as in smdebug 1.0.x: a 0-d object array (hooks refuse it)
    assert as_array.shape == () and as_array.dtype == object and as_array.item() == {"a": 1}
    with pytest.raises(SMDebugTypeError):
        make_numpy_array(object())
    with pytest.raises(SMDebugTypeError, match="unsupported dtype"):
        numpy_to_tensor_proto(np.array(["2020-01-01"], dtype="datetime64[D]"), "d")


def test_worked_example_event_length():
    # float32 2x3 tensor "w", TRAIN, mode_step 1, global step 3: a 97-byte Event in the original;
    # ours adds the 5 checksum-steering bytes.
    payload = encode_tensor_event("w", np.zeros((2, 3), np.float32), 3, ModeKeys.TRAIN, 1, wall_time=1.0)
    assert len(payload) == 97
    rec = encode_record(payload)
    assert len(rec) == 113 + 5


def test_index_roundtrip_and_lazy_meta():
    raw = build_index(ModeKeys.TRAIN, 1, "events/000000000003/000000000003_worker_0.tfevents",
                      [{"tensorname": "w", "start_idx": 0, "length": 113},
                       {"tensorname": "smdebug/reductions/abs_l2/w", "start_idx": 113, "length": 90}],
                      [{"tensorname": "w", "originalname": "w", "shape": [2, 3]}])
    doc = json.loads(raw)
    assert list(doc) == ["meta", "tensor_payload", "shape_payload"]
    f = parse_index_file("idx.json", 3, "worker_0", raw)
    assert (f.mode, f.mode_step, f.parsed) == (ModeKeys.TRAIN, 1, False)
    assert f.entries["w"].location == (0, 113)
    assert f.entries["w"].shape == (2, 3)  # merged, not replaced (original quirk)
    assert f.reductions["w"][("l2", True)].location == (113, 90)
    assert set(f.tensor_names()) == {"w"}
    assert f.extent == (0, 203)  # every record it locates, reductions included (a step is read at once)


def test_index_locations_given_as_strings_or_floats_are_converted():
    raw = (b'{"meta": {"mode": "TRAIN", "mode_step": 1}, "tensor_payload": [{"tensorname": "a", "start_idx": "40", '
           b'"length": 20.0}, {"tensorname": "b", "start_idx": 0, "length": 40}]}')
    f = parse_index_file("idx.json", 1, "worker_0", raw)
    assert f.locations == {"a": (40, 20), "b": (0, 40)}
    assert f.extent == (0, 60)


@pytest.mark.parametrize(
    "raw, match",
    [
        (b"", "Empty/Corrupt"),
        (b"{not json", "Empty/Corrupt"),
        (b"[]", "JSON object"),
        (b'{"meta": {}}', "no meta"),
        (b'{"meta": {"mode": "TRAINING", "mode_step": 1}, "tensor_payload": []}', "invalid meta"),
        # a mode step that is not an int (int() read 30.7, "30" and true as 30, 30 and 1)
        (b'{"meta": {"mode": "TRAIN", "mode_step": 30.7}, "tensor_payload": []}', "mode_step must be an integer, not 30.7"),
        (b'{"meta": {"mode": "TRAIN", "mode_step": " 30 "}, "tensor_payload": []}', "mode_step must be an integer"),
        (b'{"meta": {"mode": "TRAIN", "mode_step": true}, "tensor_payload": []}', "mode_step must be an integer, not True"),
        (b'{"meta": {"mode": "TRAIN", "mode_step": 100000000000000000000}, "tensor_payload": []}', "out of range"),
        (b'{"meta": {"mode": "TRAIN", "mode_step": 1}}', "neither"),
        (b'{"meta": {"mode": "TRAIN", "mode_step": 1}, "tensor_payload": [{"tensorname": "w"}]}', "malformed"),
        (b'{"meta": {"mode": "TRAIN", "mode_step": 1}, "tensor_payload": [{"tensorname": "w", "start_idx": -1, "length": 3}]}', "malformed"),
        (b'{"meta": {"mode": "TRAIN", "mode_step": 1}, "tensor_payload": [{"tensorname": 5, "start_idx": 0, "length": 3}]}', "malformed"),
    ],
)
def test_corrupt_index_files_raise_specific_error(raw, match):
    with pytest.raises(IndexReaderException, match=match) as info:
        f = parse_index_file("index/000000000/000000000007_worker_0.json", 7, "worker_0", raw)
        f.entries
    assert info.value.path == "index/000000000/000000000007_worker_0.json"
    assert info.value.step == 7


@pytest.mark.parametrize("dtype", DTYPES + [np.str_], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(), (1,), (3, 5), (0, 2)])
def test_zero_copy_encoding_is_the_same_event(dtype, shape):
    from smdebug.core.tfevent.proto.event_pb2 import Event
    from smdebug.core.tfevent.records import encode_record_parts

    arr = (np.arange(int(np.prod(shape))) % 7).reshape(shape).astype(dtype)
    canonical = encode_tensor_event("a/b", arr, 9, ModeKeys.PREDICT, 2, wall_time=3.0)
    head, body = encode_tensor_event_parts("a/b", arr, 9, ModeKeys.PREDICT, 2, wall_time=3.0)
    assert Event.FromString(bytes(head) + bytes(body)) == Event.FromString(canonical)
    record = b"".join(bytes(p) for p in encode_record_parts(bytes(head), body))
    payload, end = decode_record(record)
    assert end == len(record) and masked_crc(payload) == MAGIC_FOOTER
    (tag, value, step, mode, mode_step), = list(decode_tensor_event(payload))
    assert (tag, step, mode, mode_step) == ("a/b", 9, ModeKeys.PREDICT, 2)
    np.testing.assert_array_equal(value, arr)
    assert value.shape == shape


@pytest.mark.parametrize("step,mode_step,wall_time", [(0, 0, 0.0), (1, 0, 1.5), (127, 128, 1e9), (2**40, 2**33, 1.75e9)])
def test_zero_copy_encoding_of_repeated_tensors_follows_step_and_mode(step, mode_step, wall_time):
    """The encoder reuses serialized pieces across calls (same name, dtype, shape): every call must still
    give the canonical Event of its own step, mode step, mode and wall time."""
    from smdebug.core.tfevent.proto.event_pb2 import Event

    arr = np.arange(6, dtype=np.float32).reshape(2, 3)
    for mode in (ModeKeys.TRAIN, ModeKeys.EVAL):
        for ms in (mode_step, mode_step + 1):
            head, body = encode_tensor_event_parts("w", arr, step, mode, ms, wall_time=wall_time)
            canonical = encode_tensor_event("w", arr, step, mode, ms, wall_time=wall_time)
            assert Event.FromString(bytes(head) + bytes(body)) == Event.FromString(canonical)


def test_constant_footer_suffix_shortcut_matches_the_general_forging():
    """The checksum-steering bytes are computed with one XOR; the general routine must agree for any CRC."""
    import random

    from smdebug.core.tfevent.records import MAGIC_CRC, _forge_suffix, _magic_suffix

    rng = random.Random(0)
    for crc in [0, 0xFFFFFFFF, 0x12345678] + [rng.getrandbits(32) for _ in range(2000)]:
        suffix = _magic_suffix(crc)
        assert suffix == _forge_suffix(crc, MAGIC_CRC)


def test_large_bodies_checksummed_on_a_helper_thread_frame_correctly(tmp_path):
    """Bodies from PARALLEL_CRC_MIN_BYTES up are checksummed while they are written: the records must be
    the same, and verify both ways (our reader, TensorBoard's real-CRC check)."""
    from smdebug.core.storage.local import LocalStorage
    from smdebug.core.tfevent.step_writer import PARALLEL_CRC_MIN_BYTES, StepWriter
    from smdebug.core.tfevent.tensor_codec import decode_tensor_record

    rng = np.random.default_rng(0)
    sizes = [PARALLEL_CRC_MIN_BYTES - 1, PARALLEL_CRC_MIN_BYTES, 3 * PARALLEL_CRC_MIN_BYTES + 3]
    arrays = {f"t{n}": rng.integers(0, 255, n, dtype=np.uint8) for n in sizes}
    storage = LocalStorage(str(tmp_path))
    w = StepWriter(storage, 5, "worker_0", ModeKeys.TRAIN, 5)
    for name, arr in arrays.items():
        w.write_tensor(name, arr, ModeKeys.TRAIN, 5, wall_time=1.0)
    event_key = w.event_key
    entries = list(w._tensors)
    w.close()
    raw = storage.read(event_key)
    records = list(iter_records(raw))
    assert len(records) == len(arrays)
    for (offset, length, payload), (name, start, size) in zip(records, entries):
        assert (offset, length) == (start, size)
        (footer,) = struct.unpack("<I", raw[offset + length - 4:offset + length])
        assert footer == MAGIC_FOOTER == masked_crc(payload)
        value = decode_tensor_record(raw[offset:offset + length])
        np.testing.assert_array_equal(value, arrays[name])


def _protobuf_value(payload: bytes) -> np.ndarray:
    """The tensor of an Event payload, decoded by protobuf alone (the reference)."""
    from smdebug.core.tfevent.proto.event_pb2 import Event
    from smdebug.core.tfevent.tensor_codec import tensor_proto_to_numpy

    return tensor_proto_to_numpy(Event.FromString(payload).summary.value[0].tensor)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.uint16, np.complex64, np.bool_],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("layout", ["zero-copy parts", "canonical protobuf"])
def test_large_values_decode_without_copies_like_protobuf(dtype, layout):
    from smdebug.core.tfevent.content_span import locate_tensor_content
    from smdebug.core.tfevent.records import encode_record_parts
    from smdebug.core.tfevent.tensor_codec import ZERO_COPY_MIN_BYTES, decode_tensor_record

    n = ZERO_COPY_MIN_BYTES // np.dtype(dtype).itemsize + 7
    arr = (np.arange(n) % 251).astype(dtype).reshape(-1, 1)
    if layout == "canonical protobuf":  # protobuf's own field order: the tensor before the metadata
        head, body = encode_tensor_event("w", arr, 3, ModeKeys.TRAIN, 1, wall_time=2.0), b""
    else:
        head, body = encode_tensor_event_parts("w", arr, 3, ModeKeys.TRAIN, 1, wall_time=2.0)
    record = b"".join(bytes(p) for p in encode_record_parts(bytes(head), body))
    payload, _ = decode_record(record)
    assert locate_tensor_content(payload) is not None
    value = decode_tensor_record(record)
    np.testing.assert_array_equal(value, arr)
    assert value.dtype == arr.dtype and value.shape == arr.shape and not value.flags.writeable
    np.testing.assert_array_equal(value, _protobuf_value(bytes(payload)))


def test_zero_copy_walk_leaves_unusual_encodings_to_protobuf():
    """Where protobuf would merge or override (a repeated summary, a second tensor_content) or the value is
    not a tensor, the walk declines and protobuf's answer is used."""
    from smdebug.core.tfevent.content_span import locate_tensor_content
    from smdebug.core.tfevent.proto.event_pb2 import Event

    arr = np.arange(20000, dtype=np.float32)
    payload = encode_tensor_event("w", arr, 3, ModeKeys.TRAIN, 1, wall_time=2.0)
    assert locate_tensor_content(payload) is not None
    ev = Event.FromString(payload)
    # A second serialized summary appended: protobuf merges the two Summary messages (two values).
    doubled = payload + Event(summary=ev.summary).SerializeToString()
    assert locate_tensor_content(doubled) is None
    # A later tensor_content overrides the first: appended as a second Event carrying only that field.
    override = Event()
    override.summary.value.add().tensor.tensor_content = np.ones(20000, np.float32).tobytes()
    assert locate_tensor_content(payload + override.SerializeToString()) is None
    # A simple_value instead of a tensor
    other = Event()
    other.summary.value.add(tag="s", simple_value=1.0)
    assert locate_tensor_content(other.SerializeToString()) is None
    # Truncated lengths
    for cut in (1, 7, len(payload) // 2, len(payload) - 1):
        assert locate_tensor_content(payload[:cut]) is None



def test_zero_copy_walk_agrees_with_protobuf_on_mutated_payloads():
    """Whenever the walk accepts a payload that protobuf also parses, both give the same tensor."""
    hypothesis = pytest.importorskip("hypothesis")
    from hypothesis import strategies as st

    from smdebug.core.tfevent.content_span import locate_tensor_content
    from smdebug.core.tfevent.proto.event_pb2 import Event
    from smdebug.core.tfevent.proto.tensor_pb2 import TensorProto
    from smdebug.core.tfevent.tensor_codec import tensor_proto_to_numpy

    seeds = []
    for arr in (np.arange(12, dtype=np.float32).reshape(3, 4), np.arange(5, dtype=np.int64)):
        head, body = encode_tensor_event_parts("w", arr, 3, ModeKeys.EVAL, 1, wall_time=2.0)
        seeds += [bytes(head) + bytes(body), encode_tensor_event("w", arr, 3, ModeKeys.EVAL, 1, wall_time=2.0)]

    @hypothesis.settings(max_examples=400, deadline=None, database=None)
    @hypothesis.given(st.sampled_from(seeds), st.lists(st.tuples(st.integers(0, 1 << 12), st.integers(0, 255)),
                                                       max_size=4), st.integers(0, 1 << 12))
    def check(seed, edits, cut):
        b = bytearray(seed)
        for pos, val in edits:
            b[pos % len(b)] = val
        payload = bytes(b[: max(1, len(b) - cut % 8)])
        found = locate_tensor_content(payload)
        if found is None:
            return
        try:
            value = Event.FromString(payload).summary.value[0]
            reference = tensor_proto_to_numpy(value.tensor)
        except Exception:  # noqa: BLE001 - protobuf (or the shape check) refuses it: nothing to agree with
            return
        rest, start, end, tag = found
        assert tag.decode("utf-8") == value.tag
        ours = tensor_proto_to_numpy(TensorProto.FromString(rest), payload[start:end])
        assert ours.dtype == reference.dtype and ours.shape == reference.shape
        np.testing.assert_array_equal(ours, reference)

    check()


def test_large_tensor_bytes_are_aligned_in_the_file_and_read_as_aligned_views(tmp_path):
    from smdebug.core.storage.local import LocalStorage
    from smdebug.core.tfevent.step_writer import StepWriter
    from smdebug.core.tfevent.tensor_codec import ALIGN_MIN_BYTES, CONTENT_ALIGNMENT, decode_tensor_record

    storage = LocalStorage(str(tmp_path))
    w = StepWriter(storage, 2, "worker_0", ModeKeys.TRAIN, 2)
    arrays = {"small": np.arange(3, dtype=np.float64)}
    for i, n in enumerate([ALIGN_MIN_BYTES // 8, ALIGN_MIN_BYTES // 8 + 1, 70_001]):
        arrays[f"big{i}"] = np.arange(n, dtype=np.float64) * (i + 1)
        arrays[f"mid{i}"] = np.arange(i + 5, dtype=np.int8)  # shifts the next record's start
    for name, arr in arrays.items():
        w.write_tensor(name, arr, ModeKeys.TRAIN, 2, wall_time=1.0)
    entries = {name: (start, length) for name, start, length in w._tensors}
    key = w.event_key
    w.close()
    raw = storage.read(key)  # the whole file: its first byte is 16-byte aligned in memory, as a file map's is
    for name, arr in arrays.items():
        start, length = entries[name]
        record = memoryview(raw)[start:start + length]
        if arr.nbytes >= ALIGN_MIN_BYTES:
            content = arr.tobytes()
            assert (start + bytes(record).index(content)) % CONTENT_ALIGNMENT == 0, name
        value = decode_tensor_record(record)
        np.testing.assert_array_equal(value, arr)
        if arr.nbytes >= ALIGN_MIN_BYTES:  # a view on the bytes read, not a copy
            assert value.flags.aligned and np.shares_memory(value, np.frombuffer(raw, np.uint8)), name


@pytest.mark.parametrize("names", [["w"], ["a/b", "é\u2603", 'q"uote\\back\nline', "x" * 300]])
def test_index_text_from_the_writer_is_what_json_dumps_gives(names):
    """The writer formats index entries directly; the text must be exactly json.dumps' (so the original and
    any JSON reader parse the same document)."""
    import json

    tensors = [(n, i * 100, 97 + i) for i, n in enumerate(names)]
    shapes = [{"tensorname": "s", "originalname": "s:0", "shape": [2, 3]}]
    for shape_payload in ([], shapes):
        fast = build_index(ModeKeys.EVAL, 4, "events/000000000004/000000000004_worker_0.tfevents", tensors,
                           shape_payload)
        as_dicts = [{"tensorname": n, "start_idx": s, "length": ln} for n, s, ln in tensors]
        slow = build_index(ModeKeys.EVAL, 4, "events/000000000004/000000000004_worker_0.tfevents", as_dicts,
                           shape_payload)
        assert fast == slow
        assert json.loads(fast)["tensor_payload"] == as_dicts
