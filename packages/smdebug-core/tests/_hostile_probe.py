"""Child process of the slow hostile-file-system tests: read a run every way a user does and say, as one
JSON line, how each way ended. Run with a timeout by the parent: a hang is a failure there.

    python _hostile_probe.py RUN [--full]     (--full: also to_dataframe, report, export, rules run)
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import tempfile


def _attempt(results, what, fn):
    from smdebug.exceptions import SMDebugError

    try:
        fn()
        results[what] = "ok"
    except (SMDebugError, CliFailed) as e:  # the documented errors (IndexReaderException, EventFileCorrupted, ...)
        results[what] = f"{type(e).__name__}: {str(e)[:300]}"
    except Exception as e:  # noqa: BLE001 - anything else is a raw exception: a finding
        results[what] = f"RAW {type(e).__name__}: {str(e)[:200]}"


class CliFailed(Exception):
    """A command that ended with an error message (exit status 1 or 2): the message, for the parent."""


def _cli(*argv, ok=(0, 1, 2)):
    from smdebug.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))  # a raw exception escapes main() (the CLI would print a traceback)
    if code not in ok:
        raise RuntimeError(f"exit status {code}")
    if code:
        lines = [line for line in err.getvalue().splitlines() if line.startswith("smdebug ")]
        raise CliFailed(f"exit status {code}: {lines[-1] if lines else err.getvalue()[-300:]}")


def probe(run: str, full: bool = False) -> dict:
    from smdebug.trials import create_trial

    results: dict = {}
    state = {}

    def open_trial():
        state["trial"] = create_trial(run)

    def open_skipping():
        state["trial"] = create_trial(run, skip_damaged=True)

    def values():
        trial = state["trial"]
        for name in trial.tensor_names():
            for step in trial.tensor(name).steps():
                trial.tensor(name).value(step)

    def all_values():
        trial = state["trial"]
        for name in trial.tensor_names():
            trial.tensor(name).values()

    def collections():
        trial = state["trial"]
        for cname in trial.collections():
            trial.tensor_names(collection=cname)

    _attempt(results, "create_trial", open_trial)
    if "trial" in state:
        _attempt(results, "values", values)
    _attempt(results, "create_trial(skip_damaged)", open_skipping)
    if "trial" in state:
        _attempt(results, "values(skip_damaged)", all_values)
        _attempt(results, "tensor_names(collection)", collections)
    _attempt(results, "smdebug ls", lambda: _cli("ls", run))
    _attempt(results, "smdebug ls --json", lambda: _cli("ls", run, "--json"))
    _attempt(results, "smdebug show", lambda: _cli("show", run, "w", "--step", "1"))
    if full:
        # (a scratch folder per call, removed after: the outputs are not looked at, and one left behind per
        # call filled /tmp with hundreds of them)
        with tempfile.TemporaryDirectory(prefix="smdebug-probe-") as scratch:
            if "trial" in state:
                _attempt(results, "to_dataframe(skip_damaged)", lambda: state["trial"].to_dataframe())
            _attempt(results, "smdebug report", lambda: _cli("report", run, "-o", os.path.join(scratch, "r.html")))
            _attempt(results, "smdebug export",
                     lambda: _cli("export", "tensorboard", run, os.path.join(scratch, "tb")))
            # (rules: 3 is "not evaluated", an answer; all_zero needs to be told what to read, or it reads
            # nothing and says so)
            _attempt(results, "smdebug rules run", lambda: _cli("rules", "run", run, "--rule", "all_zero", "--param",
                                                               "collection_names=weights", ok=(0, 1, 2, 3, 4)))
    return results


if __name__ == "__main__":
    print(json.dumps(probe(sys.argv[1], full="--full" in sys.argv[2:])))
