"""numpy array <-> TensorProto, and tensor Events (one tensor per event, mode in plugin metadata)."""

from __future__ import annotations

import math
import struct
import sys
import time
from typing import Optional

import numpy as np

from smdebug.core.locations import MAX_STEP
from smdebug.core.modes import MODE_PLUGIN_NAME, MODE_STEP_PLUGIN_NAME, ModeKeys
from smdebug.core.names import clipped
from smdebug.core.reductions import parse_reduction_tensor_name
from smdebug.core.tfevent.proto.event_pb2 import Event
from smdebug.core.tfevent.proto.tensor_pb2 import TensorProto
from smdebug.core.tfevent.content_span import _fields, _only_child, _varint as _read_varint, locate_tensor_content
from smdebug.core.tfevent.proto.summary_pb2 import Summary
from smdebug.core.tfevent.records import decode_record
from smdebug.core.tfevent.stored_dtypes import STORED, stored_form
from smdebug.exceptions import EventFileCorrupted, SMDebugTypeError, SMDebugValueError

# numpy dtype -> TF DataType number (types.proto); other numeric dtypes are stored as one of these
# (stored_dtypes.stored_form)
_NP_TO_DT = {npdt: number for npdt, (number, _) in STORED.items()}
# Reading decodes every type we write (the original decoded INT8 as uint8 and failed on
# INT16/UINT16/UINT32/UINT64/COMPLEX64).
_DT_TO_NP = {dt: npdt.newbyteorder("<") for npdt, dt in _NP_TO_DT.items()}
_LITTLE_ENDIAN_HOST = sys.byteorder == "little"  # the stored byte order: values need no conversion
_DT_STRING = 7
_DT_INVALID = 0
_DT_REF_OFFSET = 100

# Values of TensorProto's typed repeated fields, used when tensor_content is absent (TF-written files).
_FIELD_FOR_DT = {1: "float_val", 2: "double_val", 3: "int_val", 4: "int_val", 5: "int_val", 6: "int_val",
                 9: "int64_val", 10: "bool_val", 17: "int_val", 19: "half_val", 22: "int64_val", 23: "int64_val"}


def make_numpy_array(value) -> np.ndarray:
    """Normalise what a user or plugin handed us into an ndarray (the on-disk conventions).

    ndarrays keep their shape (0-d stays 0-d); Python/numpy scalars become shape (1,) as in the original;
    lists/tuples go through ``np.asarray``; strings become 1-element string arrays; a dict becomes a
    0-d object array, as in the original (hooks refuse to save dicts: see ``BaseHook.to_numpy``).
    """
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (bool, int, float, complex, np.generic)):
        return np.array([value])
    if isinstance(value, (str, bytes)):
        return np.array([value])
    if isinstance(value, (list, tuple)):
        return np.asarray(value)
    if isinstance(value, dict):
        return np.array(value)
    raise SMDebugTypeError(f"Cannot save a value of type {type(value).__name__} as a tensor")


def _numeric_dtype(arr: np.ndarray, tag: str) -> int:
    native = arr.dtype if arr.dtype.byteorder in ("=", "|") else arr.dtype.newbyteorder("=")
    dt = _NP_TO_DT.get(native)
    if dt is None:
        raise SMDebugTypeError(f"Cannot save tensor {tag!r}: unsupported dtype {arr.dtype}")
    return dt


def _fill_shape(tp: TensorProto, shape, tag: str) -> None:
    dims = tp.tensor_shape.dim
    for d in shape:
        dim = dims.add()
        dim.size = d
        dim.name = f"{tag}_{d}"


def _little_endian(arr: np.ndarray) -> np.ndarray:
    return arr.astype(arr.dtype.newbyteorder("<")) if arr.dtype.byteorder == ">" else arr


def numpy_to_tensor_proto(arr: np.ndarray, tag: str, out: Optional[TensorProto] = None) -> TensorProto:
    tp = TensorProto() if out is None else out
    arr = stored_form(arr)
    _fill_shape(tp, arr.shape, tag)
    if arr.dtype.kind in "USO":
        tp.dtype = _DT_INVALID  # the original leaves strings as DT_INVALID + string_val; keep that
        tp.string_val.extend(
            (v if isinstance(v, bytes) else str(v).encode("utf-8")) for v in arr.reshape(-1).tolist()
        )
        return tp
    tp.dtype = _numeric_dtype(arr, tag)
    tp.tensor_content = np.ascontiguousarray(_little_endian(arr)).tobytes()
    return tp


