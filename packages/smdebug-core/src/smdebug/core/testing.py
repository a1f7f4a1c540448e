"""Helpers for testing code that talks to AWS: a real moto server on loopback.

Tests of S3 storage and of the rules' SNS/SageMaker actions run against moto's server mode over HTTP,
exactly as they would against AWS (boto3 with ``AWS_ENDPOINT_URL``), not against an in-process mock.
Needs ``moto[server]``. Shipped with smdebug-core so every package's tests (and users' own) share one
implementation.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from typing import Dict, Optional


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MotoServer:
    """``with MotoServer() as server: os.environ.update(server.env)`` -- a moto server for the block.

    :meth:`stop` and :meth:`start` may be called in between to simulate an endpoint that goes away and
    comes back (the same port is reused; moto's state is lost on restart).
    """

    def __init__(self, port: Optional[int] = None, startup_timeout: float = 30.0):
        self.port = port or _free_port()
        self.startup_timeout = startup_timeout
        self.proc: Optional[subprocess.Popen] = None

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
        cmd = [sys.executable, "-c", "from moto.server import main; main()", "-H", "127.0.0.1", "-p", str(self.port)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
                raise RuntimeError(f"moto server exited at start (is moto[server] installed?): {err[-2000:]}")
            try:
                urllib.request.urlopen(f"{self.endpoint}/moto-api/", timeout=1).close()
                return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"moto server did not answer on {self.endpoint} within {self.startup_timeout:.0f} s")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            if self.proc.stderr:
                self.proc.stderr.close()
            self.proc = None

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
