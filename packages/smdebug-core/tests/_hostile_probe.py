"""Child process of the slow hostile-file-system tests: read a run every way a user does and say, as one
JSON line, how each way ended. Run with a timeout by the parent: a hang is a failure there.

    python _hostile_probe.py RUN
"""

from __future__ import annotations

import contextlib
import io
import json
import sys


def _attempt(results, what, fn):
    from smdebug.exceptions import SMDebugError

    try:
        fn()
        results[what] = "ok"
    except SMDebugError as e:  # the documented errors (IndexReaderException, EventFileCorrupted, ...)
        results[what] = f"{type(e).__name__}"
    except Exception as e:  # noqa: BLE001 - anything else is a raw exception: a finding
        results[what] = f"RAW {type(e).__name__}: {str(e)[:200]}"


def _cli(*argv):
    from smdebug.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))  # a raw exception escapes main() (the CLI would print a traceback)
    if code not in (0, 1, 2):
        raise RuntimeError(f"exit status {code}")


def probe(run: str) -> dict:
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
    return results


if __name__ == "__main__":
    print(json.dumps(probe(sys.argv[1])))
