"""Names in messages: close-name suggestions for names a user typed (collections, tensors, rules: "did you
mean ...?"), and names from a run made printable."""

from __future__ import annotations

import difflib
import re
from typing import Iterable, List

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def printable(text: str) -> str:
    """``text`` as any stream can write it: lone surrogates, which is how Python spells bytes of a file
    name that are not UTF-8, written as ``\\udcff`` (a UTF-8 stream or file would raise on them)."""
    if not _LONE_SURROGATE.search(text):
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def clipped(text: str, limit: int = 200) -> str:
    """``text`` cut to ``limit`` characters for a message, saying how long it was (a name from a
    configuration file may be 100,000 characters long)."""
    return text if len(text) <= limit else f"{text[:limit]}...({len(text):,} characters)"


def close_names(name: str, candidates: Iterable[str], n: int = 3) -> List[str]:
    """Up to ``n`` candidates close to ``name``, closest first (case-insensitive, so ``Weights`` finds
    ``weights``); ``name`` itself is never suggested."""
    by_key = {}
    for c in candidates:
        if c != name:
            by_key.setdefault(c.lower(), c)
    return [by_key[k] for k in difflib.get_close_matches(name.lower(), list(by_key), n=n, cutoff=0.6)]


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """`` (did you mean 'a' or 'b'?)`` or '' when nothing is close."""
    close = close_names(name, candidates)
    if not close:
        return ""
    quoted = [repr(c) for c in close]
    text = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]
    return f" (did you mean {text}?)"
