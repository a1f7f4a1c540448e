"""An S3 endpoint whose listing never ends (red team 9).

ListObjectsV2 pages on while a page says it is truncated and hands a continuation token. An endpoint that
repeats a token, repeats a page under new tokens, or hands out tokens to empty pages (a broken S3-compatible
store, or a hostile one) kept ``create_trial`` listing for ever, every page's keys kept (100 requests a
second, memory growing). S3 itself never repeats a token or a page: such a listing is a StorageError naming
the prefix and what was repeated, after two pages (a run of empty pages: after MAX_EMPTY_LISTING_PAGES).

The endpoint is a small real HTTP server speaking ListObjectsV2 (path style) as boto3 asks for it.
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytest.importorskip("boto3")

from smdebug.core.storage.errors import StorageError  # noqa: E402
from smdebug.trials import create_trial  # noqa: E402

KEY = "run/collections/000000000/worker_0_collections.json"


class _EndlessListing(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "EndlessS3"

    def log_message(self, *args):  # (quiet)
        pass

    def do_GET(self):
        self.server.requests += 1
        mode, n = self.server.mode, self.server.requests
        token = "same" if mode == "same token" else f"token-{n}"
        contents = "" if mode == "empty pages" else (
            f"<Contents><Key>{KEY}</Key><Size>10</Size><ETag>&quot;e&quot;</ETag>"
            "<LastModified>2020-01-01T00:00:00.000Z</LastModified></Contents>")
        if mode == "same token":  # (each page a new key, so that only the token repeats)
            contents = contents.replace("worker_0", f"worker_{n}")
        body = ('<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>bkt</Name><Prefix>run/</Prefix>'
                f"<MaxKeys>1000</MaxKeys><IsTruncated>true</IsTruncated>"
                f"<NextContinuationToken>{token}</NextContinuationToken>{contents}</ListBucketResult>").encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class EndlessS3(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, mode):
        super().__init__(("127.0.0.1", 0), _EndlessListing)
        self.mode, self.requests = mode, 0


@pytest.fixture
def endless_s3(monkeypatch, request):
    server = EndlessS3(request.param)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    for k, v in {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{server.server_address[1]}", "AWS_ACCESS_KEY_ID": "testing",
                 "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1",
                 "SMDEBUG_S3_RETRY_ATTEMPTS": "1"}.items():
        monkeypatch.setenv(k, v)
    for k in ("AWS_ENDPOINT_URL_S3", "AWS_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(k, raising=False)
    yield server
    server.shutdown()
    server.server_close()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("endless_s3, said", [
    ("same token", "gave the continuation token 'same' twice"),
    ("same page", "gave the page ending at"),
    ("empty pages", "empty pages in a row"),
], indirect=["endless_s3"])
def test_a_listing_that_never_ends_is_an_error_not_a_hang(endless_s3, said, monkeypatch):
    import smdebug.core.storage.s3 as s3

    monkeypatch.setattr(s3, "MAX_EMPTY_LISTING_PAGES", 30, raising=False)
    started = time.monotonic()
    outcome = []

    def open_it():
        try:
            create_trial("s3://bkt/run/")
            outcome.append("opened")
        except StorageError as e:
            outcome.append(e)

    reader = threading.Thread(target=open_it, daemon=True)
    reader.start()
    reader.join(60)
    assert outcome, f"still listing after 60 s ({endless_s3.requests} requests)"
    assert isinstance(outcome[0], StorageError), outcome
    assert "does not end" in str(outcome[0]) and said in str(outcome[0]) and "s3://bkt/run/" in str(outcome[0])
    assert endless_s3.requests <= 40 and time.monotonic() - started < 60
