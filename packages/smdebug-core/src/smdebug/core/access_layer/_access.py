"""What TSAccessFile and TSAccessS3 share: a file of a run written through the project's storage
(visible under its name only once closed) or read whole."""

from __future__ import annotations

from smdebug.exceptions import SMDebugError

WRITE_MODES = ("w", "w+", "wb", "wb+", "a", "a+", "ab", "ab+")


class _TSAccess:
    def __init__(self, storage, key: str, mode: str):
        self._storage = storage
        self._key = key
        self.mode = mode
        self._binary = "b" in mode
        if mode in WRITE_MODES:
            self._writer = storage.open_writer(key)
            self._data = None
        else:
            self._writer = None
            self.ingest_all()

    # --- writing --------------------------------------------------------------------------------
    def write(self, data):
        """Append ``data`` (str or bytes); returns ``[start, length]`` of what was written."""
        if self._writer is None:
            raise SMDebugError(f"{self._storage.full_path(self._key)} was opened for reading")
        raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        start = self._writer.tell()
        self._writer.write(raw)
        return [start, len(raw)]

    def flush(self) -> None:
        """Nothing to do: what was written becomes visible, all at once, at :meth:`close`."""

    def close(self) -> None:
        """Finish the file: it appears under its name (atomically)."""
        if self._writer is not None:
            writer, self._writer = self._writer, None
            writer.commit()

    # --- reading --------------------------------------------------------------------------------
    def ingest_all(self) -> None:
        data = self._storage.read(self._key)
        self._data = data if self._binary else data.decode("utf-8")
        self._position = 0

    def read(self, n: int):
        if self._position + n > len(self._data):
            raise SMDebugError("File position out of bounds")
        out = self._data[self._position:self._position + n]
        self._position += n
        return out

    def has_data(self) -> bool:
        return self._position < len(self._data)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None and self._writer is not None:
            self._writer.abort()
            self._writer = None
        self.close()
