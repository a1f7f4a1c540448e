"""A Ctrl-C that Python drops still ends a followed run.

Python raises the KeyboardInterrupt of a SIGINT wherever the main thread is; inside a ``__del__`` it prints
"Exception ignored" and drops it. ``watch_ctrl_c`` (used by ``rules run --follow`` and ``report --follow``)
records the press so that the follower's next poll raises it. Each check runs in a fresh interpreter, where
SIGINT has Python's default handler as it has in the command line."""

from __future__ import annotations

import subprocess
import sys

from smdebug_test_support.ctrl_c import sigint_as_a_terminal_gives_it

SCRIPT = """
import signal, sys
from smdebug.core.interruption import watch_ctrl_c
from smdebug_test_support.ctrl_c import PressesCtrlCWhileFreed

if sys.argv[1] == "own-handler":
    signal.signal(signal.SIGINT, lambda *_: print("own handler"))
with watch_ctrl_c() as ctrl_c:
    PressesCtrlCWhileFreed()
    print("went on")
    try:
        ctrl_c.check()
        print("not seen")
    except KeyboardInterrupt:
        print("seen at the next poll")
print("handler restored" if signal.getsignal(signal.SIGINT) is signal.default_int_handler else "handler kept")
"""


def run(case):
    done = subprocess.run([sys.executable, "-c", SCRIPT, case], capture_output=True, text=True, timeout=60,
                          preexec_fn=sigint_as_a_terminal_gives_it)
    assert done.returncode == 0, done.stderr
    return done.stdout.split("\n")[:-1], done.stderr


def test_a_dropped_ctrl_c_is_raised_at_the_next_poll():
    out, err = run("default")
    assert "Exception ignored" in err and "KeyboardInterrupt" in err  # Python dropped it...
    assert out == ["went on", "seen at the next poll", "handler restored"]  # ...the follower did not


def test_a_callers_own_sigint_handler_is_left_alone():
    out, _ = run("own-handler")
    assert out == ["own handler", "went on", "not seen", "handler kept"]