#: A record states its shape; without content bytes (TF's "splat" form: one value for every element)
#: the decoder would allocate whatever the shape says. Refuse more than this many bytes that way: a record
#: of a few bytes must not become an arbitrarily large array.
MAX_SPLAT_BYTES = 16 << 20
#: numpy's fixed-width string arrays take (longest string) x (count) x 4 bytes. A string tensor is
#: returned that way (as the original did) only while that is at most this many times the bytes of its
#: strings (plus a little); otherwise, e.g. one long string among many short ones, as an array of Python
#: str objects (dtype object), whose size follows the record's.
STRING_EXPANSION_LIMIT = 8
#: more dimensions than numpy supports cannot be a tensor we wrote (and are not multiplied out)
MAX_RANK = 64


def _string_array(raw_values) -> np.ndarray:
    values = [v.decode("utf-8", errors="replace") for v in raw_values]
    if not values:
        return np.array([], dtype=str)
    longest = max(map(len, values))
    stored = sum(map(len, raw_values)) + 2 * len(values)  # each value costs its bytes + key + length
    if longest * len(values) * 4 <= STRING_EXPANSION_LIMIT * stored + 4096:
        return np.array(values)
    arr = np.empty(len(values), dtype=object)
    arr[:] = values
    return arr


def tensor_proto_to_numpy(tp: TensorProto, content=None) -> np.ndarray:
    """The array a TensorProto holds. ``content``: its ``tensor_content`` given separately (a view on the
    bytes read, see :mod:`~smdebug.core.tfevent.content_span`), for a ``tp`` parsed without it.

    Memory stays bounded by the record's size: content must match the shape exactly, strings never
    become a fixed-width array much larger than they are, and a splat is capped (MAX_SPLAT_BYTES)."""
    dims = tp.tensor_shape.dim
    if len(dims) > MAX_RANK:
        raise SMDebugValueError(f"Tensor has {len(dims)} dimensions, more than {MAX_RANK}")
    shape = (dims[0].size,) if len(dims) == 1 else tuple([d.size for d in dims])  # (1-d: the usual case)
    if shape and min(shape) < 0:
        raise SMDebugValueError(f"Tensor shape {shape} has a negative dimension")
    dt = tp.dtype
    if dt >= _DT_REF_OFFSET:
        dt -= _DT_REF_OFFSET
    if dt in (_DT_INVALID, _DT_STRING):
        # Checked before decoding, as numeric content is: a string record whose values do not fill its
        # shape was returned flat, as if it held the whole tensor.
        # (A proto with neither a shape nor values still reads as an empty array, as it did.)
        strings = tp.string_val
        count = math.prod(shape)
        if len(strings) == count:
            return _string_array(strings).reshape(shape)
        if shape or strings:
            raise SMDebugValueError(f"String tensor holds {len(strings)} values, shape {shape} needs {count}")
        return _string_array(strings)
    npdt = _DT_TO_NP.get(dt)
    if npdt is None:
        raise SMDebugTypeError(f"Unsupported tensor dtype number {tp.dtype}")
    count = math.prod(shape) if shape else 1
    if content is None:
        content = tp.tensor_content  # each attribute access copies the bytes: read it once
    if len(content):
        if len(content) != count * npdt.itemsize:
            raise SMDebugValueError(
                f"Tensor content has {len(content)} bytes, shape {shape} of {npdt} needs {count * npdt.itemsize}"
            )
        arr = np.frombuffer(content, dtype=npdt)
        if not arr.flags.aligned:
            # A view into a record starts wherever the record put it; numpy is slower on misaligned data,
            # so such an array gets one aligned copy (read-only, like every value we return).
            arr = arr.copy()
            arr.flags.writeable = False
        if not _LITTLE_ENDIAN_HOST:
            arr = arr.astype(npdt.newbyteorder("="))
        return arr if len(shape) == 1 else arr.reshape(shape)  # (frombuffer's array is 1-d already)
    if count == 0:
        return np.zeros(shape, dtype=npdt)
    field = _FIELD_FOR_DT.get(dt)
    if field is None:
        raise SMDebugTypeError(f"Tensor of dtype number {tp.dtype} has no content")
    raw = list(getattr(tp, field))
    if dt == 19:
        vals = np.array(raw, dtype=np.uint16).view(np.float16)
    else:
        vals = np.array(raw, dtype=npdt.newbyteorder("="))
    if vals.size == 1 and count > 1:  # TF's splat encoding
        if count * npdt.itemsize > MAX_SPLAT_BYTES:
            raise SMDebugValueError(f"Tensor of shape {shape} repeats one value over more than {MAX_SPLAT_BYTES} bytes")
        vals = np.full(count, vals[0], dtype=vals.dtype)
    return vals.reshape(shape)


