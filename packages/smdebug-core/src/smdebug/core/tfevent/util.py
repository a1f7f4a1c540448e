"""Legacy module (smdebug 1.0.x's ``smdebug.core.tfevent.util``): ``_get_proto_dtype``, which scripts
and tests used to ask whether a numpy dtype can be saved. It answers from this project's own table
(:mod:`smdebug.core.tfevent.stored_dtypes`): narrow and quantized dtypes name the dtype their values are
stored in. See docs/compatibility.md."""

from smdebug.core.tfevent.stored_dtypes import proto_dtype as _get_proto_dtype  # noqa: F401
