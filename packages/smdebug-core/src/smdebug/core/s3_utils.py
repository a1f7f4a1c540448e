"""Legacy module (smdebug 1.0.x's ``smdebug.core.s3_utils``), over the project's S3 storage. Needs
boto3. Not part of the modern API; see smdebug.core.legacy and docs/compatibility.md."""

from __future__ import annotations

from typing import List, Optional, Tuple

from smdebug.core.access_layer.s3handler import ListRequest, S3Handler


def list_s3_objects(bucket: str, prefix: str, start_after_key: Optional[str] = None,
                    delimiter: str = "") -> Tuple[List[str], Optional[str]]:
    """``(keys under prefix after start_after_key, the last key)``."""
    request = ListRequest(Bucket=bucket, Prefix=prefix, StartAfter=start_after_key or prefix, Delimiter=delimiter)
    keys = S3Handler.list_prefix(request)
    return keys, (keys[-1] if keys else None)
