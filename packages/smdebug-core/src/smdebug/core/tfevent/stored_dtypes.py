"""The numpy dtypes event files hold, and how values of other numeric dtypes are stored.

Event files carry TensorFlow's DataType numbers (types.proto) for the dtypes of :data:`STORED`. Frameworks
add narrower types to numpy through the ``ml_dtypes`` package (bfloat16, float8_*, float4/6_*, int4,
int2 and their unsigned kinds), and TensorFlow has quantized types (structured dtypes of one integer
field: qint8, quint16...). The original raised for all of them, so a mixed-precision model's tensors were
lost. Their values are stored in the smallest stored dtype that holds every one of them exactly (narrow
floats as float32, narrow integers as int8/uint8, quantized types as their integer) and read back in it.
No reader needs ml_dtypes, and the files stay readable by the original and by TensorBoard.
"""

from __future__ import annotations

from typing import Tuple

import numpy as np

#: numpy dtype (native byte order) -> (TF DataType number, its name in types.proto)
STORED = {
    np.dtype(np.float16): (19, "DT_HALF"),
    np.dtype(np.float32): (1, "DT_FLOAT"),
    np.dtype(np.float64): (2, "DT_DOUBLE"),
    np.dtype(np.int8): (6, "DT_INT8"),
    np.dtype(np.int16): (5, "DT_INT16"),
    np.dtype(np.int32): (3, "DT_INT32"),
    np.dtype(np.int64): (9, "DT_INT64"),
    np.dtype(np.uint8): (4, "DT_UINT8"),
    np.dtype(np.uint16): (17, "DT_UINT16"),
    np.dtype(np.uint32): (22, "DT_UINT32"),
    np.dtype(np.uint64): (23, "DT_UINT64"),
    np.dtype(np.complex64): (8, "DT_COMPLEX64"),
    np.dtype(np.complex128): (18, "DT_COMPLEX128"),
    np.dtype(np.bool_): (10, "DT_BOOL"),
}
# what needs no conversion (either byte order: the encoder writes little-endian)
_AS_IS = frozenset(STORED) | frozenset(d.newbyteorder(o) for d in STORED for o in "<>")
_STRING_KINDS = "USO"


def stored_form(arr: np.ndarray) -> np.ndarray:
    """``arr`` itself when its dtype is stored as is (or is a string dtype), else the same values in the
    dtype they are stored in. An array of a dtype that has no stored form is returned unchanged (the
    encoder then names the dtype it cannot save)."""
    dt = arr.dtype
    if dt in _AS_IS or dt.kind in _STRING_KINDS:
        return arr
    if dt.kind == "T":  # numpy 2's variable-width strings: saved like other strings
        return arr.astype(object)
    if dt.names is not None and len(dt.names) == 1:  # TF's quantized types: one integer field
        field = dt.fields[dt.names[0]][0]
        if field in _AS_IS and field.kind in "iu":
            return arr[dt.names[0]]
        return arr
    if getattr(dt.type, "__module__", "").split(".")[0] == "ml_dtypes":
        name = dt.name
        if "float" in name:  # bfloat16, float8_*, float6_*, float4_*: all exact in float32
            return arr.astype(np.float32)
        if name.startswith("uint"):  # uint4, uint2
            return arr.astype(np.uint8)
        if name.startswith("int"):  # int4, int2
            return arr.astype(np.int8)
    return arr


def proto_dtype(npdtype) -> Tuple[bool, str]:
    """``(numeric?, DataType name)`` a value of ``npdtype`` is saved with (strings: ``(False,
    "DT_STRING")``). Raises :class:`~smdebug.exceptions.SMDebugTypeError` for a dtype that cannot be saved."""
    from smdebug.exceptions import SMDebugTypeError

    dt = np.dtype(npdtype)
    if dt.kind in _STRING_KINDS or dt.kind == "T":
        return False, "DT_STRING"
    stored = stored_form(np.empty(0, dtype=dt)).dtype
    found = STORED.get(stored if stored.byteorder in ("=", "|") else stored.newbyteorder("="))
    if found is None:
        raise SMDebugTypeError(f"numpy dtype {dt} cannot be saved")
    return True, found[1]
