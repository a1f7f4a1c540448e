"""Pieces shared by the commands (ls, show, plot, report, export, plugins, run; rules may use them too).

Streams: a command's result goes to stdout (:func:`out`, :func:`print_json`), everything else to stderr:
logs (``smdebug.cli.main`` moves smdebug's log handlers there), notes (:func:`note`) and progress bars
(:func:`progress`: tqdm, only when stderr is a terminal and the work has lasted a second, unless forced
on or off with ``--progress`` / ``-q``). A reader that goes away (``smdebug ls RUN | head``) ends the
command quietly with :data:`EXIT_CLOSED_PIPE`: ``main`` catches the ``BrokenPipeError`` wherever it
surfaces, including the last flush (:func:`closed_pipe`).

Nothing heavy is imported at module level: numpy, the trial machinery, tqdm and matplotlib are
imported inside the functions that need them, so ``smdebug --help`` stays instant.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from typing import Any, Iterable, Iterator, List, Optional, Sequence, Tuple

from smdebug.core.names import one_line

#: what to install for the commands that draw (plot, report)
PLOT_EXTRA = "smdebug-core[cli]"

#: exit statuses of ls/show/plot/report
EXIT_OK = 0
EXIT_NOT_FOUND = 1  # the run is readable, but the tensor/step/worker asked for is not in it
EXIT_ERROR = 2  # bad arguments, unreadable run, missing optional dependency
EXIT_CLOSED_PIPE = 141  # stdout's reader went away (128 + SIGPIPE, what a shell reports for such a command)


class CliError(Exception):
    """An error shown to the user as ``smdebug <command>: <message>``, exiting with ``code``."""

    def __init__(self, message: str, code: int = EXIT_ERROR):
        super().__init__(message)
        self.code = code


# --------------------------------------------------------------------------------------------------
# arguments
# --------------------------------------------------------------------------------------------------
#: the longest pause between two looks at a followed run (time.sleep overflows near 1e300)
MAX_PAUSE = 86400.0


def wait_seconds(text: str) -> float:
    """argparse type of a time to wait (--wait, --timeout): seconds, 0 or more; inf is no limit. NaN waited
    for ever (or was blamed on an internal argument), a negative time was taken."""
    value = float(text)
    if not value >= 0:  # (NaN fails too)
        raise argparse.ArgumentTypeError(f"{text!r} is not a time to wait: give seconds, 0 or more (or inf)")
    return value


def pause_seconds(text: str) -> float:
    """argparse type of a pause between polls (--interval): seconds, more than 0, at most MAX_PAUSE."""
    value = float(text)
    if not 0 < value <= MAX_PAUSE:  # (NaN fails too; 1e300 overflowed time.sleep)
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a pause: give seconds, more than 0 and at most {MAX_PAUSE:g}")
    return value


def add_trial_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trial", metavar="TRIAL", help="the run's directory or s3://bucket/prefix")
    parser.add_argument(
        "--wait", type=wait_seconds, default=0.0, metavar="SECONDS",
        help="wait this long for a run that is just starting (its collection files); default 0: a path with "
             "no run fails at once",
    )


def add_mode_argument(parser: argparse.ArgumentParser, help_text: str) -> None:
    parser.add_argument("--mode", type=parse_mode, default=None, metavar="MODE", help=help_text)


def add_progress_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--progress", dest="progress", action="store_const", const=True, default=None,
                       help="always show progress bars on stderr (default: only on a terminal, after 1 s)")
    group.add_argument("--no-progress", "-q", dest="progress", action="store_const", const=False,
                       help="never show progress bars")


def parse_mode(text: str):
    """``train``/``TRAIN``/``1`` -> ModeKeys.TRAIN (argparse type; smdebug.core.modes is light)."""
    from smdebug.core.modes import ModeKeys

    try:
        return ModeKeys.parse(int(text) if text.strip().isdigit() else text)
    except Exception:  # noqa: BLE001 - SMDebugValueError; argparse wants ArgumentTypeError
        raise argparse.ArgumentTypeError(
            f"invalid mode {text!r} (choose from {', '.join(m.name.lower() for m in ModeKeys)})"
        ) from None


# --------------------------------------------------------------------------------------------------
# opening a run
# --------------------------------------------------------------------------------------------------
def open_trial(path: str, wait: float = 0.0):
    """``create_trial(path)`` for the CLI: a path with no run ("no smdebug run at PATH") or an unreadable
    run is a CliError, and a run whose collection files are not there yet is waited for at most ``wait``
    seconds (also a run that has not started yet)."""
    from smdebug.exceptions import NoSmdebugRun, SMDebugError
    from smdebug.trials import create_trial

    if not path.strip():
        raise CliError("the run's path is empty (give . for the current directory)")
    try:
        trial = create_trial(path, wait_for_collections=max(wait, 0.0))
        # (a one-shot command: a missing event file of a run that has not ended -- a crashed job's -- is said at
        # once; waiting for it cost 200 s of silence per command, probe 17b F3)
        trial.wait_for_missing_event_files = False
        return trial
    except NoSmdebugRun as e:
        hint = "; --wait SECONDS waits for a run about to start" if not wait else ""
        raise CliError(f"no smdebug run at {path}" + (f": {e.reason}" if e.reason else "") + hint) from None
    except SMDebugError as e:
        raise CliError(f"cannot read {path}: {e}") from None
    except (OSError, ImportError) as e:  # an S3 backend without boto3, permissions...
        raise CliError(f"cannot read {path}: {e}") from None


#: the largest file a command reads whole (rule results, configurations)
MAX_DOCUMENT_BYTES = 64 << 20


def read_file(path: str, what: str) -> bytes:
    """The bytes of a file named on the command line: a local path or ``s3://bucket/key``.

    A missing or unreadable file is a CliError naming ``what`` it was meant to be.
    """
    from smdebug.core.storage.base import is_s3_path
    from smdebug.core.storage.factory import get_storage
    from smdebug.core.storage.safe_fs import read_regular
    from smdebug.exceptions import SMDebugError

    try:
        if is_s3_path(path):
            folder, _, name = path.strip().rstrip("/").rpartition("/")
            return get_storage(folder).read_limited(name, MAX_DOCUMENT_BYTES)
        # a regular file only (a FIFO would block), of a size a document can have
        return read_regular(os.path.expanduser(path), limit=MAX_DOCUMENT_BYTES)
    except FileNotFoundError:
        raise CliError(f"cannot read {what} {path}: no such file") from None
    except (OSError, ValueError, SMDebugError) as e:
        raise CliError(f"cannot read {what} {path}: {e}") from None


#: the output path that means standard output (``-o -``), as in most command-line tools
STDOUT = "-"


def check_stdout(what: str, others: Sequence[Tuple[bool, str]] = ()) -> None:
    """Before writing ``what`` (a PNG image, an HTML page) to stdout for ``-o -``: refuse when stdout is a
    terminal (bytes nobody can read, and a terminal may act on them) or an option that also writes to stdout
    is given (``others``: ``(given, option)``)."""
    for given, option in others:
        if given:
            raise CliError(f"-o - writes {what} to stdout, and {option} would print there too: use one of them")
    if sys.stdout.isatty():
        raise CliError(f"-o - writes {what} to stdout, which is a terminal: redirect it (> FILE, | COMMAND) or "
                       "name a file")


def write_stdout(data: bytes) -> None:
    """The whole output of ``-o -`` at once (a reader that goes away is :func:`closed_pipe`'s)."""
    sys.stdout.flush()
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


#: an output path given as "" or blanks (an unset shell variable): never the current directory
EMPTY_OUTPUT = "the output path is empty (an unset variable?): name a file, or - for stdout"


def check_output(path: str, inputs: Sequence[Tuple[str, str]] = (), s3_ok: bool = False) -> None:
    """Before a command reads or evaluates anything: refuse an output path it must never replace (a device,
    a folder, a run's own files: ``safe_fs.check_output_path``'s errors), one of the command's own
    ``inputs`` (``(what, local path)``: the page would replace the verdicts it shows) or one it could not
    write (CliError). ``-`` (stdout) is the caller's to check (:func:`check_stdout`).

    ``s3://`` outputs: for a command that writes them (``s3_ok``: one object), refused without a bucket and a
    key (``s3://`` was written as a local file named ``s3:``; others were refused only once the work was
    done) and inside a run's own files; for one that writes local files only, refused (it wrote a local
    folder named ``s3:`` and said it wrote to S3)."""
    from smdebug.core.output_guard import refuse_run_output
    from smdebug.core.storage.base import is_s3_path, s3_object_problem
    from smdebug.core.storage.safe_fs import check_output_path, output_problem

    if not path.strip():  # (``-o "$OUT"`` with OUT unset: "" was taken for the current directory)
        raise CliError(EMPTY_OUTPUT)
    if path == STDOUT:
        return
    if is_s3_path(path):
        if not s3_ok:
            raise CliError(f"cannot write {path}: this command writes a local file only; write it to stdout "
                           f"with -o - and copy that (aws s3 cp - {path})")
        problem = s3_object_problem(path)
        if problem:
            raise CliError(f"cannot write {path}: {problem}")
        refuse_run_output(path.strip())
        return

    check_output_path(os.path.abspath(os.path.expanduser(path)))
    target = os.path.realpath(os.path.expanduser(path))
    for what, source in inputs:
        if source and not source.startswith("s3://") and os.path.realpath(os.path.expanduser(source)) == target:
            raise CliError(f"refusing to write {path}: it is {what}, which this command reads; write the output "
                           "elsewhere")
    problem = output_problem(path)
    if problem:
        raise CliError(f"cannot write {path}: {problem}")


def display_path(trial) -> str:
    """The run's path for output: absolute for a local run, as given for s3://."""
    from smdebug.core.names import printable

    path = str(trial.path)
    return printable(path if path.startswith("s3://") else os.path.abspath(path))  # (bytes that are not UTF-8: escaped)


def run_state(trial) -> str:
    return "finished" if trial.loaded_all_steps else "still training"


def mode_name(mode) -> str:
    return mode.name if mode is not None else "?"


def resolve_tensor_names(trial, patterns: Sequence[str], collections: Sequence[str] = ()) -> List[str]:
    """Tensor names for command-line patterns: an exact name, else a regular expression that must match
    whole names (``'gradient/.*'``); plus every tensor of the given collections. Order: as asked."""
    from smdebug.core.run_regex import PatternError, compile_bounded

    all_names = trial.tensor_names()
    out: List[str] = []
    missing = []
    for pattern in patterns:
        if pattern in all_names:
            found = [pattern]
        else:
            try:
                rx = compile_bounded(pattern, whole=True)  # (matched in bounded time)
            except PatternError as e:
                raise CliError(f"{pattern!r} is neither a tensor of the run nor a valid regex ({e})") from None
            found = [n for n in all_names if rx.search(n)]
        if not found:
            missing.append(pattern)
        out += [n for n in found if n not in out]
    for cname in collections:
        coll = trial.collections().get(cname)
        if coll is None:
            raise no_collection_error(cname, trial)
        out += [n for n in coll.members(all_names) if n not in out]
    if missing:
        raise CliError(f"no tensor matches {', '.join(repr(m) for m in missing)}{suggest(missing[0], all_names)}",
                       EXIT_NOT_FOUND)
    return out


def suggest(name: str, names: Iterable[str]) -> str:
    """`` (did you mean 'a' or 'b'?)`` or '': the names close in spelling, else up to three that hold ``name``
    as a word, shortest first (``loss`` -> ``CrossEntropyLoss_output_0``: a framework's names are longer than
    the word a user types, and no spelling distance finds them)."""
    from smdebug.core.names import did_you_mean

    names = list(names)
    close = did_you_mean(name, names)
    if close or len(name) < 3:
        return close
    word = name.lower()
    holding = sorted((n for n in names if word in n.lower() and n != name), key=lambda n: (len(n), n))[:3]
    if not holding:
        return ""
    quoted = [repr(n) for n in holding]
    return f" (did you mean {quoted[0] if len(quoted) == 1 else ', '.join(quoted[:-1]) + ' or ' + quoted[-1]}?)"


def no_collection_error(name: str, trial) -> CliError:
    """The error for a collection name the run does not have, with the close names it has."""
    from smdebug.core.names import listed

    names = sorted(trial.collections())
    return CliError(f"no collection {name!r} in the run{suggest(name, names)} (it has: {listed(names)})",
                    EXIT_NOT_FOUND)


# --------------------------------------------------------------------------------------------------
# steps
# --------------------------------------------------------------------------------------------------
def step_runs(steps: Sequence[int]) -> List[Tuple[int, int, int]]:
    """Split sorted steps into arithmetic runs ``(first, last, stride)``, greedily, longest first.

    ``[0, 10, 20, 30, 35]`` -> ``[(0, 30, 10), (35, 35, 1)]``; a lone pair stays two single steps.
    """
    runs: List[Tuple[int, int, int]] = []
    i, n = 0, len(steps)
    while i < n:
        if i + 2 < n and steps[i + 1] - steps[i] == steps[i + 2] - steps[i + 1] > 0:
            stride = steps[i + 1] - steps[i]
            j = i + 2
            while j + 1 < n and steps[j + 1] - steps[j] == stride:
                j += 1
            runs.append((steps[i], steps[j], stride))
            i = j + 1
        elif i + 1 < n and steps[i + 1] - steps[i] == 1:
            runs.append((steps[i], steps[i + 1], 1))
            i += 2
        else:
            runs.append((steps[i], steps[i], 1))
            i += 1
    return runs


def compact_steps(steps: Sequence[int]) -> str:
    """Saved steps as compact ranges: ``0-90/10`` (0, 10, ..., 90), ``0-4`` (every step), ``3,7``."""
    if not steps:
        return "-"
    parts = []
    for first, last, stride in step_runs(list(steps)):
        if first == last:
            parts.append(str(first))
        elif stride == 1:
            parts.append(f"{first}-{last}")
        else:
            parts.append(f"{first}-{last}/{stride}")
    return ",".join(parts)


def expand_steps(text: str) -> List[int]:
    """Inverse of :func:`compact_steps`."""
    if text in ("", "-"):
        return []
    out: List[int] = []
    for part in text.split(","):
        rng, _, stride = part.partition("/")
        first, sep, last = rng.partition("-")
        if not sep:
            out.append(int(first))
        else:
            out += list(range(int(first), int(last) + 1, int(stride or 1)))
    return out


def subsample(items: Sequence[Any], max_points: Optional[int]) -> List[Any]:
    """At most ``max_points`` items, evenly spread, first and last kept (None/0: all)."""
    items = list(items)
    if not max_points or len(items) <= max_points:
        return items
    if max_points == 1:
        return [items[-1]]
    last = len(items) - 1
    picks = sorted({round(i * last / (max_points - 1)) for i in range(max_points)})
    return [items[i] for i in picks]


# --------------------------------------------------------------------------------------------------
# progress
# --------------------------------------------------------------------------------------------------
def progress(iterable: Iterable, total: Optional[int] = None, desc: str = "", enabled: Optional[bool] = None) -> Iterator:
    """``iterable`` with a tqdm progress bar on stderr.

    ``enabled``: None (default) shows the bar only on a terminal and only once the work has taken more
    than a second; True always shows it; False never. Without tqdm installed: no bar.
    """
    if enabled is False:
        return iter(iterable)
    try:
        from tqdm import tqdm
    except ImportError:
        return iter(iterable)
    if enabled is None and not (hasattr(sys.stderr, "isatty") and sys.stderr.isatty()):
        return iter(iterable)
    from smdebug.cli.terminal import escape, raw_stderr

    # forced (--progress): shown at once and left on screen; automatic: after 1 s, erased when done. The bar
    # redraws its line with carriage returns, which the command's stderr escapes: it writes beneath that
    # wrapper, its label (a tensor's name) escaped here.
    return iter(tqdm(iterable, total=total, desc=escape(desc), unit="read", file=raw_stderr(),
                     leave=bool(enabled), delay=0 if enabled else 1.0, dynamic_ncols=True))


# --------------------------------------------------------------------------------------------------
# optional dependencies
# --------------------------------------------------------------------------------------------------
def need_matplotlib(command: str):
    """Import matplotlib (Agg canvas, no pyplot) or raise a CliError saying what to install."""
    try:
        import matplotlib
        from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: F401
        from matplotlib.figure import Figure  # noqa: F401
    except ImportError as e:
        raise CliError(
            f"{command} needs matplotlib ({e}); install it with: pip install '{PLOT_EXTRA}'"
        ) from None
    return matplotlib


# --------------------------------------------------------------------------------------------------
# output
# --------------------------------------------------------------------------------------------------
def out(text: str = "") -> None:
    """A line of the command's result, on stdout."""
    sys.stdout.write(text + "\n")


def note(text: str) -> None:
    """A line about the work (not its result), on stderr: ``--json`` and pipes see only results."""
    sys.stderr.write(text + "\n")


def closed_pipe() -> int:
    """stdout's reader has gone: point stdout at /dev/null, so that the interpreter's last flush of what
    is still buffered cannot raise again at exit, and return :data:`EXIT_CLOSED_PIPE`."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout without a file descriptor (captured): nothing to redirect
        pass
    return EXIT_CLOSED_PIPE


def jsonable(value: Any) -> Any:
    """numpy values and arrays as JSON-friendly data; non-finite floats as the strings nan/inf/-inf
    (strict JSON has no NaN)."""
    import numpy as np

    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.generic):
        return jsonable(value.item())
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, (bytes, bytearray)):
        return value.decode("utf-8", "replace")
    if isinstance(value, complex):
        return [jsonable(value.real), jsonable(value.imag)]
    return value


def print_json(document: Any) -> None:
    import json

    json.dump(jsonable(document), sys.stdout, indent=2, allow_nan=False)
    sys.stdout.write("\n")


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], indent: str = "  ",
          align_right: Sequence[int] = ()) -> str:
    """A plain-text table; ``align_right``: column indexes aligned right (numbers). Each cell is one line
    (:func:`one_line`: a name from a run may hold a newline)."""
    cells = [list(headers)] + [["" if c is None else one_line(str(c)) for c in row] for row in rows]
    # Columns are padded to their longest cell up to MAX_COLUMN_WIDTH; a longer cell runs past its column on
    # its own line. (Padded to the longest, one 200,000-character name from a run made every row of the
    # table as long: output rows x name.)
    widths = [min(max(len(row[i]) for row in cells), MAX_COLUMN_WIDTH) for i in range(len(headers))]

    def fmt(row):
        return indent + "  ".join(
            (c.rjust(w) if i in align_right else c.ljust(w)) for i, (c, w) in enumerate(zip(row, widths))
        ).rstrip()

    lines = [fmt(cells[0]), indent + "  ".join("-" * w for w in widths)]
    lines += [fmt(row) for row in cells[1:]]
    return "\n".join(lines)


#: the widest a table pads a column (a tensor name of a real model fits)
MAX_COLUMN_WIDTH = 160
#: the most characters of a value that is not a number (a string tensor's) a table or a printed array shows
MAX_VALUE_CHARS = 200


def clip_value_text(text: str, limit: int = MAX_VALUE_CHARS) -> str:
    """``text`` (a value read from a run) cut to ``limit`` characters, saying how long it was: a string
    tensor's element may be megabytes long, and is printed wherever a value is."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text):,} characters)"


def fmt_number(x: Any) -> str:
    """Short, readable float formatting for tables (``0.1235``, ``1.2e-08``, ``nan``); anything else as
    text, clipped (:func:`clip_value_text`)."""
    try:
        f = float(x)
    except (TypeError, ValueError, OverflowError):
        return clip_value_text(str(x))
    if math.isnan(f):
        return "nan"
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    if f == int(f) and abs(f) < 1e15:
        return str(int(f))
    return f"{f:.6g}"
