"""TFRecord framing: ``len:u64 | masked_crc(len):u32 | payload | footer:u32``.

The original smdebug wrote a *constant* footer in ``events/`` files (the masked CRC of the ten bytes
``b"0x12345678"``) and its default reader insists on that constant, while TensorBoard's reader insists on
the real masked CRC of the payload. We satisfy both: every payload we write ends with a 5-byte unknown
protobuf field (field 15, fixed32) whose value is chosen so that the real CRC of the payload *equals*
the constant. Protobuf parsers skip unknown fields, so the Event decodes the same everywhere, the
original sees its magic footer, TensorBoard sees a correct checksum, and our reader can verify the data.
"""

from __future__ import annotations

import struct

from crc32c import crc32c

from smdebug.exceptions import EventFileCorrupted

_MASK_DELTA = 0xA282EAD8
_U32 = 0xFFFFFFFF
#: crc32c(b"0x12345678"): the value the original writes (masked) as every footer of ``events/`` files.
MAGIC_CRC = 0x6AEDB1D5
HEADER_SIZE = 12
FOOTER_SIZE = 4
RECORD_OVERHEAD = HEADER_SIZE + FOOTER_SIZE
#: protobuf tag of field 15 with wire type 5 (fixed32): an unknown field in every smdebug message.
_FORGE_TAG = bytes([(15 << 3) | 5])

_pack_header = struct.Struct("<Q").pack
_pack_u32 = struct.Struct("<I").pack
_unpack_header = struct.Struct("<QI").unpack_from
_unpack_u32 = struct.Struct("<I").unpack_from


def masked_crc(data: bytes) -> int:
    crc = crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & _U32) + _MASK_DELTA) & _U32


def mask(crc: int) -> int:
    return ((((crc >> 15) | (crc << 17)) & _U32) + _MASK_DELTA) & _U32


MAGIC_FOOTER = mask(MAGIC_CRC)  # 0x062DC0B3


def _make_tables():
    poly = 0x82F63B78
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        table.append(c)
    # The top byte of the table entries is a permutation of 0..255: this lets us run the CRC backwards.
    inverse = {entry >> 24: i for i, entry in enumerate(table)}
    return table, inverse


_TABLE, _INV_TOP = _make_tables()


def _forge_suffix(crc_so_far: int, target_crc: int) -> bytes:
    """Four bytes that, appended to data whose crc32c is ``crc_so_far``, make the crc32c ``target_crc``."""
    # Work on the raw register (CRC32C xors in and out with 0xFFFFFFFF).
    reg = target_crc ^ _U32
    indices = []
    for _ in range(4):
        i = _INV_TOP[reg >> 24]
        indices.append(i)
        reg = ((reg ^ _TABLE[i]) << 8) & _U32
    reg = crc_so_far ^ _U32
    out = bytearray(4)
    for k, i in enumerate(reversed(indices)):
        out[k] = (reg ^ i) & 0xFF
        reg = (reg >> 8) ^ _TABLE[i]
    return bytes(out)


# CRC32C is affine over GF(2): the register after four appended bytes is a fixed linear map of
# (register before them XOR those bytes). With a fixed target, the suffix is therefore the register so far
# XOR one constant, computed once here with the general routine above (one XOR per record, not a loop).
_MAGIC_SUFFIX_XOR = struct.unpack("<I", _forge_suffix(_U32, MAGIC_CRC))[0] ^ _U32


def _magic_suffix(crc_so_far: int) -> bytes:
    """``_forge_suffix(crc_so_far, MAGIC_CRC)``, fast."""
    return _pack_u32(crc_so_far ^ _MAGIC_SUFFIX_XOR)


def encode_record(payload: bytes, compat_footer: bool = True) -> bytes:
    """Frame ``payload`` as one record.

    ``compat_footer=True`` (used for ``events/`` files) appends the 5 checksum-steering bytes described
    above, so the footer is both the true CRC and the original's constant. ``False`` writes a plain
    TensorFlow record (used for TensorBoard files).
    """
    if compat_footer:
        payload = payload + _FORGE_TAG
        payload = payload + _magic_suffix(crc32c(payload))
        footer = MAGIC_FOOTER
    else:
        footer = masked_crc(payload)
    header = _pack_header(len(payload))
    return b"".join((header, _pack_u32(masked_crc(header)), payload, _pack_u32(footer)))


_SUFFIX_SIZE = len(_FORGE_TAG) + 4


def record_prefix(head: bytes, body_len: int) -> bytes:
    """What precedes ``body`` in a compat-footer record of payload ``head + body + steering bytes``: the
    length header, its checksum and ``head``. Needs only the body's length, not its bytes."""
    header = _pack_header(len(head) + body_len + _SUFFIX_SIZE)
    return header + _pack_u32(masked_crc(header)) + head