def encode_tensor_event(
    tag: str, arr: np.ndarray, step: int, mode: ModeKeys, mode_step: int, wall_time: Optional[float] = None
) -> bytes:
    ev = Event()
    ev.wall_time = time.time() if wall_time is None else wall_time
    ev.step = step
    value = ev.summary.value.add()
    value.tag = tag
    plugin_data = value.metadata.plugin_data
    pd = plugin_data.add()
    pd.plugin_name = MODE_STEP_PLUGIN_NAME
    pd.content = str(mode_step)
    pd = plugin_data.add()
    pd.plugin_name = MODE_PLUGIN_NAME
    pd.content = str(mode.value)
    numpy_to_tensor_proto(arr, tag, value.tensor)
    return ev.SerializeToString()




def _varint(n: int) -> bytes:
    if n < 0x80:
        return _SMALL_VARINTS[n]
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


_SMALL_VARINTS = [bytes((i,)) for i in range(0x80)]


def _length_delimited(field_number: int, length: int) -> bytes:
    """Key and length of a length-delimited protobuf field (wire type 2)."""
    return _varint((field_number << 3) | 2) + _varint(length)


# Field numbers from event.proto / summary.proto / tensor.proto.
_EVENT_SUMMARY, _SUMMARY_VALUE, _VALUE_TENSOR, _TENSOR_CONTENT = 5, 1, 8, 4
_EVENT_SUMMARY_KEY = _varint((_EVENT_SUMMARY << 3) | 2)
_SUMMARY_VALUE_KEY = _varint((_SUMMARY_VALUE << 3) | 2)

# The serialized pieces that repeat from step to step are built by protobuf once and reused: a hook writes
# the same tensors (name, dtype, shape) at every saved step, and all tensors of a step share its mode and
# mode step. This is most of the encoding cost of a small tensor. The caches are plain dicts (cleared when
# they grow past a bound): their keys are cheap to hash, unlike dtype or enum objects.
_MAX_CACHED = 8192
_tensor_pieces: dict = {}
_metadata_pieces: dict = {}


def _pieces_for(tag: str, arr: np.ndarray, key) -> tuple:
    """(Value tag field, Value.tensor key and length + the TensorProto up to its content) of ``key``."""
    dtype = _numeric_dtype(arr, tag)  # raises for dtypes we cannot save: never cached
    nbytes = arr.size * arr.dtype.itemsize
    tensor = TensorProto()
    tensor.dtype = dtype
    _fill_shape(tensor, arr.shape, tag)
    tensor_head = tensor.SerializeToString() + _length_delimited(_TENSOR_CONTENT, nbytes)
    value = Event().summary.value.add()
    value.tag = tag
    pieces = (value.SerializeToString(), _length_delimited(_VALUE_TENSOR, len(tensor_head) + nbytes) + tensor_head)
    if len(_tensor_pieces) >= _MAX_CACHED:
        _tensor_pieces.clear()
    _tensor_pieces[key] = pieces
    return pieces


