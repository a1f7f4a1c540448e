"""Legacy module (smdebug 1.0.x's ``smdebug.core.access_layer.s3handler``): batch listing, reading and
deleting of S3 objects, through the project's S3Storage (its client, retries, parallel ranged reads
and error messages). Needs boto3 (``pip install 'smdebug-core[s3]'``). Not part of the modern API;
see smdebug.core.legacy and docs/compatibility.md."""

from __future__ import annotations

from typing import List, Optional

from smdebug.core.storage.base import is_s3_path, parse_s3_path
from smdebug.core.storage.factory import get_storage
from smdebug.exceptions import SMDebugValueError


class ListRequest:
    def __init__(self, Bucket: str, Prefix: str = "", Delimiter: str = "", StartAfter: str = ""):
        self.bucket = Bucket
        self.prefix = Prefix
        self.delimiter = Delimiter
        self.start_after = StartAfter


class ReadObjectRequest:
    """``path`` is ``s3://bucket/key``; ``start``/``length`` select a byte range."""

    def __init__(self, path: str, start: Optional[int] = None, length: Optional[int] = None):
        if not is_s3_path(path):
            raise SMDebugValueError(f"ReadObjectRequest needs an s3:// path, got {path!r}")
        self.path = path
        self.bucket, self.key = parse_s3_path(path)
        self.start = start
        self.length = length


class DeleteRequest:
    def __init__(self, Bucket: str, Prefix: str):
        self.bucket = Bucket
        self.prefix = Prefix


def _storage(bucket: str, folder: str = ""):
    return get_storage(f"s3://{bucket}/{folder}")


def _list(bucket: str, prefix: str, start_after: str = "") -> List[str]:
    """Keys (within the bucket) starting with ``prefix``, sorted, after ``start_after``."""
    folder = prefix.rpartition("/")[0]
    base = folder + "/" if folder else ""
    keys = [base + k for k in _storage(bucket, folder).list("")]
    return [k for k in keys if k.startswith(prefix) and (not start_after or k > start_after)]


class S3Handler:
    @staticmethod
    def list_prefix(list_request: ListRequest) -> List[str]:
        keys = _list(list_request.bucket, list_request.prefix, list_request.start_after)
        if list_request.delimiter:
            # one entry per "folder" below the prefix, as S3's CommonPrefixes, then the objects
            cut = len(list_request.prefix)
            out = []
            for k in keys:
                head, sep, _ = k[cut:].partition(list_request.delimiter)
                out.append(k[:cut] + head + sep if sep else k)
            keys = list(dict.fromkeys(out))
        return keys

    @staticmethod
    def list_prefixes(list_requests: List[ListRequest]) -> List[List[str]]:
        if not isinstance(list_requests, list):
            raise SMDebugValueError(f"list_prefixes needs a list of ListRequest, got {type(list_requests).__name__}")
        return [S3Handler.list_prefix(r) for r in list_requests]

    @staticmethod
    def get_object(object_request: ReadObjectRequest) -> bytes:
        return S3Handler.get_objects([object_request])[0]

    @staticmethod
    def get_objects(object_requests: List[ReadObjectRequest], use_multiprocessing: bool = True) -> List[bytes]:
        """The objects (or byte ranges), fetched in parallel, neighbouring ranges in one GET."""
        by_bucket = {}
        for i, r in enumerate(object_requests):
            by_bucket.setdefault(r.bucket, []).append(i)
        out: List[Optional[bytes]] = [None] * len(object_requests)
        for bucket, indices in by_bucket.items():
            reqs = [(object_requests[i].key, object_requests[i].start or 0, object_requests[i].length) for i in indices]
            for i, data in zip(indices, _storage(bucket).read_many(reqs)):
                out[i] = bytes(data)
        return out

    @staticmethod
    def delete_prefix(path: Optional[str] = None, delete_request: Optional[DeleteRequest] = None) -> None:
        if path is not None and delete_request is not None:
            raise SMDebugValueError("Pass either path or delete_request, not both")
        if path is not None:
            bucket, prefix = parse_s3_path(path)
        elif delete_request is not None:
            bucket, prefix = delete_request.bucket, delete_request.prefix
        else:
            raise SMDebugValueError("delete_prefix needs path or delete_request")
        storage = _storage(bucket)
        for key in _list(bucket, prefix):
            storage.remove(key)

    @staticmethod
    def delete_prefixes(delete_requests: List[DeleteRequest]) -> None:
        for r in delete_requests:
            S3Handler.delete_prefix(delete_request=r)
