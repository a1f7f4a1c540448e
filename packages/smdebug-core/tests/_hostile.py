"""Hostile run folders for the tests: file-system objects where files belong (FIFOs, folders, links to
devices or to files outside the run, device nodes, sockets), crafted tensor records (decoding bombs) and
index entries, slow regular expressions in a collections file. Runs are written by the real writers
first; only the part under attack is then replaced, as an attacker with write access to the folder would."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
from typing import Iterable, Optional

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

#: objects planted where a file belongs; "chardev" needs CAP_MKNOD (skipped without it)
FS_KINDS = ("fifo", "dir", "link_dev_zero", "link_dev_urandom", "link_outside", "chardev", "socket")
#: catastrophic-backtracking patterns with a name that makes each one explode in Python's re
SLOW_PATTERNS = (
    ("^(a+)+$", "a" * 40 + "!"),
    ("(a|aa)+$", "a" * 60 + "!"),
    ("(a|a?)+b", "a" * 40),
    ("^(\\w+\\s?)*$", "word " * 12 + "!"),
    ("(.*a){25}", "a" * 24),
    ("^(([a-z])+.)+[A-Z]([a-z])+$", "aaaaaaaaaaaaaaaaaaaaaaaa!"),
)


def write_simple_run(root, names: Iterable[str] = ("w",), steps=range(3), worker: str = "worker_0") -> str:
    """A finished run with the given tensor names, written by the real step writer (values: step + i)."""
    from _support import write_run

    names = list(names)
    write_run(str(root), steps, workers=(worker,),
              tensors=lambda step, w: {n: np.full(3, step + i, np.float32) for i, n in enumerate(names)})
    return str(root)


def index_path(root, step: int, worker: str = "worker_0") -> str:
    from smdebug.core.locations import index_file_name

    return os.path.join(str(root), index_file_name(step, worker))


def event_path(root, step: int, worker: str = "worker_0") -> str:
    from smdebug.core.locations import event_file_name

    return os.path.join(str(root), event_file_name(step, worker))


def collections_path(root, worker: str = "worker_0") -> str:
    from smdebug.core.locations import collections_file_name

    return os.path.join(str(root), collections_file_name(worker))


def plant(path: str, kind: str, outside: Optional[str] = None) -> None:
    """Replace whatever is at ``path`` with a hostile object of ``kind`` (see FS_KINDS).
    Raises PermissionError for a device node without CAP_MKNOD (callers skip)."""
    if os.path.isdir(path) and not os.path.islink(path):
        import shutil

        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dir":
        os.mkdir(path)
    elif kind == "link_dev_zero":
        os.symlink("/dev/zero", path)
    elif kind == "link_dev_urandom":
        os.symlink("/dev/urandom", path)
    elif kind == "link_outside":
        assert outside is not None
        os.symlink(outside, path)
    elif kind == "chardev":
        os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 5))  # what /dev/zero is
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        cwd = os.getcwd()
        os.chdir(os.path.dirname(path))  # (a socket's path is limited to 108 bytes: bind a relative name)
        try:
            s.bind(os.path.basename(path))
        finally:
            os.chdir(cwd)
            s.close()  # the socket file stays
    else:
        raise ValueError(kind)


# --- crafted records -------------------------------------------------------------------------------
def string_record(strings, step: int = 1) -> bytes:
    """A framed event record of one DT_STRING tensor holding ``strings`` (bytes), of global ``step`` (readers
    check it against the index that points at it: the tests put these records at step 1)."""
    from smdebug.core.tfevent.proto.event_pb2 import Event
    from smdebug.core.tfevent.records import encode_record

    ev = Event()
    ev.step = step
    value = ev.summary.value.add()
    value.tag = "s"
    value.tensor.dtype = 7
    value.tensor.tensor_shape.dim.add().size = len(strings)
    value.tensor.string_val.extend(strings)
    return encode_record(ev.SerializeToString())


def shape_record(shape, dtype: int = 1, content: bytes = b"", float_val=None, step: int = 1) -> bytes:
    """A framed event record of a tensor claiming ``shape`` with the given content / splat values, of global
    ``step`` (as :func:`string_record`)."""
    from smdebug.core.tfevent.proto.event_pb2 import Event
    from smdebug.core.tfevent.records import encode_record

    ev = Event()
    ev.step = step
    value = ev.summary.value.add()
    value.tag = "t"
    value.tensor.dtype = dtype
    for d in shape:
        value.tensor.tensor_shape.dim.add().size = d
    if content:
        value.tensor.tensor_content = content
    if float_val is not None:
        value.tensor.float_val.extend(float_val)
    return encode_record(ev.SerializeToString())


def put_record(root, step: int, name: str, record: bytes, start: Optional[int] = None,
               length: Optional[int] = None) -> None:
    """Make ``name`` at ``step`` point at ``record``, appended to the step's event file (``start`` /
    ``length`` override what the index says)."""
    ev = event_path(root, step)
    with open(ev, "ab") as f:
        offset = f.tell()
        f.write(record)
    set_location(root, step, name, offset if start is None else start, len(record) if length is None else length)


def edit_index(root, step: int, change) -> None:
    """Rewrite the index of ``step`` after ``change(doc)`` has changed its JSON document in place."""
    path = index_path(root, step)
    with open(path) as f:
        doc = json.load(f)
    change(doc)
    with open(path, "w") as f:
        json.dump(doc, f)


def set_location(root, step: int, name: str, start: int, length: int) -> None:
    def locate(doc):
        for item in doc["tensor_payload"]:
            if item["tensorname"] == name:
                item["start_idx"], item["length"] = start, length

    edit_index(root, step, locate)


def edit_collections(root, change, worker: str = "worker_0") -> None:
    """Rewrite ``worker``'s collections file after ``change(doc)`` has changed its JSON document in place."""
    path = collections_path(root, worker)
    with open(path) as f:
        doc = json.load(f)
    change(doc)
    with open(path, "w") as f:
        json.dump(doc, f)