def _metadata_for(mode: ModeKeys, mode_step: int) -> bytes:
    """A Summary.Value holding only the plugin metadata that carries the mode and the mode step
    (concatenated serialized messages merge when parsed)."""
    key = (id(mode), mode_step)
    found = _metadata_pieces.get(key)
    if found is None:
        value = Event().summary.value.add()
        pd = value.metadata.plugin_data.add()
        pd.plugin_name = MODE_STEP_PLUGIN_NAME
        pd.content = str(mode_step)
        pd = value.metadata.plugin_data.add()
        pd.plugin_name = MODE_PLUGIN_NAME
        pd.content = str(mode.value)
        found = value.SerializeToString()
        if len(_metadata_pieces) >= 64:
            _metadata_pieces.clear()
        _metadata_pieces[key] = found
    return found


_pack_double = struct.Struct("<d").pack
_EVENT_WALL_TIME_KEY = bytes(((1 << 3) | 1,))  # Event.wall_time: field 1, fixed64
_EVENT_STEP_KEY = bytes((2 << 3,))  # Event.step: field 2, varint


def _event_head(wall_time: float, step: int) -> bytes:
    """Event.wall_time and Event.step, as protobuf serialises them (zero values are omitted, like protobuf)."""
    head = _EVENT_WALL_TIME_KEY + _pack_double(wall_time) if wall_time else b""
    if step:
        head += _EVENT_STEP_KEY + _varint(step if step > 0 else step & 0xFFFFFFFFFFFFFFFF)
    return head


#: Tensor bytes of at least this many bytes start on a multiple of CONTENT_ALIGNMENT in the event file, so
#: a reader can hand out a view on them (content_span.py) that numpy treats as aligned.
ALIGN_MIN_BYTES = 64 << 10
CONTENT_ALIGNMENT = 64
# Event field 14 (unused by TensorFlow's Event): zero bytes that shift the tensor bytes into alignment.
# Parsers skip unknown fields, so the Event means the same to every reader.
_EVENT_PADDING_KEY = bytes(((14 << 3) | 2,))


def _alignment_padding(head_len: int, payload_offset: int) -> bytes:
    """An Event field placing the byte after ``head_len`` more head bytes at an aligned file offset."""
    need = -(payload_offset + head_len) % CONTENT_ALIGNMENT
    if need == 0:
        return b""
    while True:
        pad = need - 1 - len(_varint(max(need - 2, 0)))  # key byte + length varint + zeros
        if pad >= 0 and 1 + len(_varint(pad)) + pad == need:
            return _EVENT_PADDING_KEY + _varint(pad) + bytes(pad)
        need += CONTENT_ALIGNMENT


def encode_tensor_event_parts(
    tag: str, arr: np.ndarray, step: int, mode: ModeKeys, mode_step: int, wall_time: Optional[float] = None,
    payload_offset: Optional[int] = None,
):
    """The same Event as :func:`encode_tensor_event`, as ``(head, body)`` with ``payload = head + body``.

    ``body`` is the array's raw bytes as a memoryview, so a large tensor is written to disk without
    being copied into a protobuf message and out again. protobuf serialises every part except the
    enclosing length prefixes; the tensor bytes are placed as the last field of each enclosing message,
    which any protobuf parser reads exactly like the canonical order. Strings use the plain path.

    ``payload_offset``: where in the file the payload will start; a body of ALIGN_MIN_BYTES or more is
    then aligned there (an unknown padding field before the summary).
    """
    arr = stored_form(arr)
    dt = arr.dtype
    if dt.kind in "USO":
        return encode_tensor_event(tag, arr, step, mode, mode_step, wall_time), b""
    key = (tag, dt, arr.shape)  # (dtypes of different byte orders differ, and hash quickly)
    pieces = _tensor_pieces.get(key)
    if pieces is None:
        pieces = _pieces_for(tag, arr, key)
    value_tag, tensor_field_head = pieces
    if dt.byteorder == ">" or not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(_little_endian(arr))
    body = memoryview(arr.reshape(-1)).cast("B") if arr.size else memoryview(b"")
    n = body.nbytes

    metadata = _metadata_pieces.get((id(mode), mode_step))  # id: enum members hash slowly, and are unique
    if metadata is None:
        metadata = _metadata_for(mode, mode_step)
    value_len = len(value_tag) + len(metadata) + len(tensor_field_head) + n
    summary_head = _SUMMARY_VALUE_KEY + _varint(value_len)
    summary_len = len(summary_head) + value_len
    event_head = _event_head(time.time() if wall_time is None else wall_time, step)
    rest = b"".join((_EVENT_SUMMARY_KEY, _varint(summary_len), summary_head, value_tag, metadata,
                     tensor_field_head))
    if payload_offset is not None and n >= ALIGN_MIN_BYTES:
        event_head += _alignment_padding(len(event_head) + len(rest), payload_offset)
    return event_head + rest, body


