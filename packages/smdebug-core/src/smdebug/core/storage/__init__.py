"""Storage access behind one small interface, so local disk and S3 behave the same to hooks and trials."""

from smdebug.core.storage.base import Storage, StorageWriter, is_s3_path, parse_s3_path
from smdebug.core.storage.factory import get_storage

__all__ = ["Storage", "StorageWriter", "get_storage", "is_s3_path", "parse_s3_path"]
