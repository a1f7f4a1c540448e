"""Names in messages: close-name suggestions for names a user typed (collections, tensors, rules: "did you
mean ...?"), names from a run made printable, a user's value shown in an error, step numbers as runs
(``0-3, 10``); and the check of the names a user passes (a name, or a list of names)."""

from __future__ import annotations

import difflib
import heapq
import re
from typing import Iterable, List, Sequence

from smdebug.exceptions import SMDebugTypeError

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# What may act on a terminal or a log viewer that shows a name from a run (see smdebug.cli.terminal, which
# says why each is here): C0 controls but tab and newline; DEL and the C1 controls (0x9b is a one-byte CSI);
# the implicit direction marks, bidirectional embeddings, overrides and isolates; the line and paragraph
# separators; the invisible characters but the joiners; lone surrogates.
_TERMINAL_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\xad\u061c\u200b\u200e\u200f\u2028-\u202e"
                              "\u2060-\u2064\u2066-\u2069\ufeff\ud800-\udfff]")


def _code(match: "re.Match[str]") -> str:
    return "\\u%04x" % ord(match.group())


def terminal_safe(text: str) -> str:
    """``text`` with every character that could act on a terminal written as ``\\uXXXX`` (idempotent: what it
    writes holds none of them)."""
    return _TERMINAL_UNSAFE.sub(_code, text)


_LINE_BREAKING = re.compile("[\t\n]")


def one_line(text: str) -> str:
    """``text`` as :func:`terminal_safe` writes it, with tabs and newlines written as ``\\u0009`` and
    ``\\u000a`` too: for a name or message from a run put into one line of output. (The terminal stream lets
    newlines pass, since commands print many lines; a tensor name holding one printed as its own line, and a
    run could print ``result: NoIssuesFound`` above the real verdict.)"""
    return _LINE_BREAKING.sub(_code, terminal_safe(text))


def step_runs(steps: Sequence[int]) -> List[str]:
    """Sorted step numbers as runs of consecutive steps: ``[0, 1, 2, 3, 10, 20]`` -> ``["0-3", "10", "20"]``."""
    runs: List[str] = []
    i = 0
    while i < len(steps):
        j = i
        while j + 1 < len(steps) and steps[j + 1] == steps[j] + 1:
            j += 1
        runs.append(str(steps[i]) if i == j else f"{steps[i]}-{steps[j]}")
        i = j + 1
    return runs


def shown(value, limit: int = 200) -> str:
    """``repr(value)`` for a message, clipped to ``limit`` characters; never raises (a user's object's
    ``__repr__`` may)."""
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001
        text = f"a {type(value).__name__}"
    return text if len(text) <= limit else text[:limit] + "..."


def name_list(value, what: str, kind: str, allow_none: bool = False) -> List[str]:
    """``value`` (one ``kind`` name, or an iterable of them; None: none, where allowed) as a list of plain
    strings, else SMDebugTypeError naming ``what``: before anything changes, on the caller's thread. (An int
    reached ``list()`` and disabled the hook; a list of ints was kept, and the run's collections file holding
    it was refused by every reader.) A str subclass is taken as its text: its own methods never run later."""
    if value is None and allow_none:
        return []
    if isinstance(value, str):
        items = [value]
    elif isinstance(value, (bytes, bytearray, dict)) or not hasattr(value, "__iter__"):
        raise SMDebugTypeError(f"{what} takes a {kind} name or a list of names, got {shown(value)}")
    else:
        try:
            items = list(value)
        except Exception as e:  # noqa: BLE001 - a user's iterable may raise anything
            raise SMDebugTypeError(f"{what}: could not read the names ({type(e).__name__})") from None
    bad = [n for n in items if not isinstance(n, str)]
    if bad:
        raise SMDebugTypeError(f"{what} takes {kind} names (strings), got {shown(bad[0])}")
    return [str.__str__(n) for n in items]


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


def listed(names: Iterable[str], limit: int = 10, each: int = 100, empty: str = "none") -> str:
    """``names`` joined by commas for a message: the first ``limit``, each clipped to ``each`` characters, then
    how many more. A message naming a hostile run's workers or collections (thousands, each thousands of
    characters) was megabytes on one line."""
    names = list(names)
    if not names:
        return empty
    text = ", ".join(clipped(n, each) for n in names[:limit])
    return text + (f", ... ({len(names) - limit:,} more)" if len(names) > limit else "")


def close_names(name: str, candidates: Iterable[str], n: int = 3) -> List[str]:
    """Up to ``n`` candidates close to ``name``, closest first (case-insensitive, so ``Weights`` finds
    ``weights``); ``name`` itself is never suggested."""
    by_key = {}
    for c in candidates:
        if c != name:
            by_key.setdefault(c.lower(), c)
    return [by_key[k] for k in _close_matches(name.lower(), list(by_key), n, 0.6)]


#: at most this many candidates get difflib's full (quadratic) ratio; the rest are judged by its cheap bounds
MAX_FULL_COMPARISONS = 2000


def _close_matches(word: str, candidates: List[str], n: int, cutoff: float) -> List[str]:
    """``difflib.get_close_matches`` (same scores, same order) in bounded time: only the
    :data:`MAX_FULL_COMPARISONS` candidates with the best upper bound (``quick_ratio``) are compared in full. A
    run of 100,000 names made of one name's letters, shuffled, passed every cheap test and made one typo in
    ``smdebug show`` take 20 s (a million: minutes); a real run's names give the same answer as difflib's."""
    matcher = difflib.SequenceMatcher()
    matcher.set_seq2(word)
    bounded = []
    for x in candidates:
        matcher.set_seq1(x)
        if matcher.real_quick_ratio() >= cutoff:
            bound = matcher.quick_ratio()
            if bound >= cutoff:
                bounded.append((bound, x))
    if len(bounded) > MAX_FULL_COMPARISONS:
        bounded = heapq.nlargest(MAX_FULL_COMPARISONS, bounded)
    scored = []
    for _, x in bounded:
        matcher.set_seq1(x)
        score = matcher.ratio()
        if score >= cutoff:
            scored.append((score, x))
    return [x for _, x in heapq.nlargest(n, scored)]


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """`` (did you mean 'a' or 'b'?)`` or '' when nothing is close."""
    close = close_names(name, candidates)
    if not close:
        return ""
    quoted = [repr(c) for c in close]
    text = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]
    return f" (did you mean {text}?)"
