"""Ctrl-C while a run is followed, never lost.

Python turns SIGINT into a KeyboardInterrupt raised wherever the main thread happens to be. When that is
inside a ``__del__`` method or a weakref callback (objects freed while a run's files are read), Python
prints "Exception ignored" and drops it: a followed run that is never going to end (its job died) would then
be polled for ever, deaf to the Ctrl-C the user already pressed. While a run is followed (``rules run --follow``,
``report --follow``) the handler below also records the press, and the follower looks at the record at every poll.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator


class CtrlC:
    """Whether Ctrl-C was pressed since :func:`watch_ctrl_c` began."""

    __slots__ = ("pressed",)

    def __init__(self) -> None:
        self.pressed = False

    def check(self) -> None:
        """Raise KeyboardInterrupt if Ctrl-C was pressed (its own KeyboardInterrupt may have been dropped)."""
        if self.pressed:
            raise KeyboardInterrupt


@contextmanager
def watch_ctrl_c() -> Iterator[CtrlC]:
    """Record SIGINT while the block runs, and raise KeyboardInterrupt as Python's own handler does.

    Only Python's default handler is replaced, and only in the main thread (signal handlers can be set
    nowhere else): a caller's own SIGINT handler is theirs and is left alone. The previous handler is back
    when the block ends."""
    state = CtrlC()
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield state
        return

    def on_sigint(signum, frame):
        state.pressed = True
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_sigint)
    try:
        yield state
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
