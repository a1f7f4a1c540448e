"""Print, for each nox session that failed, the end of its own output.

CI shows only the last part of what a run printed; a session that fails early (compat runs third of sixteen)
scrolls out of it and leaves just "failed" in nox's summary. Run after nox with the run's log: this repeats the
failing sessions' pytest summaries and last lines at the very end, where they are seen.
"""
import re
import sys
from collections import OrderedDict

START = re.compile(r"^nox > Running session (.+)$")
FAILED = re.compile(r"^nox > Session (.+) (failed|aborted|interrupted)")
PYTEST_SUMMARY = re.compile(r"^(FAILED|ERROR) |^=+ .*(failed|error).* =+$|Timeout|^E  ")
TAIL_LINES = 60


def sections(lines):
    """Each session's lines, keyed by its name, in the order they ran."""
    found, name = OrderedDict(), None
    for line in lines:
        start = START.match(line)
        if start:
            name = start.group(1)
            found[name] = []
        elif name is not None:
            found[name].append(line)
    return found


def main(path: str) -> int:
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = [line.rstrip("\n") for line in f]
    failed = [m.group(1) for m in map(FAILED.match, lines) if m]
    by_session = sections(lines)
    for name in failed:
        body = by_session.get(name, [])
        print(f"\n======== failed session: {name} ({len(body)} lines of output) ========")
        summary = [line for line in body if PYTEST_SUMMARY.search(line)]
        if summary:
            print("-- pytest's failures and errors:")
            print("\n".join(summary[-40:]))
        print(f"-- its last {TAIL_LINES} lines:")
        print("\n".join(body[-TAIL_LINES:]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
