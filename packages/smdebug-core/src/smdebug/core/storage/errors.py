"""Errors of remote storage, shared by every backend (importable without boto3).

They are :class:`OSError` subclasses, so code written for files (``except OSError``) keeps working,
and :class:`~smdebug.exceptions.SMDebugError` subclasses, so ``except SMDebugError`` catches them too.
Messages name the bucket, the key and the operation, never credentials.
"""

from __future__ import annotations

from typing import Optional

from smdebug.exceptions import SMDebugError


class StorageError(SMDebugError, OSError):
    """A storage request failed for a reason that retrying will not fix (a bad request, say)."""

    def __init__(self, message: str, *, operation: Optional[str] = None, bucket: Optional[str] = None,
                 key: Optional[str] = None, code: Optional[str] = None):
        super().__init__(message)
        self.message = message
        self.operation = operation
        self.bucket = bucket
        self.key = key
        self.code = code

    def __str__(self) -> str:
        return self.message


class StorageAccessDenied(StorageError, PermissionError):
    """The credentials are missing, invalid or expired, or do not allow the operation."""


class StorageBucketNotFound(StorageError, FileNotFoundError):
    """The bucket does not exist."""


class StorageUnavailable(StorageError, ConnectionError):
    """The endpoint could not be reached or kept failing (network, 5xx, throttling) after retries."""


class StorageRootRemoved(StorageBucketNotFound):
    """The run folder (or a folder of it) was removed while a hook was writing to it. A hook stops saving
    (it reports this once) rather than making a new folder that would hold a partial run."""


class UnreadableFileError(StorageError):
    """A file or folder of a run that is there but cannot be read: permission denied, an I/O error, not a
    regular file (:class:`~smdebug.core.storage.safe_fs.UnsafeFileError`) or larger than a reader accepts
    (:class:`FileTooLarge`). Readers turn it into the documented exception of the file's kind
    (``IndexReaderException``, ``EventFileCorrupted``, ``CollectionFileCorrupted``), naming the file;
    ``skip_damaged`` skips it. (Not a FileNotFoundError: a file that is missing is a different answer.)"""

    def __init__(self, path: str, reason: str, **kw):
        super().__init__(f"{path} cannot be read: {reason}", operation=kw.pop("operation", "read"), key=path, **kw)
        self.filename = path
        self.reason = reason


class FileTooLarge(UnreadableFileError):
    """A file larger than its reader accepts (an index, a collections file, rule results...): refused
    before it is read, so a sparse file of terabytes costs no memory."""

    def __init__(self, path: str, size: Optional[int], limit: int, setting: str = ""):
        size_text = f"{size} bytes" if size is not None else f"more than {limit} bytes"
        how = f" (raise {setting} to read it)" if setting else ""
        super().__init__(path, f"it holds {size_text}, more than the {limit} bytes accepted{how}")
        self.size = size
        self.limit = limit


class UnsafeKeyError(StorageError, ValueError):
    """A key that would leave the run's folder (an absolute path, ``..``, NUL): damaged or hostile data.
    Still a ValueError, as it was before it was a StorageError."""
