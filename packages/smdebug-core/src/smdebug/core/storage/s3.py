"""S3 storage: a run under ``s3://bucket/prefix/`` with the same layout and semantics as a local run.

* boto3 with the standard AWS configuration: the credentials chain, ``AWS_REGION`` (else the default
  region chain), and ``AWS_ENDPOINT_URL_S3`` / ``AWS_ENDPOINT_URL`` for S3-compatible endpoints.
* Writes: an object is buffered and uploaded when it is committed (one PUT), or streamed as a
  multipart upload once it grows past ``SMDEBUG_S3_MULTIPART_THRESHOLD`` (parts uploaded in
  parallel). Nothing is visible under a key until its upload completes, which is what makes S3's
  "write whole object" equivalent to the local ``.tmp`` + rename.
* Exclusive create (the hook's claim file) is a conditional PUT (``If-None-Match: *``).
* Reads: listing with ``StartAfter``; :meth:`S3Storage.read_many` coalesces neighbouring byte ranges
  of one object into one ranged GET and runs the GETs on a thread pool; an optional disk cache
  (:mod:`smdebug.core.storage.cache`), whose entries are tied to the identity (ETag, last-modified
  time) of the object version they came from.
* Responses are held to what was asked: a body is streamed in chunks and never beyond the range
  asked for (or the reader's size limit for a whole object); a ranged GET must come back as that
  range (``Content-Range``); every GET has an overall deadline (``SMDEBUG_S3_REQUEST_TIMEOUT``) on
  top of the per-read timeout, so an endpoint that drips its answer cannot hang a reader.
* Errors: transient failures are retried by botocore (standard retry mode, with backoff); on the
  background writer's thread uploads keep retrying until the endpoint is back (or the hook gives up
  at close). Permission and credential problems raise :class:`StorageAccessDenied` naming the
  operation, bucket and key, never credentials.
"""

from __future__ import annotations

import collections
import concurrent.futures
import errno
import hashlib
import os
import random
import re
import socket
import threading
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import boto3
from botocore import exceptions as bexc
from botocore.config import Config

from smdebug._version import __version__
from smdebug.core import helper_pool
from smdebug.core.env_settings import env_float, env_int
from smdebug.core.logger import get_logger
from smdebug.core.storage.base import Storage, StorageWriter, parse_s3_path
from smdebug.core.storage.cache import DiskCache, cacheable, identity
from smdebug.core.storage.errors import (
    FileTooLarge,
    StorageAccessDenied,
    StorageBucketNotFound,
    StorageError,
    StorageUnavailable,
    UnreadableFileError,
)

logger = get_logger()

MiB = 1 << 20
MIN_PART_SIZE = 5 * MiB  # S3's minimum for every part but the last
_BODY_CHUNK = 1 * MiB  # a response body is read this much at a time, never more than the bound allows
_CONTENT_RANGE_RE = re.compile(r"^\s*bytes\s+(\d+)-(\d+)/(\d+|\*)\s*$")


# ----------------------------------------------------------------------------------------------
# clients (one per process and configuration: creating a boto3 client costs ~50-100 ms)
# ----------------------------------------------------------------------------------------------
_CLIENT_ENV = (
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_REGION",
    "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
    "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "SMDEBUG_S3_RETRY_ATTEMPTS", "SMDEBUG_S3_CONNECT_TIMEOUT",
    "SMDEBUG_S3_READ_TIMEOUT", "SMDEBUG_S3_MAX_CONCURRENCY",
)
_clients: Dict[str, object] = {}
_clients_lock = threading.Lock()
_pools: Dict[int, concurrent.futures.ThreadPoolExecutor] = {}


