"""Waiting for the processes a training script started that outlive it, before ``smdebug run`` reports.

A launcher inside the script can start the job's other processes as its children and not wait for them:
Lightning's DDP strategy on one machine runs the script again for each other rank, and rank 0's process
exits when its own training ends, while rank 1 may still be writing its last steps and its end marker.
``smdebug run`` waited for its own child only, so it counted the steps and returned (and a
``smdebug rules run`` chained after it read a run not ended) with rank 1 still writing.

On Linux ``smdebug run`` makes itself a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``): a process
started under it whose parent exits is re-parented to it instead of to init, and it can wait for it as for
its own child. Elsewhere nothing is adopted and only the script is waited for, as before.
"""

from __future__ import annotations

import ctypes
import os
import sys
import time
from typing import List, Optional, Set, Tuple

_PR_SET_CHILD_SUBREAPER, _PR_GET_CHILD_SUBREAPER = 36, 37  # <linux/prctl.h>


class Adoption:
    """This process as the subreaper of what it starts while the adoption lasts (:func:`adopt_orphans`).

    Only the children it did not have before are waited for, and the flag is put back as it was when the
    wait ends: a program calling ``smdebug run``'s code in its own process keeps its other children (a
    server a test started) to itself, and adopts nothing afterwards."""

    def __init__(self, libc, before: Set[int], was_subreaper: bool):
        self._libc, self.before, self._was_subreaper = libc, before, was_subreaper
        self._ended = False

    def end(self) -> None:
        if not self._was_subreaper and not self._ended:
            self._libc.prctl(_PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
        self._ended = True


def adopt_orphans() -> Optional[Adoption]:
    """Make this process the subreaper of what it starts from now on; None where that cannot be done."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        flag = ctypes.c_int(0)
        if libc.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0) != 0:
            return None
        before = set(_children())
        if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            return None
    except (OSError, AttributeError):
        return None
    return Adoption(libc, before, bool(flag.value))


def _children() -> List[int]:
    """The pids of this process's children, ended ones not yet waited for too (from Linux's /proc); [] where
    it cannot be listed."""
    me, pids = str(os.getpid()).encode(), []
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue  # (ended meanwhile)
        fields = stat[stat.rfind(b")") + 2:].split()  # (the command name may hold spaces and parentheses)
        if len(fields) > 1 and fields[1] == me:
            pids.append(int(name))
    return sorted(pids)


def wait_for_adopted(adoption: Adoption, timeout: float, on_wait=None,
                     poll: float = 0.1) -> Tuple[List[Tuple[int, int]], List[int]]:
    """Wait for the children this process gained since :func:`adopt_orphans` (the script's, re-parented to
    it when their parent exited) until none is left or ``timeout`` seconds have passed; then end the
    adoption.

    ``on_wait(pids)`` is called once if some are still running after a second (so that a wait is never
    silent). Returns the ``(pid, exit code)`` of those that ended with a non-zero code (negative: killed
    by that signal) and the pids still running when the wait ended (at the timeout, or on Ctrl-C)."""
    failed: List[Tuple[int, int]] = []
    start = time.monotonic()
    told = False
    left: List[int] = []
    try:
        while True:
            left = []
            for pid in _children():
                if pid in adoption.before:
                    continue
                try:
                    done, status = os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    continue  # (waited for elsewhere)
                if not done:
                    left.append(pid)
                elif os.waitstatus_to_exitcode(status):
                    failed.append((pid, os.waitstatus_to_exitcode(status)))
            waited = time.monotonic() - start
            if not left or waited >= timeout:
                break
            if not told and waited >= 1.0 and on_wait is not None:
                told = True
                on_wait(left)
            time.sleep(poll)
    except KeyboardInterrupt:
        pass  # (the user stopped the wait: say what is left rather than a traceback)
    finally:
        adoption.end()
    return failed, left


def adopted_note(failed: List[Tuple[int, int]], left: List[int], timeout: float) -> List[str]:
    """The lines ``smdebug run`` prints about the processes it waited for."""
    lines = []
    for pid, code in failed:
        how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
        lines.append(f"smdebug run: a process the script started (pid {pid}) {how}")
    if left:
        lines.append(f"smdebug run: {len(left)} process{'es' if len(left) != 1 else ''} the script started "
                     f"{'are' if len(left) != 1 else 'is'} still running (pid {', '.join(map(str, left))}) after "
                     f"{timeout:g} s (SMDEBUG_RUN_CHILDREN_WAIT); the run may still be written to")
    return lines
