"""The warnings of ``skip_damaged``: one per damaged file or step, for the first few only.

A run of 100,000 empty index files, opened with ``skip_damaged=True``, logged 100,000 warning lines (20 MB
on stdout, each naming a file). The first :data:`NAMED` are named; after them one line says that the rest
are skipped without a warning each, and :attr:`Trial.skipped_damaged` counts them all.
"""

from __future__ import annotations

from smdebug.core.logger import get_logger

#: damaged files and steps named, one warning each, per trial
NAMED = 20


class SkipNotes:
    def __init__(self, path: str):
        self.path = path
        self.count = 0

    def warn(self, fmt: str, *args) -> None:
        self.count += 1
        if self.count <= NAMED:
            get_logger().warning(fmt, *args)
        elif self.count == NAMED + 1:
            get_logger().warning(
                "%s: more damaged files or steps are skipped (skip_damaged); past the first %d, without a "
                "warning each (trial.skipped_damaged counts them all)", self.path, NAMED)


def warn_skipped(trial, fmt: str, *args) -> None:
    """Warn that ``skip_damaged`` skipped something, through ``trial``'s notes when it keeps them."""
    notes = getattr(trial, "_skip_notes", None)
    if notes is None:
        get_logger().warning(fmt, *args)
    else:
        notes.warn(fmt, *args)