def endpoint_url() -> Optional[str]:
    """The endpoint named by the environment (None: boto3's own resolution, i.e. AWS)."""
    if os.environ.get("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "").strip().lower() == "true":
        return None
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None


def max_concurrency() -> int:
    return max(1, env_int("SMDEBUG_S3_MAX_CONCURRENCY", 16))


def get_client():
    """A boto3 S3 client for the current environment (cached; boto3 clients are thread-safe)."""
    # The cache key is a digest: credentials never sit in a readable structure of ours.
    digest = hashlib.sha256("\0".join(os.environ.get(k, "\1") for k in _CLIENT_ENV).encode()).hexdigest()
    key = f"{os.getpid()}:{digest}"
    client = _clients.get(key)
    if client is not None:
        return client
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            config = Config(
                retries={"mode": "standard", "total_max_attempts": max(1, env_int("SMDEBUG_S3_RETRY_ATTEMPTS", 4))},
                connect_timeout=env_float("SMDEBUG_S3_CONNECT_TIMEOUT", 5),
                read_timeout=env_float("SMDEBUG_S3_READ_TIMEOUT", 60),
                max_pool_connections=max(10, 2 * max_concurrency()),
                user_agent_extra=f"smdebug/{__version__}",
            )
            session = boto3.session.Session()
            client = session.client("s3", region_name=os.environ.get("AWS_REGION") or None,
                                    endpoint_url=endpoint_url(), config=config)
            _clients[key] = client
    return client


def _pool() -> concurrent.futures.ThreadPoolExecutor:
    pool = _pools.get(os.getpid())
    if pool is None:
        with _clients_lock:
            pool = _pools.get(os.getpid())
            if pool is None:
                pool = _pools[os.getpid()] = concurrent.futures.ThreadPoolExecutor(
                    max_workers=max_concurrency(), thread_name_prefix="smdebug-s3")
    return pool


# ----------------------------------------------------------------------------------------------
# errors
# ----------------------------------------------------------------------------------------------
_ACCESS_CODES = {
    "AccessDenied", "AllAccessDisabled", "AccountProblem", "InvalidAccessKeyId", "SignatureDoesNotMatch",
    "ExpiredToken", "InvalidToken", "TokenRefreshRequired", "InvalidSecurity", "AuthorizationHeaderMalformed",
    "UnauthorizedAccess", "Forbidden", "InvalidClientTokenId", "RequestExpired", "403",
}
_CREDENTIAL_CODES = {"InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken",
                     "TokenRefreshRequired", "InvalidClientTokenId", "RequestExpired"}
_TRANSIENT_CODES = {
    "InternalError", "ServiceUnavailable", "SlowDown", "RequestTimeout", "Throttling", "ThrottlingException",
    "RequestLimitExceeded", "OperationAborted", "500", "502", "503", "504",
}
_IAM_ACTION = {
    "GetObject": "s3:GetObject", "HeadObject": "s3:GetObject", "PutObject": "s3:PutObject",
    "CreateMultipartUpload": "s3:PutObject", "UploadPart": "s3:PutObject", "CompleteMultipartUpload": "s3:PutObject",
    "AbortMultipartUpload": "s3:AbortMultipartUpload", "ListObjectsV2": "s3:ListBucket",
    "HeadBucket": "s3:ListBucket", "DeleteObject": "s3:DeleteObject", "CreateBucket": "s3:CreateBucket",
}
_TRANSPORT_ERRORS = (bexc.ConnectionError, bexc.HTTPClientError, socket.timeout, ConnectionError, TimeoutError)
_CREDENTIAL_ERRORS = tuple(
    c for c in (getattr(bexc, n, None) for n in (
        "NoCredentialsError", "PartialCredentialsError", "CredentialRetrievalError", "TokenRetrievalError",
        "SSOError", "ProfileNotFound", "UnauthorizedSSOTokenError", "RefreshWithMFAUnsupportedError",
    )) if c is not None
)
# failures while a response body streams, which botocore does not retry
_STREAM_ERRORS = tuple(
    c for c in (getattr(bexc, n, None) for n in ("ResponseStreamingError", "ReadTimeoutError", "IncompleteReadError"))
    if c is not None
)
_KEY_ID_RE = re.compile(r"\b(?:AKIA|ASIA|AROA|AIDA)[A-Z0-9]{12,}\b")


def _scrub(text: str) -> str:
    """Remove anything that could be a credential from a server or botocore message."""
    text = _KEY_ID_RE.sub("<access key id>", text or "")
    for name in ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID"):
        value = os.environ.get(name)
        if value and len(value) >= 6:
            text = text.replace(value, "<redacted>")
    return text[:300]


def _code_of(e: "bexc.ClientError") -> Tuple[str, Optional[int], str]:
    err = e.response.get("Error", {}) or {}
    status = (e.response.get("ResponseMetadata") or {}).get("HTTPStatusCode")
    return str(err.get("Code") or status or ""), status, str(err.get("Message") or "")


def translate_error(e: BaseException, operation: str, bucket: str, key: str) -> BaseException:
    """A clear exception for a failed S3 request. FileNotFoundError for a missing object."""
    if isinstance(e, StorageError):  # (ours already: a refused response, a missed deadline)
        return e
    where = f"s3://{bucket}/{key}"
    action = _IAM_ACTION.get(operation, "s3:" + operation)
    kw = dict(operation=operation, bucket=bucket, key=key)
    if isinstance(e, bexc.ClientError):
        code, status, message = _code_of(e)
        if code in ("NoSuchKey", "404", "NotFound", "NoSuchUpload"):
            return FileNotFoundError(errno.ENOENT, "No such S3 object", where)
        if code == "NoSuchBucket":
            return StorageBucketNotFound(f"S3 bucket '{bucket}' does not exist ({operation} of {where})",
                                         code=code, **kw)
        if code in _ACCESS_CODES or status == 403:
            if code in _CREDENTIAL_CODES:
                hint = ("the AWS credentials in use were rejected (invalid or expired); check AWS_PROFILE, "
                        "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/AWS_SESSION_TOKEN or the instance/container role")
            else:
                hint = f"check that the credentials in use are allowed {action} on bucket '{bucket}'"
            detail = f": {_scrub(message)}" if message and message != code else ""
            return StorageAccessDenied(
                f"S3 {operation} of {where} was denied ({code}{detail}); {hint}", code=code, **kw)
        if code in _TRANSIENT_CODES or (status is not None and status >= 500):
            return StorageUnavailable(f"S3 {operation} of {where} kept failing ({code}: {_scrub(message)})",
                                      code=code, **kw)
        return StorageError(f"S3 {operation} of {where} failed ({code}: {_scrub(message)})", code=code, **kw)
    if _CREDENTIAL_ERRORS and isinstance(e, _CREDENTIAL_ERRORS):
        return StorageAccessDenied(
            f"S3 {operation} of {where} needs AWS credentials and none could be used "
            f"({type(e).__name__}: {_scrub(str(e))}); configure them through the standard chain "
            "(environment variables, shared credentials/config files, or an instance/container role)",
            code=type(e).__name__, **kw)
    if isinstance(e, _TRANSPORT_ERRORS) or type(e).__name__ in ("ProtocolError", "IncompleteRead"):
        endpoint = endpoint_url() or "AWS"
        return StorageUnavailable(
            f"S3 {operation} of {where} failed: cannot reach the endpoint ({endpoint}): "
            f"{type(e).__name__}: {_scrub(str(e))}", code=type(e).__name__, **kw)
    if isinstance(e, bexc.BotoCoreError):
        return StorageError(f"S3 {operation} of {where} failed: {type(e).__name__}: {_scrub(str(e))}",
                            code=type(e).__name__, **kw)
    return e


# ----------------------------------------------------------------------------------------------
# response bodies: bounded, and with a deadline
# ----------------------------------------------------------------------------------------------
class _Deadlines:
    """One thread that cuts the connection of a response still streaming at its deadline.

    botocore's read timeout applies to each socket read: an endpoint that sends a byte now and then
    keeps a read going for ever. Shutting the socket down makes the blocked read return at once."""

    def __init__(self):
        self._cond = threading.Condition()
        self._watched: Dict[int, list] = {}  # id -> [deadline, socket, fired]
        self._next_id = 0
        self._thread: Optional[threading.Thread] = None
        self._pid = 0

    def watch(self, deadline: float, sock) -> list:
        entry = [deadline, sock, False]
        if self._pid != os.getpid():  # (a forked child: the parent's thread and lock are not its own)
            self._cond, self._watched, self._thread, self._pid = threading.Condition(), {}, None, os.getpid()
        with self._cond:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="smdebug-s3-deadlines", daemon=True)
                self._thread.start()
            self._next_id += 1
            entry.append(self._next_id)
            self._watched[self._next_id] = entry
            self._cond.notify()
        return entry

    def release(self, entry: list) -> None:
        """Stop watching; once this returns, the socket is never cut (it may serve another request)."""
        with self._cond:
            self._watched.pop(entry[3], None)

    def _run(self) -> None:
        cond = self._cond
        while True:
            with cond:
                now = time.monotonic()
                due = [e for e in self._watched.values() if e[0] <= now]
                for e in due:  # (under the lock: a released socket is never cut)
                    del self._watched[e[3]]
                    e[2] = True
                    try:
                        e[1].shutdown(socket.SHUT_RDWR)
                    except (OSError, AttributeError):
                        pass
                if not due:
                    wait = min((e[0] for e in self._watched.values()), default=now + 60) - now
                    cond.wait(max(0.01, wait))


