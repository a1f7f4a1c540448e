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