def decode_tensor_event(payload: bytes):
    """Yield ``(tag, ndarray, global_step, mode, mode_step)`` for each tensor value of an event."""
    ev = Event()
    ev.ParseFromString(payload)
    if not ev.HasField("summary"):
        return
    for value in ev.summary.value:
        if value.WhichOneof("value") != "tensor":
            raise SMDebugValueError(f"Event for {value.tag!r} does not hold a tensor")
        mode, mode_step = summary_value_mode(value, ev.step)
        yield value.tag, tensor_proto_to_numpy(value.tensor), ev.step, mode, mode_step


def summary_value_mode(value, step: int):
    """``(mode, mode_step)`` of a summary value, from its plugin metadata (GLOBAL and ``step`` if absent).

    SMDebugValueError when the metadata is not what a writer puts there (a number, a known mode, a step
    that fits in int64), as an index file's meta is checked (index_file._parse_meta)."""
    mode, mode_step = ModeKeys.GLOBAL, step
    for pd in value.metadata.plugin_data:
        if pd.plugin_name == MODE_STEP_PLUGIN_NAME:
            mode_step = _metadata_int(pd.content, "mode step")
            if not -MAX_STEP <= mode_step <= MAX_STEP:
                raise SMDebugValueError(f"Mode step {mode_step} is out of range")
        elif pd.plugin_name == MODE_PLUGIN_NAME:
            number = _metadata_int(pd.content, "mode")
            try:
                mode = ModeKeys(number)
            except ValueError:
                raise SMDebugValueError(
                    f"Mode {number} is not one of "
                    f"{', '.join(f'{m.value} ({m.name})' for m in ModeKeys)}") from None
    return mode, mode_step


#: digits of the largest int64 and a sign: longer metadata cannot be a step (and int() refuses strings of
#: more than 4300 digits with a ValueError of its own)
_MAX_STEP_CHARS = len(str(MAX_STEP)) + 1


def _metadata_int(content: str, what: str) -> int:
    text = content.strip()
    if len(text) <= _MAX_STEP_CHARS:
        try:
            return int(text)
        except ValueError:
            pass
    shown = f"{content[:40]!r}{'...' if len(content) > 40 else ''}"
    raise SMDebugValueError(f"The {what} in the record's metadata, {shown}, is not an integer")


#: Records at least this large are decoded without copying their tensor bytes (content_span.py); below
#: it, protobuf's own parsing is quicker than walking the wire format in Python.
ZERO_COPY_MIN_BYTES = 64 << 10


