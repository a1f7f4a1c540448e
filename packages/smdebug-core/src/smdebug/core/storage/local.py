"""Local file system storage: a file is written under a private ``<name>.<pid>.<thread>.tmp`` name and
renamed when complete."""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections import OrderedDict
from typing import List, Optional

from smdebug.core.env_settings import env_int
from smdebug.core.logger import get_logger
from smdebug.core.storage.base import Storage, StorageWriter
from smdebug.core.storage.errors import (
    FileTooLarge,
    StorageError,
    StorageRootRemoved,
    UnreadableFileError,
    UnsafeKeyError,
)
from smdebug.core.storage.safe_fs import (
    DIR_FLAGS,
    HAVE_DIR_FD,
    UnsafeFileError,
    create_new,
    open_dir,
    open_dir_beneath,
    open_regular,
    private_tmp_name,
    read_all,
)

logger = get_logger()

TMP_SUFFIX = ".tmp"
_DIR_FLAGS_FOLLOW = DIR_FLAGS & ~getattr(os, "O_NOFOLLOW", 0)
#: ranges at least this large are read through a file map (``read_view``); smaller ones are copied
MAP_MIN_BYTES = 1 << 20
if os.name == "posix":
    import mmap

    # Fault the pages in with the map: the reader checksums every byte right away.
    _MAP_POPULATE = getattr(mmap, "MAP_POPULATE", 0)
else:  # Windows: a mapped file cannot be deleted while mapped; keep plain reads there
    mmap = None
    _MAP_POPULATE = 0


class LocalWriter(StorageWriter):
    """A file being written under its private ``.tmp`` name in its folder (an open descriptor: a folder swapped
    for a link meanwhile changes nothing), renamed to its final name by :meth:`commit`."""

    __slots__ = ("_dir_fd", "_name", "_tmp", "_f", "_pos", "_display")

    def __init__(self, dir_fd: Optional[int], name: str, display: str = ""):
        self._dir_fd = dir_fd
        self._name = name
        self._display = display
        self._tmp = private_tmp_name(name)
        # (a link planted at that name, or a file left by a crash of a process of the same pid, is unlinked
        # and the file made anew)
        fd = create_new(self._tmp, dir_fd, replace_own=True)
        self._f = os.fdopen(fd, "wb", buffering=1 << 20)
        self._pos = 0

    def write(self, data: bytes) -> None:
        self._f.write(data)
        self._pos += len(data)

    def tell(self) -> int:
        return self._pos

    def commit(self) -> None:
        try:
            self._f.close()
            if self._dir_fd is not None:
                os.replace(self._tmp, self._name, src_dir_fd=self._dir_fd, dst_dir_fd=self._dir_fd)
            else:
                os.replace(self._tmp, self._name)
        except FileNotFoundError:
            removed = _folder_removed(self._dir_fd)
            self._remove_tmp()
            if removed:
                raise StorageRootRemoved(f"the folder of {self._display} was removed while it was being "
                                         "written") from None
            raise
        except BaseException:
            self._remove_tmp()  # a full disk fails the close: leave no .tmp behind
            raise
        self._release()

    def abort(self) -> None:
        try:
            self._f.close()
        except OSError:
            pass  # (a full disk fails the flush of what is dropped anyway)
        finally:
            self._remove_tmp()

    def _remove_tmp(self) -> None:
        try:
            if self._dir_fd is not None:
                os.unlink(self._tmp, dir_fd=self._dir_fd)
            else:
                os.unlink(self._tmp)
        except OSError:
            pass
        self._release()

    def _release(self) -> None:
        if self._dir_fd is not None:
            os.close(self._dir_fd)
            self._dir_fd = None


class _Descriptors:
    """The folder descriptors a LocalStorage holds, closed when it is garbage-collected."""

    def __init__(self):
        self.root: Optional[int] = None  # (set from "root_fd", which setdefault fills atomically)
        self.dirs: "OrderedDict[str, int]" = OrderedDict()  # folder key -> descriptor (reading)

    def close(self) -> None:
        root = self.__dict__.pop("root_fd", None)
        for fd in list(self.dirs.values()) + ([root] if root is not None else []):
            try:
                os.close(fd)
            except OSError:
                pass
        self.dirs.clear()
        self.root = None


