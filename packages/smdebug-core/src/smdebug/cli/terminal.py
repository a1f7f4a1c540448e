"""What the commands print, made safe for the terminal that shows it.

Tensor, worker, collection and file names come from a run folder or an S3 prefix that anyone with write
access may have filled. Printed as they are, a name holding an escape sequence (``\\x1b]0;...\\x07``,
``\\x1b[2J``) would retitle or clear the user's terminal, or worse on terminals that honour more of them;
bidirectional overrides (U+202E) would show text other than what is there; and a file name that is not
UTF-8 (Python spells its bytes as lone surrogates) would stop the command with UnicodeEncodeError.

:func:`safe_streams` wraps ``sys.stdout`` and ``sys.stderr`` for the duration of a command, so that every
line a command, a log record or a message prints passes through :func:`escape`: each such character is
written as ``\\uXXXX`` (valid inside a JSON string too, so ``--json`` output stays parseable; json.dump
escapes these already). Newlines and tabs pass; carriage returns pass on stderr only, where progress bars
redraw their line (on stdout a name holding one could overwrite what the line showed).
"""

from __future__ import annotations

import contextlib
import re
import sys
from typing import Iterator

# C0 controls but tab, newline and carriage return; DEL and the C1 controls (0x9b is a one-byte CSI);
# bidirectional embeddings, overrides and isolates; lone surrogates.
_UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_UNSAFE_OR_CR = re.compile("[\r\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _code(match: "re.Match[str]") -> str:
    return "\\u%04x" % ord(match.group())


def escape(text: str, keep_cr: bool = True) -> str:
    """``text`` with every character that could act on a terminal written as ``\\uXXXX``."""
    return (_UNSAFE if keep_cr else _UNSAFE_OR_CR).sub(_code, text)


class SafeTextStream:
    """A text stream that escapes (:func:`escape`) what is written through it; everything else
    (``isatty``, ``fileno``, ``encoding``, ``buffer``, ``flush``...) is the wrapped stream's."""

    def __init__(self, stream, keep_cr: bool = True):
        self._stream = stream
        self._keep_cr = keep_cr

    def write(self, text: str) -> int:
        if isinstance(text, str):
            text = escape(text, self._keep_cr)
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
    sys.stdout = _wrap(sys.stdout, keep_cr=False)
    sys.stderr = _wrap(sys.stderr, keep_cr=True)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def _wrap(stream, keep_cr: bool):
    if stream is None or isinstance(stream, SafeTextStream):
        return stream
    return SafeTextStream(stream, keep_cr)
