"""Legacy module (smdebug 1.0.x's ``smdebug.core.access_layer.s3``): an S3 object of a run, uploaded
when closed (multipart when large), through the project's S3Storage. Needs boto3
(``pip install 'smdebug-core[s3]'``). Not part of the modern API; see smdebug.core.legacy and
docs/compatibility.md."""

from __future__ import annotations

from smdebug.core.access_layer._access import _TSAccess
from smdebug.core.storage.factory import get_storage


class TSAccessS3(_TSAccess):
    def __init__(self, bucket_name: str, key_name: str, aws_region=None, binary: bool = True):
        self.bucket_name = bucket_name
        self.key_name = key_name
        self.aws_region = aws_region  # (the region comes from the standard AWS configuration)
        super().__init__(get_storage(f"s3://{bucket_name}/"), key_name.lstrip("/"), "wb" if binary else "w")
