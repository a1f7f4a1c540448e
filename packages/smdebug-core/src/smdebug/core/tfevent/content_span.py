"""Find a large tensor's bytes inside a serialized tensor Event without copying them.

Parsing an Event with protobuf copies ``tensor_content`` into the message, and reading the field copies
it again into a new ``bytes``: for a 64 MiB tensor that is most of the cost of reading it. This module
walks the protobuf wire format down the one path that leads to the content (Event.summary -> Summary.value
-> Value.tensor -> TensorProto.tensor_content) and returns where the content lies, so the array can be a
view on the bytes already read. Everything except the content (dtype, shape...) is still parsed by
protobuf. Anything unusual on the path (a field repeated where merging would apply, a field this walk does
not expect, a malformed length) makes :func:`locate_tensor_content` return None and the caller takes the
ordinary protobuf path, which handles every valid encoding.
"""

from __future__ import annotations

from typing import Iterator, Optional, Tuple

# field numbers (event.proto, summary.proto, tensor.proto)
_EVENT_SUMMARY = 5
_SUMMARY_VALUE = 1
_VALUE_TENSOR = 8
_VALUE_TAG = 1
_TENSOR_CONTENT = 4
# Fields that may sit beside the path without changing what it leads to: Event wall_time, step, our
# alignment padding (14) and checksum-steering field (15); Value tag, node_name and metadata (the other
# oneof members of Value would mean the value is not a tensor).
_EVENT_OTHERS = {1, 2, 14, 15}
_SUMMARY_OTHERS: set = set()
_VALUE_OTHERS = {1, 7, 9}
_LENGTH_DELIMITED = 2


class _Unusual(Exception):
    """The encoding is not the plain one this walk handles: use protobuf."""


def _varint(buf, pos: int, end: int) -> Tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise _Unusual
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7


def _fields(buf, start: int, end: int) -> Iterator[Tuple[int, int, int, int, int]]:
    """(field number, wire type, key start, value start, value end) of each field in ``buf[start:end]``."""
    pos = start
    while pos < end:
        key_start = pos
        key, pos = _varint(buf, pos, end)
        number, wire = key >> 3, key & 7
        if wire == 0:
            _, stop = _varint(buf, pos, end)
        elif wire == 1:
            stop = pos + 8
        elif wire == _LENGTH_DELIMITED:
            length, pos = _varint(buf, pos, end)
            stop = pos + length
        elif wire == 5:
            stop = pos + 4
        else:  # groups: never in these messages
            raise _Unusual
        if stop > end or number == 0:
            raise _Unusual
        yield number, wire, key_start, pos, stop
        pos = stop


def _only_child(buf, start: int, end: int, wanted: int, others) -> Tuple[int, int, int]:
    """(key start, value start, value end) of the single length-delimited field ``wanted``; other fields
    must be in ``others`` (``None``: anything)."""
    found = None
    for number, wire, key_start, value_start, value_end in _fields(buf, start, end):
        if number == wanted:
            if wire != _LENGTH_DELIMITED or found is not None:
                raise _Unusual  # a repeated singular message would be merged: leave that to protobuf
            found = (key_start, value_start, value_end)
        elif others is not None and number not in others:
            raise _Unusual
    if found is None:
        raise _Unusual
    return found


def locate_tensor_content(payload) -> Optional[Tuple[bytes, int, int, bytes]]:
    """For a serialized Event holding one tensor value: ``(tensor_without_content, start, end, tag)``, where
    ``payload[start:end]`` is ``tensor_content``, ``tensor_without_content`` is the TensorProto's other
    fields, serialized (parse it with protobuf for dtype and shape), and ``tag`` the value's tag (UTF-8).
    None if the walk does not apply."""
    try:
        _, start, end = _only_child(payload, 0, len(payload), _EVENT_SUMMARY, _EVENT_OTHERS)
        _, start, end = _only_child(payload, start, end, _SUMMARY_VALUE, _SUMMARY_OTHERS)
        tag = b""
        for number, wire, _, value_start, value_end in _fields(payload, start, end):
            if number == _VALUE_TAG and wire == _LENGTH_DELIMITED:
                tag = bytes(payload[value_start:value_end])  # (the last one wins, as protobuf reads it)
        _, start, end = _only_child(payload, start, end, _VALUE_TENSOR, _VALUE_OTHERS)
        tensor_start, tensor_end = start, end
        key_start, start, end = _only_child(payload, tensor_start, tensor_end, _TENSOR_CONTENT, None)
    except _Unusual:
        return None
    rest = bytes(payload[tensor_start:key_start]) + bytes(payload[end:tensor_end])
    return rest, start, end, tag
