"""S3 endpoints whose answers are not what was asked for: a body far larger than the listing said, a byte
range answered with the whole object or with another range, a body dripped a byte at a time. Readers
must stay within what they asked for (memory and time) and say which key, what was asked, what came.

The endpoint is a small real HTTP server in this file speaking enough of the S3 REST API for boto3
(path-style ListObjectsV2, GET with Range, HEAD), serving a run written to a local folder by the real
writers; each test switches one lie on. Bodies are 64 MiB and limits are lowered through settings, so
the tests are quick; the server counts the bytes it managed to send for each request.
"""

import hashlib
import os
import re
import threading
import time
import urllib.parse
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from xml.sax.saxutils import escape

import numpy as np
import pytest

from _support import write_run

pytest.importorskip("boto3")

from smdebug.core.storage.errors import FileTooLarge, StorageUnavailable, UnreadableFileError  # noqa: E402
from smdebug.core.storage.factory import get_storage  # noqa: E402
from smdebug.exceptions import EventFileCorrupted  # noqa: E402
from smdebug.trials import create_trial  # noqa: E402

BIG = 64 << 20
BUCKET, PREFIX = "bkt", "run/"
MODIFIED = time.time() - 3600


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "LyingS3"

    def log_message(self, *args):  # (quiet)
        pass

    def _reply(self, code, body=b"", headers=()):
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _object_headers(self, data):
        return [("ETag", '"%s"' % hashlib.md5(data).hexdigest()),
                ("Last-Modified", formatdate(MODIFIED, usegmt=True)), ("Accept-Ranges", "bytes")]

    def _stream(self, total, first=b"", filler=b" ", chunked=False, delay=0.0):
        """Send ``total`` bytes (``first`` then filler), counting what got out before the client left."""
        sent = 0
        try:
            if first:
                self._write(first, chunked)
                sent += len(first)
            block = filler * (1 << 20)
            while sent < total:
                n = 1 if delay else min(len(block), total - sent)
                self._write(block[:n], chunked)
                sent += n
                if delay:
                    time.sleep(delay)
            if chunked:
                self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            self.server.sent.append((self.path, sent))

    def _write(self, data, chunked):
        if chunked:
            self.wfile.write(b"%x\r\n" % len(data) + data + b"\r\n")
        else:
            self.wfile.write(data)
        self.wfile.flush()

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        bucket, _, key = url.path.lstrip("/").partition("/")
        key = urllib.parse.unquote(key)
        if not key:
            return self._list(urllib.parse.parse_qs(url.query))
        data = self.server.objects.get(key[len(PREFIX):]) if key.startswith(PREFIX) else None
        if data is None:
            return self._reply(404, b"<Error><Code>NoSuchKey</Code><Message>none</Message></Error>")
        rel, lie = key[len(PREFIX):], self.server.lie
        headers = self._object_headers(data)
        if self.command == "GET" and lie and rel.startswith(lie[1]):
            return self._lie(lie[0], data, headers)
        m = re.match(r"bytes=(\d+)-(\d*)$", self.headers.get("Range", ""))
        if m and self.command == "GET":
            first = int(m.group(1))
            last = min(int(m.group(2)) if m.group(2) else len(data) - 1, len(data) - 1)
            if first >= len(data):
                return self._reply(416, b"<Error><Code>InvalidRange</Code><Message>past the end</Message></Error>")
            return self._reply(206, data[first:last + 1],
                               headers + [("Content-Range", f"bytes {first}-{last}/{len(data)}")])
        self._reply(200, data, headers)

    def _lie(self, kind, data, headers):
        if kind == "wrong-range":  # a 206 for bytes other than those asked for
            piece = data[:40]
            return self._reply(206, piece, headers + [("Content-Range", f"bytes 0-{len(piece) - 1}/{len(data)}")])
        self.send_response(200)
        for k, v in headers:
            self.send_header(k, v)
        if kind == "chunked":  # no length announced: only the reader's own bound stops it
            self.send_header("Transfer-Encoding", "chunked")
        elif kind == "drip":
            self.send_header("Content-Length", str(len(data)))
        else:
            self.send_header("Content-Length", str(BIG))
        self.end_headers()
        if kind == "drip":
            return self._stream(len(data), delay=0.25)
        if kind == "ignore-range":  # the whole object, padded out, whatever Range said
            return self._stream(BIG, first=data, filler=b"\0")
        return self._stream(BIG, chunked=kind == "chunked")

    def _list(self, query):
        prefix = query.get("prefix", [""])[0]
        after = query.get("start-after", [""])[0]
        items = []
        for rel in sorted(self.server.objects):
            full = PREFIX + rel
            if full.startswith(prefix) and full > after:
                data = self.server.objects[rel]
                items.append(f"<Contents><Key>{escape(full)}</Key><Size>{len(data)}</Size>"
                             f"<ETag>&quot;{hashlib.md5(data).hexdigest()}&quot;</ETag><LastModified>"
                             f"{time.strftime('%Y-%m-%dT%H:%M:%S.000Z', time.gmtime(MODIFIED))}</LastModified>"
                             "<StorageClass>STANDARD</StorageClass></Contents>")
        body = ('<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>bkt</Name>'
                f"<Prefix>{escape(prefix)}</Prefix><KeyCount>{len(items)}</KeyCount><MaxKeys>1000</MaxKeys>"
                f"<IsTruncated>false</IsTruncated>{''.join(items)}</ListBucketResult>").encode()
        self._reply(200, body, [("Content-Type", "application/xml")])


