"""A real S3 endpoint for tests: moto's server mode on loopback, reached over HTTP exactly as AWS would be
(boto3 with ``AWS_ENDPOINT_URL``), not an in-process mock. Needs ``moto[server]``."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from typing import Dict, Optional, Set


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Forwarder:
    """A TCP forwarder from a public port to moto's port that can be taken down and brought back:
    while down, connections are refused and open ones are cut, as when a network or endpoint fails."""

    def __init__(self, port: int, target_port: int, latency: float = 0.0):
        self.port = port
        self.target_port = target_port
        self.latency = latency
        self._listener: Optional[socket.socket] = None
        self._sockets: Set[socket.socket] = set()
        self._lock = threading.Lock()
        self._up = threading.Event()

    def start(self) -> None:
        if self._listener is not None:
            return
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        deadline = time.monotonic() + 10
        while True:
            try:
                listener.bind(("127.0.0.1", self.port))
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        listener.listen(128)
        listener.settimeout(0.1)
        self._listener = listener
        self._up.set()
        threading.Thread(target=self._accept, args=(listener,), name="moto-forwarder", daemon=True).start()

    def stop(self) -> None:
        self._up.clear()
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        with self._lock:
            sockets, self._sockets = self._sockets, set()
        for s in sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def _accept(self, listener: socket.socket) -> None:
        while self._up.is_set() and self._listener is listener:
            try:
                client, _ = listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
            except OSError:
                client.close()
                continue
            client.settimeout(None)
            upstream.settimeout(None)
            with self._lock:
                self._sockets.update((client, upstream))
            for src, dst, delay in ((client, upstream, self.latency), (upstream, client, 0.0)):
                threading.Thread(target=self._pump, args=(src, dst, delay), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, delay: float = 0.0) -> None:
        try:
            while True:
                data = src.recv(1 << 16)
                if not data:
                    break
                if delay:
                    time.sleep(delay)  # a round trip to a distant endpoint (requests are small)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            with self._lock:
                self._sockets.discard(src)
                self._sockets.discard(dst)


class _PortTaken(RuntimeError):
    """moto could not bind its port: something else listens there."""


class MotoServer:
    """``with MotoServer() as server: os.environ.update(server.env)`` -- a moto server for the block.

    :meth:`stop` and :meth:`start` may be called in between to simulate an endpoint that goes away and
    comes back (the same port is reused; moto's state is lost on restart).

    ``interruptible=True`` puts a TCP forwarder in front of moto: :meth:`interrupt` makes the endpoint
    refuse connections (open ones are cut) while moto keeps its buckets, and :meth:`resume` brings it
    back -- an outage of the endpoint during which nothing stored is lost. ``latency`` (seconds, implies
    the forwarder) delays every request on its way in, like the round trip to a remote endpoint.
    """

    def __init__(self, port: Optional[int] = None, startup_timeout: float = 30.0, interruptible: bool = False,
                 latency: float = 0.0):
        self._port_chosen = port is None  # (then a port taken between choosing and binding is chosen again)
        self.port = port or _free_port()
        self.startup_timeout = startup_timeout
        self.proc: Optional[subprocess.Popen] = None
        self.latency = latency
        interruptible = interruptible or latency > 0
        self.interruptible = interruptible
        self._backend_port = _free_port() if interruptible else self.port
        self._forwarder: Optional[_Forwarder] = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def env(self) -> Dict[str, str]:
        """Environment variables that point boto3 at this server with dummy credentials."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_SESSION_TOKEN": "testing",
            "AWS_REGION": "us-east-1",
            "AWS_DEFAULT_REGION": "us-east-1",
        }

    def start(self) -> "MotoServer":
        for attempt in range(3):
            try:
                return self._start()
            except _PortTaken:
                # the port chosen free was taken before moto bound it (another test's server): choose again
                if not self._port_chosen or self._forwarder is not None or attempt == 2:
                    raise
                self.port = _free_port()
                self._backend_port = _free_port() if self.interruptible else self.port
        raise AssertionError("unreachable")

    def _start(self) -> "MotoServer":
        cmd = [sys.executable, "-c", "from moto.server import main; main()", "-H", "127.0.0.1",
               "-p", str(self._backend_port)]
        # moto logs every request on stderr: a file, not a pipe nobody reads (a full pipe blocks moto)
        self._log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self._log)
        if self.interruptible and self._forwarder is None:
            self._forwarder = _Forwarder(self.port, self._backend_port, self.latency)
            self._forwarder.start()
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self._log.seek(0)
                err = self._log.read().decode(errors="replace")
                self.stop()
                if "already in use" in err:
                    raise _PortTaken(err[-2000:])
                raise RuntimeError(f"moto server exited at start (is moto[server] installed?): {err[-2000:]}")
            self._log.seek(0)
            if b"Running on" not in self._log.read():
                time.sleep(0.1)  # (not bound yet: an answer now could come from another server on the port)
                continue
            try:
                urllib.request.urlopen(f"{self.endpoint}/moto-api/", timeout=1).close()
                return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"moto server did not answer on {self.endpoint} within {self.startup_timeout:.0f} s")

    def interrupt(self) -> None:
        """The endpoint stops answering (connections refused); moto's state is kept."""
        if self._forwarder is None:
            raise RuntimeError("interrupt() needs MotoServer(interruptible=True)")
        self._forwarder.stop()

    def resume(self) -> None:
        """The endpoint answers again, with everything stored before :meth:`interrupt`."""
        if self._forwarder is None:
            raise RuntimeError("resume() needs MotoServer(interruptible=True)")
        self._forwarder.start()

    def set_auth(self, enforced: bool) -> None:
        """Make moto check credentials and IAM policies (off by default: any credentials work)."""
        body = b"0" if enforced else b"inf"
        req = urllib.request.Request(f"{self.endpoint}/moto-api/reset-auth", data=body, method="POST",
                                     headers={"Content-Type": "text/plain"})
        urllib.request.urlopen(req, timeout=5).close()

    def stop(self) -> None:
        if self._forwarder is not None:
            self._forwarder.stop()
            self._forwarder = None
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
        if getattr(self, "_log", None) is not None:
            self._log.close()
            self._log = None

    def requests_served(self) -> Dict[str, int]:
        """HTTP requests moto has answered so far, by method (from its access log): counts what any
        client sent, including clients in other processes (benchmarks compare libraries this way)."""
        counts: Dict[str, int] = {}
        if getattr(self, "_log", None) is None:
            return counts
        # pread: moto shares this file's offset (it writes through a copy of the descriptor); seeking
        # here would make it overwrite its own log
        fd, data, offset = self._log.fileno(), [], 0
        while True:
            chunk = os.pread(fd, 1 << 20, offset)
            if not chunk:
                break
            data.append(chunk)
            offset += len(chunk)
        for method in re.findall(rb'"(GET|PUT|POST|HEAD|DELETE) ', b"".join(data)):
            counts[method.decode()] = counts.get(method.decode(), 0) + 1
        return counts

    def reset(self) -> None:
        """Forget every resource (buckets, topics...) without restarting."""
        req = urllib.request.Request(f"{self.endpoint}/moto-api/reset", method="POST")
        urllib.request.urlopen(req, timeout=5).close()

    def __enter__(self) -> "MotoServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def apply_env(env: Dict[str, str]) -> Dict[str, Optional[str]]:
    """Set ``env`` in os.environ; returns the previous values for :func:`restore_env`."""
    previous = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    return previous


def restore_env(previous: Dict[str, Optional[str]]) -> None:
    for key, value in previous.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
