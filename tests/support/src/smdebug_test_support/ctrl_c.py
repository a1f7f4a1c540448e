"""An object that presses Ctrl-C while it is freed, for the tests of a Ctrl-C Python drops.

Python raises the KeyboardInterrupt of a SIGINT wherever the main thread is; raised inside a ``__del__`` it is
printed as "Exception ignored" and dropped. Freeing one of these in a process with Python's default SIGINT
handler reproduces that exactly (the tests run it in a fresh interpreter)."""

from __future__ import annotations

import signal


class PressesCtrlCWhileFreed:
    def __del__(self):
        signal.raise_signal(signal.SIGINT)
        for _ in range(100000):  # (the KeyboardInterrupt is raised here, inside __del__, and dropped)
            pass


def sigint_as_a_terminal_gives_it() -> None:
    """``preexec_fn`` for a child that must receive Ctrl-C: SIGINT at its default disposition, as a terminal
    gives it. A test run started in the background by a shell without job control (a CI script's ``cmd &``)
    ignores SIGINT, and so would its children: Python would install no handler and a Ctrl-C would do nothing
    (the tests of a dropped Ctrl-C failed so, three times in a row, in such a run)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
