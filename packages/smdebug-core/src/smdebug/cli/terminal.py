"""What the commands print, made safe for the terminal that shows it.

Tensor, worker, collection and file names come from a run folder or an S3 prefix that anyone with write
access may have filled. Printed as they are, a name holding an escape sequence (``\\x1b]0;...\\x07``,
``\\x1b[2J``) would retitle or clear the user's terminal, or worse on terminals that honour more of them;
bidirectional overrides (U+202E) would show text other than what is there; and a file name that is not
UTF-8 (Python spells its bytes as lone surrogates) would stop the command with UnicodeEncodeError.

:func:`safe_streams` wraps ``sys.stdout`` and ``sys.stderr`` for the duration of a command, so that every
line a command, a log record or a message prints passes through :func:`escape`: each such character is
written as ``\\uXXXX`` (valid inside a JSON string too, so ``--json`` output stays parseable; json.dump
escapes these already). Newlines and tabs pass (commands print many lines; a name from the run put into a
line is made one line where it is put: ``smdebug.core.names.one_line``). Carriage returns do not, on either stream: a name holding
one returns the cursor to the start of the line, and what follows it overwrites what the line said (an
error message on stderr could be made to read as a success). Progress bars, the only writers that redraw
a line, write to the stream beneath the wrapper (:func:`raw_stderr`) with their label escaped. The
invisible marks that reorder text (U+061C, U+200E, U+200F) and the Unicode line and paragraph separators
(U+2028, U+2029: a line break to some terminals and viewers) are escaped too, as the HTML report does, and
so are the characters that show as nothing at all outside the scripts that join letters with them (soft
hyphen U+00AD, zero-width space U+200B, word joiner and invisible operators U+2060-U+2064, U+FEFF): with
them two names, or two workers, print the same (``w`` and ``w\u200b``). The zero-width joiners U+200C and
U+200D, which Persian, Indic scripts and emoji need, pass.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Iterator

from smdebug.core.names import terminal_safe as escape  # (the log records of the library use it too)


class SafeTextStream:
    """A text stream that escapes (:func:`escape`) what is written through it; everything else
    (``isatty``, ``fileno``, ``encoding``, ``buffer``, ``flush``...) is the wrapped stream's."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        if isinstance(text, str):
            text = escape(text)
        return self._stream.write(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    @property
    def wrapped(self):
        return self._stream

    def __getattr__(self, name):
        return getattr(self._stream, name)


@contextlib.contextmanager
def safe_streams() -> Iterator[None]:
    """``sys.stdout`` and ``sys.stderr`` escape terminal controls inside the block (restored after)."""
    saved = sys.stdout, sys.stderr
    sys.stdout = _wrap(sys.stdout)
    sys.stderr = _wrap(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def _wrap(stream):
    if stream is None or isinstance(stream, SafeTextStream):
        return stream
    return SafeTextStream(stream)


def raw_stderr():
    """The stream beneath ``sys.stderr``'s wrapper (``sys.stderr`` itself outside :func:`safe_streams`), for
    a progress bar: it redraws its line with carriage returns, which the wrapper escapes. What it is given
    to show must be escaped by the caller."""
    return getattr(sys.stderr, "wrapped", sys.stderr)