def record_trailer(payload_crc: int) -> bytes:
    """What follows ``body``: the steering field and the constant footer, given ``crc32c(head + body)``."""
    return _FORGE_TAG + _magic_suffix(crc32c(_FORGE_TAG, payload_crc)) + _pack_u32(MAGIC_FOOTER)


def encode_record_parts(head: bytes, body) -> tuple:
    """Like ``encode_record(head + body)`` (compat footer) without joining the parts: returns the
    pieces to write in order, so a large ``body`` (a memoryview of an array) is never copied."""
    crc = crc32c(body, crc32c(head)) if len(body) else crc32c(head)
    return record_prefix(head, len(body)), body, record_trailer(crc)


def _is_original_payload(payload: bytes) -> bool:
    """A payload written by smdebug 1.0.x, whose constant footer says nothing about its bytes.

    Ours always end with the 5-byte steering field (tag byte 0x7D), so a payload with the constant
    footer and our tag whose CRC does not match is corrupted. The original's tensor events end with
    the "mode" plugin data (``...de\x12\x01<digit>``), so their byte at -5 is never 0x7D.
    """
    return len(payload) < 5 or payload[len(payload) - 5] != _FORGE_TAG[0]


def decode_record(buf, offset: int = 0, path=None, verify: bool = True):
    """Decode the record starting at ``offset`` of ``buf``; returns ``(payload, next_offset)``.

    ``payload`` is a memoryview into ``buf`` (``bytes(payload)`` for a copy).

    Accepts a true payload CRC, or the original's constant footer (files written by smdebug 1.0.x,
    whose payloads cannot be verified). Raises :class:`EventFileCorrupted` naming the file and offset.
    """
    end = len(buf)
    if offset + HEADER_SIZE > end:
        raise EventFileCorrupted(f"Truncated record header at byte {offset}", path)
    length, len_crc = _unpack_header(buf, offset)
    if verify and mask(crc32c(bytes(buf[offset : offset + 8]))) != len_crc:
        raise EventFileCorrupted(f"Record length checksum mismatch at byte {offset}", path)
    start = offset + HEADER_SIZE
    stop = start + length
    if stop + FOOTER_SIZE > end:
        raise EventFileCorrupted(
            f"Truncated record at byte {offset}: needs {length + RECORD_OVERHEAD} bytes, file has {end - offset}",
            path,
        )
    # A view, not a copy: for a large tensor the payload is most of the bytes we read.
    payload = memoryview(buf)[start:stop]
    if verify:
        (footer,) = _unpack_u32(buf, stop)
        if footer != masked_crc(payload) and not (footer == MAGIC_FOOTER and _is_original_payload(payload)):
            raise EventFileCorrupted(f"Record data checksum mismatch at byte {offset}", path)
    return payload, stop + FOOTER_SIZE


def record_size(header, offset: int = 0, path=None, step=None) -> int:
    """The whole size (header, payload, footer) of the record whose first ``HEADER_SIZE`` bytes are
    ``header`` (at byte ``offset`` of the file, for the message), from its own checksummed length header.

    An index entry's length is only a claim: a reader that trusts it reads (maps, allocates) that many
    bytes, and an event file can be made as large as anyone likes at no cost (sparse). The header is 12
    bytes and checksummed; ask it first. :class:`EventFileCorrupted` naming ``path`` and ``step`` if the
    header is short or its checksum fails."""
    if len(header) < HEADER_SIZE:
        raise EventFileCorrupted(f"Truncated record header at byte {offset}", path, step)
    length, len_crc = _unpack_header(header, 0)
    if mask(crc32c(bytes(header[:8]))) != len_crc:
        raise EventFileCorrupted(f"Record length checksum mismatch at byte {offset}", path, step)
    return length + RECORD_OVERHEAD


def check_index_length(header, offset: int, index_length: int, path=None, step=None) -> None:
    """:class:`EventFileCorrupted` unless the record at ``offset`` whose header is ``header`` is exactly
    ``index_length`` bytes long, as the index entry says (the writer indexes each record's exact extent)."""
    size = record_size(header, offset, path, step)
    if size != index_length:
        raise EventFileCorrupted(
            f"The index says the record at byte {offset} is {index_length} bytes long, but the record's own "
            f"header says {size}", path, step)


def iter_records(buf, path=None, verify: bool = True):
    """Yield ``(offset, length, payload)`` for every record of a whole file's bytes."""
    offset = 0
    end = len(buf)
    while offset < end:
        payload, nxt = decode_record(buf, offset, path, verify)
        yield offset, nxt - offset, payload
        offset = nxt