_deadlines = _Deadlines()


def _socket_of(body):
    """The socket a botocore response body reads from (as botocore itself finds it), or None."""
    raw = getattr(body, "_raw_stream", None)
    try:
        return raw._fp.fp.raw._sock
    except AttributeError:
        return getattr(getattr(raw, "connection", None), "sock", None)


def _modified(value) -> Optional[int]:
    """A last-modified time as whole seconds (listings give milliseconds, GET headers seconds)."""
    try:
        return int(value.timestamp())
    except (AttributeError, TypeError, ValueError, OverflowError, OSError):
        return None


def _identity_of(meta: dict) -> Optional[str]:
    """The identity of the object version a listing item or a GET response describes."""
    return identity(meta.get("ETag"), _modified(meta.get("LastModified")))


# ----------------------------------------------------------------------------------------------
# storage
# ----------------------------------------------------------------------------------------------
#: empty listing pages in a row, each truncated, after which a listing is taken to never end (S3 may return a
#: short page, rarely an empty one; a thousand in a row is an endpoint handing out tokens to nothing)
MAX_EMPTY_LISTING_PAGES = 1000

class S3Storage(Storage):
    """A run under ``s3://bucket/prefix/``. Keys are relative to the prefix."""

    #: a BackgroundWriter on S3 never makes the training thread wait: when its byte budget is used up
    #: (S3 slow or unreachable) new steps are dropped and reported instead
    drop_when_full = True

    def __init__(self, path: str, cache_dir: Optional[str] = None):
        bucket, prefix = parse_s3_path(path)
        if not bucket:
            raise StorageError(f"Invalid S3 path {path!r}: no bucket name")
        prefix = re.sub("/+", "/", prefix).lstrip("/")
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        self.bucket = bucket
        self.prefix = prefix
        self.display_path = f"s3://{bucket}/{prefix}"
        self.multipart_threshold = max(MIN_PART_SIZE, env_int("SMDEBUG_S3_MULTIPART_THRESHOLD", 8 * MiB))
        self.part_size = max(MIN_PART_SIZE, env_int("SMDEBUG_S3_PART_SIZE", 8 * MiB))
        self.max_parts_in_flight = max(1, env_int("SMDEBUG_S3_PARTS_IN_FLIGHT", 4))
        #: neighbouring ranges of one object closer than this are fetched in one GET
        self.coalesce_gap = max(0, env_int("SMDEBUG_S3_COALESCE_GAP", 256 << 10))
        self.coalesce_max = max(1, env_int("SMDEBUG_S3_COALESCE_MAX", 16 * MiB))
        #: bytes a trial may fetch around a single requested record (its neighbours in the same event
        #: object), so asking for several tensors of one step costs one GET
        self.read_ahead = max(0, env_int("SMDEBUG_S3_READ_AHEAD", 1 * MiB))
        self.retry_base_delay = env_float("SMDEBUG_S3_RETRY_BASE_DELAY", 0.5)
        self.retry_max_delay = env_float("SMDEBUG_S3_RETRY_MAX_DELAY", 10.0)
        #: overall seconds one GET may take from its start to its last byte (plus a second per MiB it
        #: announces), on top of the per-read SMDEBUG_S3_READ_TIMEOUT. (The headers are waited for under
        #: the read timeout alone; the body is cut at the deadline.)
        self.request_timeout = env_float("SMDEBUG_S3_REQUEST_TIMEOUT", 120.0, minimum=0.01)
        self._cache_dir = cache_dir
        self._cache: Optional[DiskCache] = None
        self._cache_made = False
        #: the identity (ETag, last modified) of each object as the store reports it now: from a listing
        #: or from the first GET of this storage; disk cache entries of other identities are never served
        self._ids: Dict[str, str] = {}
        self._id_lock = threading.Lock()
        self._sizes: Dict[str, int] = {}  # object sizes seen in listings (files too large are refused unread)
        self._cancel = threading.Event()
        self._background_threads: set = set()
        self._lock = threading.Lock()
        self._counts: collections.Counter = collections.Counter()
        self.bytes_downloaded = 0
        self._outage_since: Optional[float] = None
        self._outage_error: Optional[str] = None
        self._client = None

    # --- plumbing -----------------------------------------------------------------------------
    @property
    def cache(self) -> Optional[DiskCache]:
        """The disk cache of this run (None without ``cache_dir``). Its folder is named by the endpoint
        the client talks to, the bucket and the prefix exactly as read: two runs share it only if they
        are one run."""
        if not self._cache_made:
            with self._lock:
                if not self._cache_made:
                    if self._cache_dir:
                        endpoint = getattr(self.client.meta, "endpoint_url", None) or endpoint_url() or "aws"
                        self._cache = DiskCache(self._cache_dir, "\0".join((endpoint, self.bucket, self.prefix)),
                                                hint=f"{self.bucket}_{self.prefix}")
                    self._cache_made = True
        return self._cache

    @property
    def client(self):
        if self._client is None:
            self._client = get_client()
        return self._client

    def _key(self, key: str) -> str:
        return self.prefix + key.lstrip("/") if key else self.prefix

    def request_counts(self) -> Dict[str, int]:
        """Requests sent by this storage, by operation (retries inside botocore not counted)."""
        with self._lock:
            return dict(self._counts)

    def reset_request_counts(self) -> None:
        with self._lock:
            self._counts.clear()
            self.bytes_downloaded = 0

    def serve_background_writer(self) -> None:
        """Called on a hook's writer thread: uploads from it retry until they succeed (or cancel)."""
        self._background_threads.add(threading.get_ident())
        self._cancel.clear()

    def cancel_pending(self) -> None:
        """Stop retrying: background uploads in progress or queued fail at once (hook close)."""
        self._cancel.set()

    @property
    def outage(self) -> Optional[str]:
        """The last error while S3 is failing (None when the last request succeeded)."""
        return self._outage_error

    def _call(self, operation: str, key: str, fn: Callable, background: Optional[bool] = None):
        """Run one S3 request; translate errors; on the writer thread retry transient failures."""
        if background is None:
            background = threading.get_ident() in self._background_threads
        delay = self.retry_base_delay
        while True:
            if background and self._cancel.is_set() and self._outage_since is not None:
                raise StorageUnavailable(
                    f"S3 {operation} of s3://{self.bucket}/{self._key(key)} not attempted: gave up waiting for "
                    f"S3 ({self._outage_error})", operation=operation, bucket=self.bucket, key=self._key(key))
            with self._lock:
                self._counts[operation] += 1
            try:
                result = fn()
            except Exception as e:  # noqa: BLE001 - translated below
                err = translate_error(e, operation, self.bucket, self._key(key))
                if not (background and isinstance(err, StorageUnavailable)):
                    if isinstance(err, StorageUnavailable):
                        self._note_outage(err, background=False)
                    if err is e:
                        raise
                    raise err from None
                self._note_outage(err, background=True)
                if self._cancel.wait(delay * (0.5 + random.random() / 2)):
                    raise err from None
                delay = min(delay * 2, self.retry_max_delay)
                continue
            if self._outage_since is not None:
                self._note_recovered()
            return result

    def _note_outage(self, err: StorageError, background: bool) -> None:
        with self._lock:
            first = self._outage_since is None
            if first:
                self._outage_since = time.monotonic()
            self._outage_error = str(err)
        if first and background:
            logger.warning(
                "smdebug: %s. Saving goes on in the background and retries until S3 answers; training is "
                "not blocked.", err)

    def _note_recovered(self) -> None:
        with self._lock:
            since, self._outage_since, self._outage_error = self._outage_since, None, None
        if since is not None and self._background_threads:
            logger.warning("smdebug: S3 is reachable again after %.1f s; uploads to %s resumed.",
                           time.monotonic() - since, self.display_path)

    # --- listing ------------------------------------------------------------------------------
    def list(self, prefix: str, start_after: Optional[str] = None, skip_unreadable: bool = False) -> List[str]:
        # (skip_unreadable: a prefix has no folders that cannot be listed; access is the bucket's)
        s3_prefix = self._key(prefix)
        if s3_prefix and not s3_prefix.endswith("/"):
            s3_prefix += "/"
        kwargs = {"Bucket": self.bucket, "Prefix": s3_prefix, "MaxKeys": 1000}
        if start_after:
            kwargs["StartAfter"] = self._key(start_after)
        out: List[str] = []
        changed: List[str] = []
        tokens_seen = set()
        last_page_end = None
        empty_pages = 0
        while True:
            page = self._call("ListObjectsV2", prefix, lambda: self.client.list_objects_v2(**kwargs))
            contents = page.get("Contents") or ()
            # A page that ends where the last one ended is the same page again (an endpoint that does not
            # move on): it would be listed, and its keys kept, for ever.
            page_end = contents[-1].get("Key") if contents else None
            if page_end is not None and page_end == last_page_end:
                self._endless_listing(s3_prefix, f"it gave the page ending at {page_end[:200]!r} twice")
            last_page_end = page_end if page_end is not None else last_page_end
            empty_pages = 0 if contents else empty_pages + 1
            if empty_pages > MAX_EMPTY_LISTING_PAGES:
                self._endless_listing(s3_prefix, f"it gave {empty_pages:,} empty pages in a row, each saying more "
                                                 "would follow")
            for item in contents:
                rel = self._note_listed(item)
                out.append(rel)
                cache = self.cache
                if cache is not None and rel.startswith("index/"):
                    # an index object is never rewritten by its run: another identity means another run
                    # (even with byte-identical index files, the times differ)
                    cached = cache.whole_identity(rel)
                    if cached is not None and cached != self._ids.get(rel):
                        changed.append(rel)
            token = page.get("NextContinuationToken")
            if not page.get("IsTruncated") or not token:
                break
            if token in tokens_seen:
                self._endless_listing(s3_prefix, f"it gave the continuation token {str(token)[:100]!r} twice")
            tokens_seen.add(token)
            kwargs.pop("StartAfter", None)
            kwargs["ContinuationToken"] = token
        if changed:
            logger.warning("smdebug: %s was rewritten since it was cached (%s is another object now); dropping "
                           "its disk cache", self.display_path, self.full_path(changed[0]))
            self.cache.clear()
        return out

    def _endless_listing(self, s3_prefix: str, why: str) -> None:
        """A listing that would never end (S3 itself never repeats a token or a page): an error, not a hang
        that keeps every page's keys."""
        raise StorageError(f"S3 ListObjectsV2 of s3://{self.bucket}/{s3_prefix} does not end: {why} (an endpoint "
                           "that is not S3, or a broken one)", operation="ListObjectsV2", bucket=self.bucket,
                           key=s3_prefix)

    def _note_listed(self, item: dict) -> str:
        """Remember a listed object's size and identity; its key relative to the run."""
        rel = item["Key"][len(self.prefix):]
        if isinstance(item.get("Size"), int):
            self._sizes[rel] = item["Size"]
        if self._cache_dir and cacheable(rel):
            ident = _identity_of(item)
            if ident is None:
                self._ids.pop(rel, None)
            else:
                self._ids[rel] = ident
        return rel

    def _identify(self, key: str) -> Optional[str]:
        """The identity the store reports now for ``key`` (once per object per storage): one listing page
        that starts at the key, whose other 999 objects (the next steps' event files) come with it."""
        with self._id_lock:
            if key in self._ids:
                return self._ids[key]
            folder = key.split("/", 1)[0] + "/"
            full = self._key(key)
            kwargs = {"Bucket": self.bucket, "Prefix": self._key(folder), "StartAfter": full[:-1], "MaxKeys": 1000}
            page = self._call("ListObjectsV2", folder, lambda: self.client.list_objects_v2(**kwargs))
            for item in page.get("Contents") or ():
                if item.get("Key", "").startswith(self.prefix):
                    self._note_listed(item)
            return self._ids.get(key)

    def _cached(self, key: str, offset: int, length: Optional[int]) -> Optional[bytes]:
        """Bytes from the disk cache, if it holds them for the object version the store has now."""
        cache = self.cache
        if cache is None or not cacheable(key):
            return None
        ident = self._ids.get(key)
        if ident is None:
            if not cache.has_entries(key):
                return None  # (a miss in any case: no listing request spent on it)
            ident = self._identify(key)
        return cache.get(key, offset, length, ident)

    def _store(self, key: str, offset: int, length: Optional[int], data: bytes, ident: Optional[str]) -> None:
        cache = self.cache
        if cache is None or not data or ident is None or not cacheable(key):
            return
        self._ids[key] = ident  # what this GET returned is what the store has now
        if offset == 0 and length is None:
            cache.put_whole(key, data, ident)
        else:
            cache.put_span(key, offset, data, ident)

    # --- reading ------------------------------------------------------------------------------
    def read(self, key: str, offset: int = 0, length: Optional[int] = None) -> bytes:
        return self._read(key, offset, length)

    def _read(self, key: str, offset: int, length: Optional[int], limit: Optional[int] = None,
              setting: str = "") -> bytes:
        if length is not None and length <= 0:
            return b""
        hit = self._cached(key, offset, length)
        if hit is not None:
            if limit is not None and len(hit) > limit:
                raise FileTooLarge(self.full_path(key), len(hit), limit, setting)
            return hit
        data, ident = self._get(key, offset, length, limit, setting)
        self._store(key, offset, length, data, ident)
        return data

    def read_limited(self, key: str, limit: int, setting: str = "") -> bytes:
        size = self._sizes.get(key)
        if size is None:  # not listed: one ranged GET of at most limit + 1 bytes tells
            return super().read_limited(key, limit, setting)
        if size > limit:
            raise FileTooLarge(self.full_path(key), size, limit, setting)
        # (whole: the disk cache keeps whole objects by identity; the GET reads at most limit + 1 bytes)
        return self._read(key, 0, None, limit, setting)

    def read_files(self, keys: Sequence[str], limit: int, setting: str = "") -> list:
        out: list = [None] * len(keys)
        whole = []  # listed objects of a size within the limit: fetched together, in parallel
        for i, key in enumerate(keys):
            size = self._sizes.get(key)
            if size is not None and size > limit:
                out[i] = FileTooLarge(self.full_path(key), size, limit, setting)
            elif size is not None:
                whole.append(i)

        def one(key: str):
            try:
                return self._read(key, 0, None, limit, setting)
            except (FileNotFoundError, UnreadableFileError) as e:  # (gone since the listing, or refused)
                return e

        if len(whole) == 1:
            out[whole[0]] = one(keys[whole[0]])
        elif whole:
            for i, got in zip(whole, helper_pool.map_results(_pool(), one, [keys[i] for i in whole])):
                out[i] = got
        for i, key in enumerate(keys):
            if out[i] is None:
                try:
                    out[i] = self.read_limited(key, limit, setting)
                except (FileNotFoundError, UnreadableFileError) as e:
                    out[i] = e
        return out

    def _get(self, key: str, offset: int, length: Optional[int], limit: Optional[int] = None,
             setting: str = "") -> Tuple[bytes, Optional[str]]:
        """One GET of ``[offset, offset+length)`` (or of the rest from ``offset``): the bytes, and the
        identity of the object version they come from. Whole objects: at most ``limit`` bytes
        (FileTooLarge beyond). The response is held to the request (see :meth:`_read_body`)."""
        kwargs = {"Bucket": self.bucket, "Key": self._key(key)}
        if offset or length is not None:
            end = "" if length is None else str(offset + length - 1)
            kwargs["Range"] = f"bytes={offset}-{end}"

        def fetch():
            # A connection dropped while the body streams is not retried by botocore: retry here.
            for attempt in range(3):
                started = time.monotonic()
                try:
                    resp = self.client.get_object(**kwargs)
                    return self._read_body(key, resp, offset, length, limit, setting, started), _identity_of(resp)
                except bexc.ClientError as e:
                    if _code_of(e)[0] == "InvalidRange":  # offset past the end: like reading a file
                        return b"", None
                    raise
                except _STREAM_ERRORS:
                    if attempt == 2:
                        raise
                    time.sleep(0.1 * (attempt + 1))
            raise AssertionError("unreachable")

        data, ident = self._call("GetObject", key, fetch)
        with self._lock:
            self.bytes_downloaded += len(data)
        return data, ident

    def _read_body(self, key: str, resp: dict, offset: int, length: Optional[int], limit: Optional[int],
                   setting: str, started: float) -> bytes:
        """The body of a GET, read in chunks and never past what was asked for.

        * A ranged GET must be answered with that range (206 and a ``Content-Range`` starting at
          ``offset`` and ending within the range; a shorter end is the end of the object), or with the
          whole object when it lies within a range from 0. An endpoint that ignores ``Range`` and sends
          the whole object is refused naming the key, not read (gigabytes for a record of a few bytes).
        * A whole object is read to at most ``limit`` bytes (FileTooLarge naming the key beyond: from
          ``Content-Length`` before any byte is read, else after ``limit + 1``), or to its announced
          ``Content-Length``.
        * A body that announces one length and carries another is refused naming the key.
        * The whole request must finish within ``request_timeout`` (plus a second per MiB announced).
        Refusals are UnreadableFileError (readers turn them into their file's documented exception).
        """
        where = self.full_path(key)
        meta = resp.get("ResponseMetadata") or {}
        status = meta.get("HTTPStatusCode")
        declared = resp.get("ContentLength")
        declared = declared if isinstance(declared, int) and declared >= 0 else None
        body = resp["Body"]
        ranged = bool(offset or length is not None)
        asked = f"bytes {offset}-{'' if length is None else offset + length - 1}"
        bound: Optional[int]
        try:
            if ranged:
                content_range = resp.get("ContentRange") or ""
                m = _CONTENT_RANGE_RE.match(content_range)
                if status == 206 and m:
                    first, last = int(m.group(1)), int(m.group(2))
                    if first != offset or last < first or (length is not None and last > offset + length - 1):
                        raise UnreadableFileError(where, f"S3 was asked for {asked} and answered with "
                                                         f"{content_range.strip()!r}, another range")
                    bound = last - first + 1
                elif status == 200 and offset == 0 and length is not None and declared is not None \
                        and declared <= length:
                    bound = declared  # the whole object lies within the range asked for
                else:
                    sent = f"{declared} bytes" if declared is not None else "a body of unknown length"
                    raise UnreadableFileError(where, (
                        f"S3 was asked for {asked} and answered HTTP {status} with {sent} and "
                        f"{('Content-Range ' + repr(content_range.strip())) if content_range else 'no Content-Range'}"
                        "; the endpoint does not honour byte ranges, which smdebug needs to read tensors"))
                if declared is not None and declared != bound:
                    raise UnreadableFileError(where, f"S3 answered {asked} with a Content-Length of {declared} "
                                                     f"bytes for a range of {bound}")
            else:
                if limit is not None and declared is not None and declared > limit:
                    raise FileTooLarge(where, declared, limit, setting)
                bound = limit if limit is not None else declared
        except BaseException:
            body.close()  # (never read: the connection is closed, not kept half-read in the pool)
            raise
        expected = declared if declared is not None else bound
        deadline = started + self.request_timeout + (expected or 0) / MiB
        data = self._stream(key, body, bound, deadline)
        if not ranged and limit is not None and len(data) > limit:
            raise FileTooLarge(where, None, limit, setting)
        if bound is not None and len(data) > bound:
            raise UnreadableFileError(where, f"S3 sent more than the {bound} bytes "
                                             f"{'asked for' if ranged else 'it announced'} ({asked})")
        if declared is not None and len(data) != declared:
            raise UnreadableFileError(where, f"S3 announced {declared} bytes and sent {len(data)} ({asked})")
        return data

    def _stream(self, key: str, body, bound: Optional[int], deadline: float) -> bytes:
        """At most ``bound + 1`` bytes of ``body`` (all of it without a bound), before ``deadline``."""
        buf = bytearray()
        watch = None
        sock = _socket_of(body)
        if sock is not None:
            watch = _deadlines.watch(deadline, sock)
        complete = False
        try:
            while True:
                want = _BODY_CHUNK if bound is None else min(_BODY_CHUNK, bound + 1 - len(buf))
                if want <= 0:
                    break  # one byte more than allowed: enough to know
                try:
                    chunk = body.read(want)
                except Exception:  # noqa: BLE001 - the deadline cut the connection: say that
                    if (watch is not None and watch[2]) or time.monotonic() > deadline:
                        raise self._too_slow(key, len(buf), deadline) from None
                    raise
                if not chunk:
                    if (watch is not None and watch[2]) or time.monotonic() > deadline:
                        raise self._too_slow(key, len(buf), deadline)
                    complete = True
                    break
                buf += chunk
                if time.monotonic() > deadline:
                    raise self._too_slow(key, len(buf), deadline)
        finally:
            if watch is not None:
                _deadlines.release(watch)
            if not complete:
                body.close()  # (the rest is not read: drop the connection rather than drain it)
        return bytes(buf)

    def _too_slow(self, key: str, received: int, deadline: float) -> StorageUnavailable:
        full = self._key(key)
        return StorageUnavailable(
            f"S3 GetObject of s3://{self.bucket}/{full} did not finish in time: {received} bytes came in "
            f"{self.request_timeout:g} s (SMDEBUG_S3_REQUEST_TIMEOUT) plus a second per MiB; the endpoint "
            "is too slow or stalls", operation="GetObject", bucket=self.bucket, key=full, code="RequestDeadline")

    def read_many(self, requests: Sequence[Tuple[str, int, Optional[int]]]) -> List[bytes]:
        """Many reads: neighbouring ranges of one object become one ranged GET; GETs run in parallel."""
        return self._read_many(requests)

    def _read_many(self, requests: Sequence[Tuple[str, int, Optional[int]]], limit: Optional[int] = None,
                   setting: str = "") -> List[bytes]:
        """``limit``: whole objects larger than this are refused (FileTooLarge), read to limit + 1 at most."""
        results: List[Optional[bytes]] = [None] * len(requests)
        pending: Dict[str, List[Tuple[int, int, Optional[int]]]] = {}
        for i, (key, offset, length) in enumerate(requests):
            if length is not None and length <= 0:
                results[i] = b""
                continue
            hit = self._cached(key, offset, length)
            if hit is not None and (limit is None or length is not None or len(hit) <= limit):
                results[i] = hit
                continue
            pending.setdefault(key, []).append((i, offset, length))
        jobs = []  # (key, start, length or None, [(index, offset, length)])
        for key, reqs in pending.items():
            jobs.extend(self._coalesce(key, reqs))
        if not jobs:
            return results  # type: ignore[return-value]
        if len(jobs) == 1:
            fetched = [self._fetch_job(jobs[0], limit, setting)]
        else:
            futures = [helper_pool.submit(_pool(), self._fetch_job, job, limit, setting) for job in jobs]
            concurrent.futures.wait(futures)
            fetched = [f.result() for f in futures]  # the first failure (in request order) is raised
        for (key, start, _length, members), data in zip(jobs, fetched):
            for i, offset, length in members:
                rel = offset - start
                results[i] = data[rel:] if length is None else data[rel:rel + length]
        return results  # type: ignore[return-value]

    def _coalesce(self, key: str, reqs: List[Tuple[int, int, Optional[int]]]):
        if any(length is None for _, _, length in reqs):
            start = min(offset for _, offset, _ in reqs)
            if start == 0 or len(reqs) == 1:
                return [(key, start, None, reqs)]
        reqs = sorted(reqs, key=lambda r: r[1])
        jobs = []
        cur: List[Tuple[int, int, Optional[int]]] = []
        cur_start = cur_end = 0
        for r in reqs:
            _, offset, length = r
            end = offset + (length or 0)
            if cur and offset <= cur_end + self.coalesce_gap and max(end, cur_end) - cur_start <= self.coalesce_max:
                cur.append(r)
                cur_end = max(cur_end, end)
                continue
            if cur:
                jobs.append((key, cur_start, cur_end - cur_start, cur))
            cur, cur_start, cur_end = [r], offset, end
        if cur:
            jobs.append((key, cur_start, cur_end - cur_start, cur))
        return jobs

    def _fetch_job(self, job, limit: Optional[int] = None, setting: str = "") -> bytes:
        key, start, length, _members = job
        return self._read(key, start, length, limit if start == 0 and length is None else None, setting)

    def _head(self, key: str) -> Optional[dict]:
        try:
            return self._call("HeadObject", key, lambda: self.client.head_object(Bucket=self.bucket, Key=self._key(key)))
        except FileNotFoundError:
            return None

    def exists(self, key: str) -> bool:
        return self._head(key) is not None

    def has_folder(self, prefix: str) -> bool:
        s3_prefix = self._key(prefix).rstrip("/") + "/"
        page = self._call("ListObjectsV2", prefix,
                          lambda: self.client.list_objects_v2(Bucket=self.bucket, Prefix=s3_prefix, MaxKeys=1))
        return bool(page.get("Contents"))

    def age(self, key: str) -> Optional[float]:
        head = self._head(key)
        if head is None or head.get("LastModified") is None:
            return None
        return max(0.0, time.time() - head["LastModified"].timestamp())

    def stat(self, key: str) -> Optional[Tuple[str, float]]:
        """(ETag, age in seconds) of an object, or None if it does not exist."""
        head = self._head(key)
        if head is None:
            return None
        modified = head.get("LastModified")
        return head.get("ETag", ""), (max(0.0, time.time() - modified.timestamp()) if modified else 0.0)

    # --- writing ------------------------------------------------------------------------------
    def open_writer(self, key: str) -> "S3Writer":
        return S3Writer(self, key)

    def write_atomic(self, key: str, data: bytes) -> None:
        if len(data) < self.multipart_threshold:
            self._put(key, data)
            return
        super().write_atomic(key, data)

    def _put(self, key: str, data: bytes, background: Optional[bool] = None, **extra) -> dict:
        body = bytes(data)
        return self._call("PutObject", key, lambda: self.client.put_object(
            Bucket=self.bucket, Key=self._key(key), Body=body, **extra), background=background)

    def create_exclusive(self, key: str, data: bytes) -> bool:
        """Create ``key`` only if it does not exist: a conditional PUT (``If-None-Match: *``).

        Endpoints without conditional writes fall back to look-then-put, which two processes starting
        at the same instant can both win (logged at debug level).
        """
        try:
            self._put(key, data, background=False, IfNoneMatch="*")
            return True
        except StorageError as e:
            if e.code in ("PreconditionFailed", "ConditionalRequestConflict", "412", "409"):
                return False
            if e.code not in ("NotImplemented", "501", "ParamValidationError", "InvalidArgument"):
                raise
        logger.debug("smdebug: %s has no conditional PUT; claiming %s without it", self.display_path, key)
        if self.exists(key):
            return False
        self._put(key, data, background=False)
        return True

    def replace_if_unchanged(self, key: str, data: bytes, etag: str) -> bool:
        """Overwrite ``key`` only if its ETag is still ``etag`` (``If-Match``); False if it changed."""
        try:
            self._put(key, data, background=False, IfMatch=etag)
            return True
        except FileNotFoundError:
            return False
        except StorageError as e:
            if e.code in ("PreconditionFailed", "ConditionalRequestConflict", "412", "409"):
                return False
            if e.code not in ("NotImplemented", "501", "ParamValidationError", "InvalidArgument"):
                raise
        self._put(key, data, background=False)
        return True

    def remove(self, key: str) -> None:
        try:
            self._call("DeleteObject", key, lambda: self.client.delete_object(Bucket=self.bucket, Key=self._key(key)))
        except FileNotFoundError:
            pass

    def ensure_bucket(self) -> bool:
        """Create the bucket if it does not exist (as the original did). True if it was created.

        A bucket we may not inspect (403) is left alone: the first write says whether we may write.
        """
        try:
            self._call("HeadBucket", "", lambda: self.client.head_bucket(Bucket=self.bucket), background=False)
            return False
        except (FileNotFoundError, StorageBucketNotFound):
            pass
        except StorageAccessDenied:
            return False
        region = self.client.meta.region_name
        kwargs = {"Bucket": self.bucket}
        if region and region != "us-east-1":
            kwargs["CreateBucketConfiguration"] = {"LocationConstraint": region}
        try:
            self._call("CreateBucket", "", lambda: self.client.create_bucket(**kwargs), background=False)
        except StorageError as e:
            if e.code in ("BucketAlreadyOwnedByYou",):
                return False
            raise
        logger.info("smdebug: created S3 bucket %s", self.bucket)
        return True