def decode_tensor_record(raw, path=None, step=None, name=None, same_record=None, expect=None) -> np.ndarray:
    """The tensor held by one framed record (what an index entry points at).

    Every way the bytes can be wrong (framing, checksum, protobuf, dtype, shape) raises
    :class:`~smdebug.exceptions.EventFileCorrupted` naming ``path`` and ``step``; nothing else escapes.

    ``expect``: ``(global step, mode, mode step)`` the index gives the record, or ``(global step, None,
    None)`` to check the step only: a record whose own Event.step (or mode / mode step plugin metadata,
    where present) differs belongs to another step (an event file of another step put in this one's place)
    and is EventFileCorrupted too.
    """
    try:
        payload, end = decode_record(raw, 0, path)
        if end != len(raw):
            # The index entry's length (what was read) must be the record's, as its writer indexed it: a
            # longer one (an index claiming gigabytes of a sparse file) is damage, whatever the record holds.
            raise EventFileCorrupted(
                f"The index says the record is {len(raw)} bytes long, but the record's own header says {end}",
                path, step)
        if len(payload) >= ZERO_COPY_MIN_BYTES:
            found = locate_tensor_content(payload)
            if found is not None:
                rest, start, end, tag = found
                if name is not None:
                    _check_tag(tag.decode("utf-8", "replace"), name, same_record)
                if expect is not None:
                    _check_position(*_large_record_position(payload), expect)
                return tensor_proto_to_numpy(TensorProto.FromString(rest), payload[start:end])
        # Only the tensor is wanted here: the mode and mode step of the record are known from the index.
        event = Event.FromString(bytes(payload))
        for value in event.summary.value:  # (no summary: no values)
            if value.WhichOneof("value") != "tensor":
                raise SMDebugValueError(f"Event for {value.tag!r} does not hold a tensor")
            if name is not None:
                _check_tag(value.tag, name, same_record)
            if expect is not None:
                _check_position(event.step, value, expect)
            return tensor_proto_to_numpy(value.tensor)
    except EventFileCorrupted as e:
        e.step = step if e.step is None else e.step
        raise
    except (MemoryError, RecursionError) as e:
        raise EventFileCorrupted(f"Cannot decode {_what(name)}: {type(e).__name__}", path, step) from None
    except Exception as e:  # noqa: BLE001 - protobuf DecodeError, bad dtype/shape...
        raise EventFileCorrupted(f"Cannot decode {_what(name)}: {e}", path, step) from None
    raise EventFileCorrupted(f"Record for {_what(name)} holds no tensor", path, step)


def _check_tag(tag: str, name: str, same_record) -> None:
    """The record an index entry points at must be the tensor's own, one of its stored reductions, or that
    of a tensor the same index locates at this very record (``same_record(tag)``: the writer's aliases,
    one record indexed under several names, as the XGBoost hook saves the SHAP matrix): an entry pointing
    anywhere else (damaged offsets) would give another tensor's values under this name."""
    if tag != name:
        reduction = parse_reduction_tensor_name(tag)
        if (reduction is None or reduction[0] != name) and not (same_record is not None and same_record(tag)):
            raise SMDebugValueError(f"the index points at the record of {tag[:200]!r}, not of {name[:200]!r}")


def _large_record_position(payload):
    """(Event.step, a Summary.Value holding only the metadata) of a record that locate_tensor_content has
    walked (its plain encoding is known): the top-level fields and the value's, not the tensor bytes."""
    step = 0
    summary = None
    for number, wire, _, start, end in _fields(payload, 0, len(payload)):
        if number == 2 and wire == 0:
            step = _read_varint(payload, start, end)[0]  # (the last one wins, as protobuf reads it)
        elif number == 5 and wire == 2:
            summary = (start, end)
    if step >= 1 << 63:
        step -= 1 << 64
    value = Summary.Value()
    if summary is not None:
        _, start, end = _only_child(payload, summary[0], summary[1], 1, None)
        for number, wire, _, vstart, vend in _fields(payload, start, end):
            if number == 9 and wire == 2:  # Value.metadata
                value.metadata.MergeFromString(bytes(payload[vstart:vend]))
    return step, value


def _check_position(record_step: int, value, expect) -> None:
    """The record's own step, mode and mode step (where its metadata has them) must be its index's."""
    step, mode, mode_step = expect
    if record_step != step:
        raise SMDebugValueError(
            f"the record is of step {record_step}, not of step {step} as its index says (an event file of "
            "another step in this step's place?)")
    if mode is None:
        return
    present = {pd.plugin_name for pd in value.metadata.plugin_data}
    if MODE_PLUGIN_NAME in present or MODE_STEP_PLUGIN_NAME in present:
        try:
            record_mode, record_mode_step = summary_value_mode(value, record_step)
        except SMDebugValueError:
            return  # metadata that is no mode or step says nothing against the index (which is what counts)
        if (MODE_PLUGIN_NAME in present and record_mode != mode) or (
                MODE_STEP_PLUGIN_NAME in present and record_mode_step != mode_step):
            raise SMDebugValueError(
                f"the record is of {record_mode.name} step {record_mode_step}, but its index says {mode.name} "
                f"step {mode_step}")


def _what(name) -> str:
    # (a damaged or hostile run's name may be a megabyte: the message names it, clipped)
    return f"tensor {clipped(str(name), 200)}" if name is not None else "the record"
