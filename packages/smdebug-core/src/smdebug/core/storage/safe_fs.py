"""File-system calls that a hostile run folder cannot turn against the process using it.

A run folder is often shared (a group-writable job folder, ``/tmp/run``): anyone who can write into it
can plant a symbolic link where smdebug is about to create a file, or a FIFO or device where it is about
to read one. So, everywhere smdebug touches files:

* a file is created only if its name is free (``O_CREAT | O_EXCL | O_NOFOLLOW``): never through a link,
  never into an existing file; a temporary name smdebug owns (``<name>.<pid>.<thread>.tmp``) that is taken is
  unlinked first (unlinking removes a link itself, not what it points to);
* below a root, every folder is opened relative to its parent with ``O_NOFOLLOW | O_DIRECTORY``
  (``dir_fd``), so a folder swapped for a link cannot redirect a write or a read elsewhere;
* only regular files are read: a file is opened with ``O_NONBLOCK`` (opening a FIFO then never blocks)
  and checked with ``fstat`` before any byte is read.

Where the platform lacks ``dir_fd`` support (Windows) the same calls fall back to plain paths.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from typing import Optional, Tuple

from smdebug.core.locations import run_output_refusal, run_part_at
from smdebug.core.storage.errors import UnreadableFileError
from smdebug.exceptions import SMDebugValueError

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_BINARY = getattr(os, "O_BINARY", 0)
READ_FLAGS = os.O_RDONLY | _CLOEXEC | _NOFOLLOW | _NONBLOCK | _BINARY
CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _CLOEXEC | _NOFOLLOW | _BINARY
DIR_FLAGS = os.O_RDONLY | _CLOEXEC | _NOFOLLOW | _DIRECTORY
#: every call below can work relative to a folder's descriptor
HAVE_DIR_FD = os.open in os.supports_dir_fd and os.mkdir in os.supports_dir_fd and bool(_DIRECTORY)

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symbolic link"),
)


class UnsafeFileError(UnreadableFileError):
    """Something other than a regular file (a link, a FIFO, a device, a folder) where smdebug reads or
    writes a file. Readers turn it into the documented exception of the file's kind; a hook loses the
    step it was writing (reported, as any storage failure) and goes on. (A StorageError: an OSError, so
    code written for files keeps working, and an SMDebugError, so the CLI shows it as a message.)"""

    def __init__(self, path: str, kind: str, expected: str = "a regular file"):
        super().__init__(path, f"{kind}, not {expected}", operation="open")
        # (the message names what was found, as before: "<path> is a FIFO, not a regular file (...)")
        self.message = (f"{path} is {kind}, not {expected} (smdebug reads and writes only regular files "
                        "and follows no link inside a run)")
        self.kind = kind
        self.expected = expected


def describe_mode(mode: int) -> str:
    for test, kind in _KINDS:
        if test(mode):
            return kind
    return "a regular file" if stat.S_ISREG(mode) else "an unknown kind of file"


def open_regular(name: str, dir_fd: Optional[int] = None, display: Optional[str] = None) -> Tuple[int, int]:
    """``(fd, size)`` of the regular file ``name`` opened for reading (relative to ``dir_fd`` if given).

    A link, FIFO, device, socket or folder raises :class:`UnsafeFileError` without blocking and without
    reading from it. FileNotFoundError as usual for a missing file.
    """
    try:
        fd = os.open(name, READ_FLAGS, dir_fd=dir_fd) if dir_fd is not None else os.open(name, READ_FLAGS)
    except OSError as e:
        if e.errno == errno.ELOOP:  # O_NOFOLLOW met a link as the last component
            raise UnsafeFileError(display or name, "a symbolic link") from None
        if e.errno in (errno.ENXIO, errno.ENODEV, errno.EISDIR):  # a socket, a device without driver...
            raise UnsafeFileError(display or name, "a special file") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeFileError(display or name, describe_mode(st.st_mode))
    except BaseException:
        os.close(fd)
        raise
    return fd, st.st_size


def read_regular(path: str, limit: Optional[int] = None) -> bytes:
    """The bytes of the regular file at ``path`` (a path the user gave: links in it are followed except
    for its last component). ``limit``: refuse a larger file (ValueError) instead of reading it."""
    fd, size = open_regular(path, display=path)
    try:
        if limit is not None and size > limit:
            raise ValueError(f"{path} is {size} bytes, more than the {limit} bytes accepted")
        return read_all(fd, size)
    finally:
        os.close(fd)


def read_all(fd: int, size: int, offset: int = 0) -> bytes:
    """``size`` bytes from ``offset`` (fewer if the file is shorter)."""
    data = os.pread(fd, size, offset) if size else b""
    while len(data) < size:  # pread may return less than asked for; a short file ends it
        more = os.pread(fd, size - len(data), offset + len(data))
        if not more:
            break
        data += more
    return data


def private_tmp_name(name: str) -> str:
    """The temporary name this process and thread write ``name`` under before renaming it into place
    (ending ``.tmp``, which readers skip). Private to the writer: two processes writing the same file at
    once (the last two workers of a run each writing its end marker) each rename their own complete
    file; with one shared ``name.tmp``, one could unlink the other's file half-way and both renames
    could fail, leaving no file at all."""
    return f"{name}.{os.getpid()}.{threading.get_ident()}.tmp"


def create_new(name: str, dir_fd: Optional[int] = None, mode: int = 0o666, replace_own: bool = False) -> int:
    """A new file ``name`` opened for writing; never opens an existing file or follows a link.

    ``replace_own``: the name is one smdebug owns (a ``.tmp`` name, left by a crash or planted by someone
    else): unlink whatever holds it and create it anew, once. Otherwise FileExistsError.
    """
    kwargs = {"dir_fd": dir_fd} if dir_fd is not None else {}
    try:
        return os.open(name, CREATE_FLAGS, mode, **kwargs)
    except FileExistsError:
        if not replace_own:
            raise
    os.unlink(name, **kwargs)  # unlink never follows a link: it removes the link
    return os.open(name, CREATE_FLAGS, mode, **kwargs)


def open_dir(name: str, dir_fd: Optional[int] = None, display: Optional[str] = None) -> int:
    """A folder ``name`` opened relative to ``dir_fd`` without following a link."""
    try:
        return os.open(name, DIR_FLAGS, dir_fd=dir_fd) if dir_fd is not None else os.open(name, DIR_FLAGS)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR):
            try:
                st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except OSError:
                raise e from None
            if stat.S_ISDIR(st.st_mode):
                raise
            raise UnsafeFileError(display or name, describe_mode(st.st_mode), "a folder") from None
        raise


def open_dir_beneath(root_fd: int, parts, create: bool = False, display: str = "") -> int:
    """The folder ``root/parts[0]/parts[1]/...`` opened component by component (no link followed).
    ``create``: make missing folders. The caller closes the returned descriptor."""
    fd = os.dup(root_fd)
    try:
        shown = display
        for part in parts:
            shown = f"{shown}/{part}" if shown else part
            try:
                nxt = open_dir(part, fd, shown)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(part, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass  # another process made it meanwhile
                nxt = open_dir(part, fd, shown)
            os.close(fd)
            fd = nxt
        return fd
    except BaseException:
        os.close(fd)
        raise


def check_output_path(path: str) -> None:
    """For a file a command writes where the user said (``-o FILE``): UnsafeFileError if ``path`` is a
    device, FIFO, socket or folder, or a link to one. Such an output is written as a new file renamed
    into place, and renaming over ``/dev/null`` as root replaced the device with an ordinary file (a link
    planted at the name pointing to a regular file is still replaced, never written through).
    SMDebugValueError if ``path`` is inside a run's own files (see :func:`run_part_at`) or is a TensorBoard
    event file."""
    inside = run_part_at(path)
    if inside is not None:
        run, part = inside
        raise SMDebugValueError(run_output_refusal(path, run, part))
    try:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            st = os.stat(path)  # (a dangling link raises: replaced like any free name)
    except OSError:
        return
    if not stat.S_ISREG(st.st_mode):
        raise UnsafeFileError(path, describe_mode(st.st_mode), "a file smdebug may replace with its output")
    if ".tfevents" in os.path.basename(os.path.realpath(path)):
        # a TensorBoard event file (the hook's copy under tensorboard/, or an export's): training data that
        # a page or a picture would replace for good
        raise SMDebugValueError(f"refusing to write {path}: it is a TensorBoard event file; write the output "
                                "elsewhere")


def output_problem(path: str) -> Optional[str]:
    """Why a file could not be written at ``path`` (a folder that is a file, no permission, a name too
    long), found before long work (evaluating rules, building a report) rather than after it; None when
    nothing is known against it. Best effort: the write itself still reports what this cannot foresee."""
    path = os.path.abspath(os.path.expanduser(path))
    folder = os.path.dirname(path)
    existing = folder
    while not os.path.lexists(existing) and os.path.dirname(existing) != existing:
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        return f"{existing} is not a folder"
    try:
        longest = os.pathconf(existing, "PC_NAME_MAX")
    except (OSError, ValueError):
        longest = 255
    if any(len(os.fsencode(part)) > longest for part in os.path.relpath(path, existing).split(os.sep)):
        return "File name too long"
    if not os.access(existing, os.W_OK | os.X_OK):
        return "Permission denied"
    return None


def write_file_atomic(path: str, data: bytes, mode: int = 0o666) -> None:
    """Write ``data`` to ``path`` (a path the user chose) so that nothing is written through a link
    planted at ``path`` or at its temporary name, and readers see the old file or the new one whole."""
    path = os.path.abspath(path)
    folder, base = os.path.split(path)
    os.makedirs(folder, exist_ok=True)
    tmp = private_tmp_name(base)
    dir_fd = os.open(folder, DIR_FLAGS & ~_NOFOLLOW) if HAVE_DIR_FD else None  # (the user's folder: may be a link)
    try:
        tmp_name = tmp if dir_fd is not None else os.path.join(folder, tmp)
        fd = create_new(tmp_name, dir_fd, mode, replace_own=True)
        kwargs = {"src_dir_fd": dir_fd, "dst_dir_fd": dir_fd} if dir_fd is not None else {}
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            # rename replaces a link at the final name itself; it never writes to what it points to
            os.replace(tmp_name, base if dir_fd is not None else path, **kwargs)
        except BaseException:
            try:
                os.unlink(tmp_name, **({"dir_fd": dir_fd} if dir_fd is not None else {}))
            except OSError:
                pass
            raise
    finally:
        if dir_fd is not None:
            os.close(dir_fd)