class S3Writer(StorageWriter):
    """An object being written: buffered, or streamed as a multipart upload once it is large.

    Nothing appears under the key until :meth:`commit` (a PUT, or the multipart completion).
    """

    def __init__(self, storage: S3Storage, key: str):
        self._s = storage
        self._key = key
        self._buf = bytearray()
        self._pos = 0
        self._upload_id: Optional[str] = None
        self._parts: List[concurrent.futures.Future] = []
        self._background = threading.get_ident() in storage._background_threads
        self._done = False

    def write(self, data) -> None:
        if self._done:
            raise ValueError(f"write to a closed S3 object {self._key}")
        self._buf += data
        self._pos += len(data)
        if len(self._buf) >= (self._s.part_size if self._upload_id else self._s.multipart_threshold):
            self._send_parts(final=False)

    def tell(self) -> int:
        return self._pos

    def _send_parts(self, final: bool) -> None:
        s = self._s
        if self._upload_id is None:
            resp = s._call("CreateMultipartUpload", self._key, lambda: s.client.create_multipart_upload(
                Bucket=s.bucket, Key=s._key(self._key)), background=self._background)
            self._upload_id = resp["UploadId"]
        while len(self._buf) >= s.part_size or (final and self._buf):
            chunk = bytes(self._buf[:s.part_size])
            del self._buf[:s.part_size]
            in_flight = [f for f in self._parts if not f.done()]
            if len(in_flight) >= s.max_parts_in_flight:
                concurrent.futures.wait(in_flight, return_when=concurrent.futures.FIRST_COMPLETED)
            failed = next((f for f in self._parts if f.done() and f.exception() is not None), None)
            if failed is not None:
                failed.result()
            self._parts.append(helper_pool.submit(_pool(), self._upload_part, len(self._parts) + 1, chunk))

    def _upload_part(self, number: int, chunk: bytes) -> str:
        s = self._s
        resp = s._call("UploadPart", self._key, lambda: s.client.upload_part(
            Bucket=s.bucket, Key=s._key(self._key), UploadId=self._upload_id, PartNumber=number, Body=chunk),
            background=self._background)
        return resp["ETag"]

    def commit(self) -> None:
        if self._done:
            return
        s = self._s
        try:
            if self._upload_id is None:
                s._put(self._key, self._buf, background=self._background)
            else:
                self._send_parts(final=True)
                etags = [f.result() for f in self._parts]
                parts = [{"ETag": e, "PartNumber": i + 1} for i, e in enumerate(etags)]
                s._call("CompleteMultipartUpload", self._key, lambda: s.client.complete_multipart_upload(
                    Bucket=s.bucket, Key=s._key(self._key), UploadId=self._upload_id,
                    MultipartUpload={"Parts": parts}), background=self._background)
                self._upload_id = None
        except BaseException:
            self.abort()
            raise
        self._done = True
        self._buf = bytearray()

    def abort(self) -> None:
        self._done = True
        self._buf = bytearray()
        for f in self._parts:
            f.cancel()
        if self._upload_id is not None:
            upload_id, self._upload_id = self._upload_id, None
            concurrent.futures.wait(self._parts)
            s = self._s
            try:  # best effort: a lifecycle rule cleans up what we could not
                s._call("AbortMultipartUpload", self._key, lambda: s.client.abort_multipart_upload(
                    Bucket=s.bucket, Key=s._key(self._key), UploadId=upload_id), background=False)
            except Exception:  # noqa: BLE001
                pass