def add_collection(root, name: str, patterns, worker: str = "worker_0") -> None:
    def add(doc):
        doc["collections"][name] = {"name": name, "include_regex": list(patterns), "tensor_names": []}

    edit_collections(root, add, worker)


def run_smdebug(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """The ``smdebug`` command of this environment (``python -m smdebug.cli`` without a console script)."""
    exe = os.path.join(os.path.dirname(sys.executable), "smdebug")
    cmd = [exe] if os.path.exists(exe) else [sys.executable, "-m", "smdebug.cli"]
    return subprocess.run(cmd + [str(a) for a in args], capture_output=True, text=True, timeout=timeout)


# --- memory ----------------------------------------------------------------------------------------
_PEAK_SCRIPT = r"""
import sys
def hwm():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
from smdebug.trials import create_trial
from smdebug.exceptions import SMDebugError
trial = create_trial(sys.argv[1])
t = trial.tensor(sys.argv[2])
t.steps()
before = hwm()
try:
    v = t.value(int(sys.argv[3]))
    outcome = "value %s %s" % (v.dtype, v.shape)
except SMDebugError as e:
    outcome = "error %s: %s" % (type(e).__name__, str(e)[:200])
print(hwm() - before)
print(outcome)
"""


def peak_growth_reading(root, name: str, step: int, timeout: float = 120):
    """(growth of the peak resident memory in bytes, outcome line) of a fresh process reading one value."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", _PEAK_SCRIPT, str(root), name, str(step)], capture_output=True,
                         text=True, timeout=timeout, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    growth, outcome = out.stdout.strip().splitlines()[-2:]
    return int(growth), outcome


# --- folders and privileges -------------------------------------------------------------------------
def nest_folders(path, depth: int, name: str = "a") -> None:
    """``depth`` folders, each inside the last, under ``path`` (made relative to each folder's descriptor:
    deeper than any path may be long)."""
    fd = os.open(str(path), os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir(name, dir_fd=fd)
            deeper = os.open(name, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = deeper
    finally:
        os.close(fd)


def remove_nested(path, name: str = "a") -> None:
    """Remove the chain of folders ``name`` made by :func:`nest_folders` under ``path``, deepest first,
    without recursion (shutil.rmtree, and pytest's clean-up of its temporary folders, recurse once per
    level and fail beyond Python's recursion limit)."""
    fds = [os.open(str(path), os.O_RDONLY)]
    try:
        while True:
            try:
                fds.append(os.open(name, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0), dir_fd=fds[-1]))
            except (FileNotFoundError, NotADirectoryError):
                break
        while len(fds) > 1:
            os.close(fds.pop())
            os.rmdir(name, dir_fd=fds[-1])
    finally:
        for fd in fds:
            os.close(fd)


#: the uid/gid an unprivileged reader runs as when the tests run as root (root reads files of mode 000)
NOBODY = 65534


def unprivileged(argv: list) -> list:
    """``argv`` run without root's power to read anything (as ``nobody``) when the tests run as root;
    as it is otherwise. Skips the test when no child can run as ``nobody`` (an interpreter in a folder
    only root may enter, and no ``setpriv``)."""
    import pytest
    import shutil

    if os.name != "posix" or os.geteuid() != 0:
        return list(argv)
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: cannot read as an unprivileged user")
    prefix = [setpriv, "--reuid", str(NOBODY), "--regid", str(NOBODY), "--clear-groups"]
    probe = subprocess.run(prefix + [sys.executable, "-c", "import smdebug.trials"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("cannot run this interpreter as an unprivileged user: " + probe.stderr.decode()[-300:])
    return prefix + list(argv)


def public_tmp_dir() -> str:
    """A fresh folder anyone may enter (pytest's tmp_path is private to the user running the tests)."""
    import tempfile

    folder = tempfile.mkdtemp(prefix="smdebug-hostile-")
    os.chmod(folder, 0o755)
    return folder


# --- a run changing while it is read ---------------------------------------------------------------------
def vandalise_and_read(tmp_path, rounds: int, seed: int):
    """``rounds`` copies of an 8-step run, each read (with and without skip_damaged) while a thread
    removes, truncates and swaps its files and folders. Returns (raw exceptions as text, documented
    exceptions counted): a reader may only ever raise the documented ones."""
    import random

    donor = write_simple_run(os.path.join(str(tmp_path), "donor"), names=("w", "v"), steps=range(8))
    rng = random.Random(seed)
    # (a run left with index files but neither collections nor end marker is waited for this long)
    saved_wait = os.environ.get("SMDEBUG_MISSING_WORKERS_WAIT")
    os.environ["SMDEBUG_MISSING_WORKERS_WAIT"] = "0.5"
    try:
        return _vandal_rounds(tmp_path, donor, rng, rounds)
    finally:
        if saved_wait is None:
            os.environ.pop("SMDEBUG_MISSING_WORKERS_WAIT", None)
        else:
            os.environ["SMDEBUG_MISSING_WORKERS_WAIT"] = saved_wait


def _vandal_rounds(tmp_path, donor, rng, rounds):
    import shutil
    import threading
    import time

    from smdebug.exceptions import SMDebugError
    from smdebug.trials import create_trial

    raw, documented = [], 0
    for round_ in range(rounds):
        run = os.path.join(str(tmp_path), f"run{round_}")
        shutil.copytree(donor, run)
        paths = [os.path.join(r, n) for r, ds, fs in os.walk(run) for n in ds + fs]
        stop = threading.Event()

        def vandal():
            while not stop.is_set():
                p = rng.choice(paths)
                try:
                    if rng.random() < 0.5 and os.path.isfile(p):
                        if rng.random() < 0.5:
                            os.truncate(p, rng.randint(0, os.path.getsize(p)))
                        else:
                            os.unlink(p)
                    elif os.path.isdir(p) and not os.path.islink(p):
                        if rng.random() < 0.5:
                            shutil.rmtree(p)
                        else:
                            os.rename(p, p + ".x")
                            os.symlink("/tmp", p)
                except OSError:
                    pass
                time.sleep(rng.random() * 0.002)

        thread = threading.Thread(target=vandal)
        thread.start()
        try:
            for skip in (False, True):
                try:
                    trial = create_trial(run, skip_damaged=skip)
                    trial.missing_event_retry_limit = 0
                    for name in trial.tensor_names():
                        for step in trial.tensor(name).steps():
                            trial.tensor(name).value(step)
                except SMDebugError:
                    documented += 1
                except Exception as e:  # noqa: BLE001 - what the tests look for
                    raw.append(f"{type(e).__name__}: {e}")
        finally:
            stop.set()
            thread.join()
        shutil.rmtree(run, ignore_errors=True)
    return raw, documented
