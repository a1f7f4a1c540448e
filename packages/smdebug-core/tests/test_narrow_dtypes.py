"""Values of numpy dtypes the event format has no number for (ml_dtypes' narrow floats and integers,
TensorFlow's quantized types, numpy 2's variable-width strings) are saved in a stored dtype that holds
them exactly, and read back in it; the 1.0.x name ``_get_proto_dtype`` tells which."""

import numpy as np
import pytest

from smdebug.core.modes import ModeKeys
from smdebug.core.tfevent.tensor_codec import (
    decode_tensor_event,
    encode_tensor_event,
    encode_tensor_event_parts,
)
from smdebug.core.tfevent.util import _get_proto_dtype
from smdebug.exceptions import SMDebugTypeError


def _both_encodings(arr):
    """The decoded value of ``arr`` through the protobuf encoder and through the zero-copy one."""
    out = []
    plain = encode_tensor_event("t", arr, 3, ModeKeys.TRAIN, 3, wall_time=1.0)
    head, body = encode_tensor_event_parts("t", arr, 3, ModeKeys.TRAIN, 3, wall_time=1.0)
    for payload in (plain, bytes(head) + bytes(body)):
        (_, value, _, _, _), = list(decode_tensor_event(payload))
        out.append(value)
    return out


@pytest.mark.parametrize("name,stored", [
    ("bfloat16", np.float32), ("float8_e4m3fn", np.float32), ("float8_e5m2", np.float32),
    ("float4_e2m1fn", np.float32), ("int4", np.int8), ("uint4", np.uint8), ("int2", np.int8),
])
def test_ml_dtypes_values_are_stored_widened_and_exact(name, stored):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    dtype = getattr(ml_dtypes, name, None)
    if dtype is None:
        pytest.skip(f"this ml_dtypes has no {name}")
    values = np.array([[0, 1], [-1, 1]] if not name.startswith("uint") else [[0, 1], [2, 3]]).astype(dtype)
    for value in _both_encodings(values):
        assert value.dtype == np.dtype(stored) and value.shape == (2, 2)
        np.testing.assert_array_equal(value, values.astype(stored))
    assert _get_proto_dtype(np.dtype(dtype))[0] is True


def test_quantized_structured_dtypes_are_stored_as_their_integer():
    qint8 = np.dtype([("qint8", "i1")])
    quint16 = np.dtype([("quint16", "<u2")])
    for qdtype, base, proto in ((qint8, np.int8, "DT_INT8"), (quint16, np.uint16, "DT_UINT16")):
        arr = np.zeros(3, dtype=qdtype)
        arr[qdtype.names[0]] = [1, 2, 3]
        for value in _both_encodings(arr):
            assert value.dtype == base and value.tolist() == [1, 2, 3]
        assert _get_proto_dtype(qdtype) == (True, proto)


def test_numpy_variable_width_strings_are_saved_as_strings():
    string_dtype = getattr(np.dtypes, "StringDType", None) if hasattr(np, "dtypes") else None
    if string_dtype is None:
        pytest.skip("numpy < 2 has no StringDType")
    arr = np.array(["a", "héllo"], dtype=string_dtype())
    for value in _both_encodings(arr):
        assert value.tolist() == ["a", "héllo"]
    assert _get_proto_dtype(arr.dtype) == (False, "DT_STRING")


def test_get_proto_dtype_of_stored_and_unsavable_dtypes():
    assert _get_proto_dtype(np.dtype(np.float32)) == (True, "DT_FLOAT")
    assert _get_proto_dtype(np.dtype(">i8")) == (True, "DT_INT64")
    assert _get_proto_dtype(np.dtype("U3")) == (False, "DT_STRING")
    with pytest.raises(SMDebugTypeError):
        _get_proto_dtype(np.dtype("datetime64[D]"))


def test_reductions_of_narrow_dtypes_are_those_of_their_stored_values():
    from smdebug.core.reductions import compute_reduction

    ml_dtypes = pytest.importorskip("ml_dtypes")
    values = np.array([[1.5, -2.0], [0.25, 4.0]], dtype=ml_dtypes.bfloat16)
    widened = values.astype(np.float32)
    for op in ("min", "max", "mean", "std", "l1", "l2"):
        assert compute_reduction(values, op) == pytest.approx(compute_reduction(widened, op)), op
    assert compute_reduction(values, "max", abs=True) == 4.0