class LocalStorage(Storage):
    """A run folder on a local file system.

    The root is the folder the user named (it may itself be a link: the user chose it). Below it nothing
    is followed: every folder is opened relative to its parent without following links, only regular
    files are read (a FIFO, device, socket, folder or link where a file belongs raises
    :class:`~smdebug.core.storage.safe_fs.UnsafeFileError`), and files are created only under free
    ``.tmp`` names (see safe_fs). The root is opened once: if it is removed while a hook writes, writes
    fail (the hook reports it once) instead of silently making a new, partial run.
    """

    # A trial reads the records of a small step file in one read and keeps it for a while: a rule reads
    # several tensors of each step, and a read costs about as much for the whole file as for one record.
    read_ahead = env_int("SMDEBUG_LOCAL_READ_AHEAD", 64 << 10, minimum=0)
    #: folder descriptors kept for reading: a trial reads step after step, each step in its own folder
    #: under events/, and its index files from index/<n>/. Few, as a trial is freed only by the cyclic
    #: garbage collector (and its descriptors with it): many trials opened in a loop must not run out.
    _MAX_OPEN_DIRS = 8

    def __init__(self, root: str):
        self.root = os.path.abspath(root)
        self.display_path = self.root
        self._root_sep = os.path.join(self.root, "")  # root + separator: keys are joined by concatenation
        self._fds = _Descriptors()
        self._lock = threading.Lock()
        self._warned_links: set = set()
        # Not at interpreter exit (``atexit = False``): a finalizer's exit pass may run before the at-exit
        # close of a hook that is still writing through these descriptors; its writes then failed with
        # "Bad file descriptor" (or, the number reused, went to another file) and the steps still queued
        # were lost. The process ending closes them anyway.
        weakref.finalize(self, self._fds.close).atexit = False

    def _check_key(self, key: str) -> str:
        # Keys are relative paths inside the run; one that could leave it (an absolute path, "..",
        # NUL) comes from damaged or hostile data and is refused before any file is touched.
        if key.startswith(("/", "\\")) or "\x00" in key or ".." in key or ":" in key:
            parts = key.replace("\\", "/").split("/")
            if (key.startswith(("/", "\\")) or "\x00" in key or ".." in parts
                    or (os.name == "nt" and ":" in key)):
                raise UnsafeKeyError(f"Refusing a path outside the run directory: {key[:200]!r}", key=key[:200])
        return key

    def _path(self, key: str) -> str:
        self._check_key(key)
        return self._root_sep + key if key else self.root

    # --- descriptors ------------------------------------------------------------------------------
    def _root_fd(self, create: bool = False) -> int:
        """The root folder, opened once. ``create``: make it first if it does not exist yet (the first
        write of a new run; once opened, a removed root is never made again)."""
        fd = self._fds.root
        if fd is None:
            # No lock here: a hook's SIGTERM handler may run this on the main thread while the writer
            # thread does too. Two threads opening it at once keep the first descriptor stored.
            if create:
                os.makedirs(self.root, exist_ok=True)
            mine = os.open(self.root, _DIR_FLAGS_FOLLOW)  # (no O_NOFOLLOW: the user chose the root)
            fd = self._fds.__dict__.setdefault("root_fd", mine)  # atomic
            if fd != mine:
                os.close(mine)
            self._fds.root = fd
        return fd

    def _split(self, key: str):
        parts = self._check_key(key).strip("/").split("/")
        return [p for p in parts[:-1] if p], parts[-1]

    def _open_file(self, key: str):
        """(fd, size) of the regular file ``key``, opened without following any link below the root.
        (Paid per value a trial reads: one key check, and the folder's descriptor from a small cache.)

        Errors name the file by its full path: FileNotFoundError when it (or a folder on its way) is not
        there, :class:`UnreadableFileError` when it is there but cannot be read (permission denied, an I/O
        error, not a regular file: :class:`UnsafeFileError`)."""
        try:
            if not HAVE_DIR_FD:
                path = self._path(key)
                return open_regular(path, display=path)
            folder, _, name = self._check_key(key).rpartition("/")
            if not folder:
                return open_regular(name, self._root_fd())
            with self._lock:
                return open_regular(name, self._dir_fd_locked(folder))
        except UnsafeFileError as e:
            if not e.filename.startswith(self._root_sep):  # (named relative to its folder: say which file)
                raise UnsafeFileError(self._root_sep + key, e.kind, e.expected) from None
            raise
        except OSError as e:
            raise _named(e, self._root_sep + key) from None

    def _dir_fd_locked(self, folder: str) -> int:
        """The descriptor of ``folder`` (a key), from the cache or opened relative to its parent's
        (itself cached: a trial reading step after step opens one new folder per step). Lock held."""
        dirs = self._fds.dirs
        fd = dirs.get(folder)
        if fd is not None:
            dirs.move_to_end(folder)
            return fd
        parent, _, last = folder.rpartition("/")
        parent_fd = self._dir_fd_locked(parent) if parent else self._root_fd()
        fd = open_dir(last, parent_fd, self._root_sep + folder) if last else os.dup(parent_fd)
        dirs[folder] = fd
        if len(dirs) > self._MAX_OPEN_DIRS:
            for old in list(dirs)[: len(dirs) - self._MAX_OPEN_DIRS]:
                if old != folder and not folder.startswith(old + "/"):  # (never the folders just used)
                    os.close(dirs.pop(old))
        return fd

    def _parent_fd(self, key: str, create: bool = False):
        """(descriptor of the folder holding ``key``, owned by the caller or None; name in it)."""
        folders, name = self._split(key)
        if not HAVE_DIR_FD:
            path = self._path(key)
            if create:
                os.makedirs(os.path.dirname(path), exist_ok=True)
            return None, path
        return open_dir_beneath(self._root_fd(create), folders, create=create, display=self.root), name

    # --- listing ----------------------------------------------------------------------------------
    def list(self, prefix: str, start_after: Optional[str] = None, skip_unreadable: bool = False) -> List[str]:
        """Keys under ``prefix``. A folder that is there but cannot be listed (permission denied) raises
        :class:`UnreadableFileError` naming it, or with ``skip_unreadable`` is left out with one warning.
        Folders more than :attr:`MAX_LIST_DEPTH` levels below ``prefix`` are never entered (a run's
        deepest file is two levels down; a hostile tree may be thousands deep)."""
        out: List[str] = []
        key = prefix.strip("/")
        if not HAVE_DIR_FD:
            self._walk(self._path(prefix), key, start_after, out, 0, skip_unreadable)
            return out
        try:
            root = self._root_fd()
        except (FileNotFoundError, NotADirectoryError):
            return out
        except OSError as e:  # the run folder itself cannot be opened: permission denied, a link loop...
            raise _named(e, self.root) from None
        try:
            fd = open_dir_beneath(root, self._split(f"{key}/x" if key else "x")[0], display=self.root)
        except (FileNotFoundError, NotADirectoryError):
            return out
        except UnsafeFileError as e:
            self._warn_link(key, e)
            return out
        except OSError as e:  # a folder of the prefix cannot be opened (permission denied)
            if skip_unreadable:
                self._warn_unreadable(key, e)
                return out
            raise _named(e, self._path(key)) from None
        try:
            self._walk(fd, key, start_after, out, 0, skip_unreadable)
        finally:
            os.close(fd)
        return out

    #: how many levels of folders below a listed prefix are entered
    MAX_LIST_DEPTH = 8

    def _walk(self, folder, key: str, start_after: Optional[str], out: List[str], depth: int,
              skip_unreadable: bool) -> None:
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except (FileNotFoundError, NotADirectoryError):
            return
        except OSError as e:
            if skip_unreadable:
                self._warn_unreadable(key, e)
                return
            raise _named(e, self._path(key)) from None
        for e in entries:
            child = f"{key}/{e.name}" if key else e.name
            if e.is_dir(follow_symlinks=False):
                # Skip folders whose every key sorts before start_after (zero-padded names sort by step).
                if start_after is not None and child + "/\uffff" <= start_after:
                    continue
                if depth >= self.MAX_LIST_DEPTH:
                    self._warn_once(child, "smdebug: %s is more than %d folders deep; a run has no files there, "
                                    "so it is not entered", self._path(child), self.MAX_LIST_DEPTH)
                    continue
                if not HAVE_DIR_FD:
                    self._walk(e.path, child, start_after, out, depth + 1, skip_unreadable)
                    continue
                try:
                    sub = open_dir(e.name, folder)
                except (FileNotFoundError, NotADirectoryError, UnsafeFileError):
                    continue  # removed or replaced since the listing
                except OSError as err:  # (permission denied: the folder's files are unknown, not absent)
                    if skip_unreadable:
                        self._warn_unreadable(child, err)
                        continue
                    raise _named(err, self._path(child)) from None
                try:
                    self._walk(sub, child, start_after, out, depth + 1, skip_unreadable)
                finally:
                    os.close(sub)
            elif not e.name.endswith(TMP_SUFFIX):
                if e.is_symlink() and _points_to_folder(e):
                    self._warn_link(child, None)
                    continue
                # Links to files, FIFOs, devices... are listed: reading one raises the documented error
                # of its kind of file, naming it, rather than hiding it.
                if start_after is None or child > start_after:
                    out.append(child)

    def refused(self, prefix: str) -> List[str]:
        folder = prefix.strip("/")
        return sorted(k for k in self._warned_links if not folder or k == folder or k.startswith(folder + "/"))

    def _warn_once(self, key: str, message: str, *args) -> None:
        if key not in self._warned_links:
            self._warned_links.add(key)
            logger.warning(message, *args)

    def _warn_link(self, key: str, err) -> None:
        self._warn_once(key, "smdebug: %s is %s; smdebug follows no link inside a run, so it is not read",
                        self._path(key), err.kind if err is not None else "a symbolic link to a folder")

    def _warn_unreadable(self, key: str, err: OSError) -> None:
        self._warn_once(key, "smdebug: skipping %s, which cannot be listed (%s): its files are left out",
                        self._path(key), err.strerror or err)

    # --- reading ----------------------------------------------------------------------------------
    def read(self, key: str, offset: int = 0, length: Optional[int] = None) -> bytes:
        # One open + fstat + pread per read, no buffered file object (a trial reads one small record per
        # tensor value, so this is paid per value). A range past the end gives the short bytes there are
        # (an index may claim any offset or length: nothing is allocated for bytes the file lacks).
        fd, size = self._open_file(key)
        try:
            return read_all(fd, _clamp(offset, length, size), offset)
        finally:
            os.close(fd)

    def read_limited(self, key: str, limit: int, setting: str = "") -> bytes:
        # The size is known before a byte is read: a sparse file of terabytes costs nothing.
        fd, size = self._open_file(key)
        try:
            if size > limit:
                raise FileTooLarge(self._root_sep + key, size, limit, setting)
            return read_all(fd, size)
        finally:
            os.close(fd)

    def read_view(self, key: str, offset: int, length: int):
        """A large range is mapped, not copied: the values decoded from it are views on the page cache.

        Safe because a run's files are never changed once they have their final name (written under a
        temporary name, then renamed): a map stays valid even if the file is deleted. The range must lie
        inside the file (checked first: touching a map past the end of a file is a fatal signal); a short
        file gives the short bytes, as :meth:`read` does.
        """
        if length < MAP_MIN_BYTES or mmap is None:
            return self.read(key, offset, length)
        fd, size = self._open_file(key)
        try:
            if offset + length > size:
                return read_all(fd, _clamp(offset, length, size), offset)
            start = offset - offset % mmap.ALLOCATIONGRANULARITY
            mapped = mmap.mmap(fd, offset + length - start, flags=mmap.MAP_SHARED | _MAP_POPULATE,
                               prot=mmap.PROT_READ, offset=start)
        finally:
            os.close(fd)  # the map keeps its own reference to the file
        return memoryview(mapped)[offset - start:]

    def read_many(self, requests):
        # Large ranges are tensor records a trial decodes into arrays: map them (see read_view).
        return [self.read(k, o, n) if n is None or n < MAP_MIN_BYTES else self.read_view(k, o, n)
                for k, o, n in requests]

    def _lstat(self, key: str):
        if not HAVE_DIR_FD:
            return os.lstat(self._path(key))
        folders, name = self._split(key)
        if not folders:  # (the end and stop markers, looked for at every step)
            return os.stat(name, dir_fd=self._root_fd(), follow_symlinks=False)
        dir_fd, name = self._parent_fd(key)
        try:
            return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        finally:
            os.close(dir_fd)

    def exists(self, key: str) -> bool:
        try:
            self._lstat(key)
            return True
        except (OSError, ValueError):
            return False

    def has_folder(self, prefix: str) -> bool:
        try:
            with os.scandir(self._path(prefix)) as entries:
                return any(True for _ in entries)
        except (FileNotFoundError, NotADirectoryError):
            return False

    def age(self, key: str) -> Optional[float]:
        try:
            return max(0.0, time.time() - self._lstat(key).st_mtime)
        except OSError:
            return None

    # --- writing ----------------------------------------------------------------------------------
    def _folder_for_writing(self, key: str):
        """``_parent_fd(key, create=True)``; StorageRootRemoved once the run folder was removed."""
        try:
            return self._parent_fd(key, create=True)
        except FileNotFoundError:
            if self._fds.root is not None and _folder_removed(self._fds.root):
                raise StorageRootRemoved(f"the run folder {self.root} was removed while it was being written; "
                                         "nothing more is saved (a new folder would hold a partial run)") from None
            raise

    def open_writer(self, key: str) -> LocalWriter:
        dir_fd, name = self._folder_for_writing(key)
        try:
            return LocalWriter(dir_fd, name, self._root_sep + key)
        except BaseException:
            if dir_fd is not None:
                os.close(dir_fd)
            raise

    def create_exclusive(self, key: str, data: bytes) -> bool:
        # Write the content under a private name, then hard-link it into place: the link fails if the
        # file exists, and a reader never sees the file without its content.
        dir_fd, name = self._folder_for_writing(key)
        kw = {"dir_fd": dir_fd} if dir_fd is not None else {}
        tmp = private_tmp_name(name)
        try:
            with os.fdopen(create_new(tmp, dir_fd, replace_own=True), "wb") as f:
                f.write(data)
            try:
                if dir_fd is not None:
                    os.link(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
                else:
                    os.link(tmp, name)
                return True
            except FileExistsError:
                return False
            finally:
                os.unlink(tmp, **kw)
        finally:
            if dir_fd is not None:
                os.close(dir_fd)

    def remove(self, key: str) -> None:
        try:
            dir_fd, name = self._parent_fd(key)
        except FileNotFoundError:
            return
        try:
            os.unlink(name, **({"dir_fd": dir_fd} if dir_fd is not None else {}))  # (a link: the link goes)
        except FileNotFoundError:
            pass
        finally:
            if dir_fd is not None:
                os.close(dir_fd)

    def full_path(self, key: str) -> str:
        return self._path(key)


def _named(err: OSError, path: str) -> OSError:
    """``err`` naming ``path`` in full (the calls relative to a folder's descriptor name only the last
    component): FileNotFoundError stays one (a missing file is an answer), NotADirectoryError becomes one
    (a file where a folder of the path should be: the file is not there); anything else is an
    :class:`UnreadableFileError` (permission denied, a link loop, an I/O error)."""
    if isinstance(err, (FileNotFoundError, NotADirectoryError)):
        return FileNotFoundError(err.errno, err.strerror, path)
    if isinstance(err, StorageError):  # (UnsafeKeyError, UnreadableFileError: already say what they are)
        return err
    return UnreadableFileError(path, err.strerror or str(err))


def _points_to_folder(entry) -> bool:
    """Whether a link found in a listing points to a folder (a loop or an unreadable target: treated as
    one, so it is left out with a warning instead of raising from the listing)."""
    try:
        return entry.is_dir()
    except OSError:
        return True


def _folder_removed(dir_fd: Optional[int]) -> bool:
    """Was the folder open as ``dir_fd`` removed (a removed folder has no links left)?"""
    try:
        return dir_fd is not None and os.fstat(dir_fd).st_nlink == 0
    except OSError:
        return False


def _clamp(offset: int, length: Optional[int], size: int) -> int:
    """How many bytes of ``[offset, offset+length)`` (to the end if None) a file of ``size`` bytes has."""
    if offset < 0:
        raise ValueError(f"negative file offset {offset}")
    available = max(0, size - offset)
    return available if length is None else max(0, min(length, available))