class LyingS3(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, run_dir):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.objects = {}
        for root, _, files in os.walk(run_dir):
            for f in files:
                path = os.path.join(root, f)
                self.objects[os.path.relpath(path, run_dir).replace(os.sep, "/")] = open(path, "rb").read()
        self.lie = None  # (kind, key prefix it applies to)
        self.sent = []  # (request path, bytes sent)

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.server_address[1]}"

    def most_sent(self, key_prefix, wait=10.0):
        """The most bytes one stream of a key under ``key_prefix`` sent. A stream is recorded once it ends (the
        client left), which the handler's thread may see a moment after the client returned: under load the
        list was still empty when the test asked (CI); so wait up to ``wait`` seconds for a first record."""
        wanted = f"/{BUCKET}/{PREFIX}{key_prefix}"
        deadline = time.monotonic() + wait
        while not any(wanted in p for p, _ in self.sent) and time.monotonic() < deadline:
            time.sleep(0.05)
        return max((n for p, n in self.sent if wanted in p), default=0)


@pytest.fixture
def lying_s3(tmp_path, monkeypatch):
    run = tmp_path / "run"
    write_run(str(run), range(3), tensors=lambda s, w: {"w": np.full(3, s, np.float32), "b": np.ones(2)})
    server = LyingS3(str(run))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {"AWS_ENDPOINT_URL": server.endpoint, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_REGION": "us-east-1", "SMDEBUG_S3_RETRY_ATTEMPTS": "1", "SMDEBUG_S3_CONNECT_TIMEOUT": "2"}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    server.env = env
    yield server
    server.shutdown()
    server.server_close()


INDEX_1 = "index/000000000/000000000001_worker_0.json"
EVENTS_1 = "events/000000000001/000000000001_worker_0.tfevents"


def test_an_index_object_far_larger_than_listed_is_refused_unread_by_ls(lying_s3, smdebug_cli):
    lying_s3.lie = ("big", "index/")
    out = smdebug_cli("ls", f"s3://{BUCKET}/{PREFIX}", env={"SMDEBUG_MAX_INDEX_FILE_BYTES": str(1 << 20)},
                      timeout=120)
    assert out.returncode == 2, out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "index/000000000/00000000000" in lines[0], out.stderr
    assert f"{BIG} bytes, more than the {1 << 20} bytes accepted" in lines[0], lines
    assert "SMDEBUG_MAX_INDEX_FILE_BYTES" in lines[0]
    # refused from the announced length: the 64 MiB bodies were not downloaded
    assert 0 < lying_s3.most_sent("index/") < BIG // 2, lying_s3.sent


def test_a_body_of_no_announced_length_is_read_only_to_the_limit(lying_s3):
    lying_s3.lie = ("chunked", "index/")
    storage = get_storage(f"s3://{BUCKET}/{PREFIX}")
    keys = storage.list("index")
    got = storage.read_files(keys, 1 << 20, "SMDEBUG_MAX_INDEX_FILE_BYTES")
    assert len(got) == 3 and all(isinstance(g, FileTooLarge) for g in got), got
    assert all(k in str(g) and f"more than {1 << 20} bytes" in str(g) for k, g in zip(keys, got))
    assert 0 < lying_s3.most_sent("index/") < BIG // 2, lying_s3.sent


def test_an_endpoint_that_ignores_range_is_refused_naming_the_key(lying_s3):
    lying_s3.lie = ("ignore-range", "events/")
    trial = create_trial(f"s3://{BUCKET}/{PREFIX}")
    with pytest.raises(EventFileCorrupted) as info:
        trial.tensor("w").value(1)
    message = str(info.value)
    assert EVENTS_1 in message and "answered HTTP 200" in message and f"{BIG} bytes" in message, message
    assert "byte ranges" in message
    assert lying_s3.most_sent("events/") < BIG // 2, lying_s3.sent


def test_a_ranged_get_answered_with_another_range_is_refused(lying_s3):
    lying_s3.lie = ("wrong-range", "events/")
    storage = get_storage(f"s3://{BUCKET}/{PREFIX}")
    expected = re.escape(EVENTS_1) + r".*bytes 60-79.*'bytes 0-39/\d+', another range"
    with pytest.raises(UnreadableFileError, match=expected):
        storage.read(EVENTS_1, 60, 20)


def test_a_dripped_body_ends_at_the_request_deadline(lying_s3, monkeypatch, smdebug_cli):
    lying_s3.lie = ("drip", "index/")  # a byte every 0.25 s: ~100 s for one index file
    monkeypatch.setenv("SMDEBUG_S3_REQUEST_TIMEOUT", "1")
    storage = get_storage(f"s3://{BUCKET}/{PREFIX}")
    started = time.monotonic()
    expected = re.escape(INDEX_1) + r".*did not finish in time.*SMDEBUG_S3_REQUEST_TIMEOUT"
    with pytest.raises(StorageUnavailable, match=expected):
        storage.read(INDEX_1)
    assert time.monotonic() - started < 8
    # the command says so in one line
    started = time.monotonic()
    out = smdebug_cli("ls", f"s3://{BUCKET}/{PREFIX}", env={"SMDEBUG_S3_REQUEST_TIMEOUT": "1"}, timeout=60)
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert out.returncode == 2 and len(lines) == 1 and "did not finish in time" in lines[0], out.stderr
    assert time.monotonic() - started < 30


def test_a_command_that_runs_out_of_memory_says_so_in_one_line(fake_dist, smdebug_cli):
    """Whatever a command asks too much memory for, the user gets one line, not a traceback."""
    name = f"hog{os.getpid()}"
    fake_dist.make("fake-hog", {"smdebug.frameworks": {name: f"{name}_plugin"}}, {
        f"{name}_plugin.py": f"""
            from smdebug.core.plugins import CommandInfo, hookimpl

            @hookimpl
            def smdebug_register_commands(register):
                register(CommandInfo("{name}", "{name}_cmd", "asks for more memory than there is"))
        """,
        f"{name}_cmd.py": '''
            """Asks for more memory than there is."""
            def add_arguments(parser):
                pass

            def run(args):
                return len(bytearray(1 << 62))
        ''',
    })
    out = smdebug_cli(name, env={"PYTHONPATH": fake_dist.pythonpath()})
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert out.returncode == 2 and len(lines) == 1, out.stderr
    assert lines[0].startswith(f"smdebug {name}: out of memory"), lines
