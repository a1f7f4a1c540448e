"""What a piece of code read from a trial: the values it got and the damaged data it met.

Analysis code often catches the trial's exceptions to skip what was not saved (``except
TensorUnavailableForStep``), and :class:`~smdebug.exceptions.MissingEventFile` is a subclass of that
exception: a reader that skips "not saved" also skips "saved, but its file is gone". To tell the two apart
whatever the reader catches, the trial records in every open log (:meth:`Trial.read_log`) each value it
returned and each damaged or missing file it raised for. The rule framework uses this to give a rule the
verdict it earned: judged real data, had nothing to judge, or met unreadable data.
"""

from __future__ import annotations

from typing import List, Optional, Set

from smdebug.exceptions import SMDebugError


class ReadLog:
    """Filled by a trial while open (``with trial.read_log() as log: ...``)."""

    __slots__ = ("values", "tensors", "steps", "damage", "_open_logs")

    def __init__(self, open_logs: Optional[List["ReadLog"]] = None):
        self._open_logs = open_logs  # the trial's list of open logs, which notifies each of them
        #: values returned: raw values and stored reductions, read from storage or from the trial's cache
        self.values = 0
        #: names of the tensors those values belong to
        self.tensors: Set[str] = set()
        #: global steps those values belong to
        self.steps: Set[int] = set()
        #: errors raised for unreadable data (MissingEventFile, EventFileCorrupted, IndexReaderException),
        #: in the order met; each names the file and the step
        self.damage: List[SMDebugError] = []

    def __enter__(self) -> "ReadLog":
        if self._open_logs is not None:
            self._open_logs.append(self)
        return self

    def __exit__(self, *exc) -> None:
        if self._open_logs is not None:
            self._open_logs.remove(self)

    def note_read(self, name: str, step: int) -> None:
        self.values += 1
        self.tensors.add(name)
        self.steps.add(step)

    def note_damage(self, error: SMDebugError) -> None:
        if not any(e is error for e in self.damage):
            self.damage.append(error)

    def __repr__(self):
        return f"<ReadLog values={self.values} tensors={len(self.tensors)} damage={len(self.damage)}>"
