"""Regular expressions that come from data, not from the user's code, matched in bounded time.

A run's collections file carries ``include_regex`` patterns, and anyone who can write into a run folder
can put a pattern there whose backtracking takes exponential time (``^(a+)+$`` against ``'a' * 40 + '!'``).
Python's ``re`` cannot be interrupted, so such patterns are matched with the ``regex`` package (the same
syntax as ``re``, lookarounds included, which our own default collections use and RE2 lacks) and its
``timeout``: a match taking longer than ``SMDEBUG_RUN_REGEX_TIMEOUT`` seconds (default 0.25) is abandoned,
and the pattern is refused from then on, with one warning naming it. Patterns of one file share a budget
of ``MAX_TIMEOUTS`` abandoned matches, after which all of them are refused: a file full of slow patterns
costs at most a second or two, however many names are matched. A refused pattern matches nothing; the
collection keeps its explicit tensor names and its other patterns.

Patterns the user passes in code stay plain ``re`` (their own input). The CLI's ``--regex`` options go
through :func:`compile_bounded` too: what a script passes there may come from anywhere.
"""

from __future__ import annotations

from typing import List, Optional, Sequence

from smdebug.core.env_settings import env_float
from smdebug.core.logger import get_logger

logger = get_logger()

DEFAULT_TIMEOUT = 0.25
#: abandoned matches per budget (one collections file) before every pattern of it is refused
MAX_TIMEOUTS = 4
#: a pattern longer than this is refused unread (ours are a few dozen characters)
MAX_PATTERN_LENGTH = 4096


def timeout() -> float:
    return env_float("SMDEBUG_RUN_REGEX_TIMEOUT", DEFAULT_TIMEOUT, minimum=0.001)


class PatternError(ValueError):
    """A pattern that cannot be used (invalid, too long)."""


def compile_pattern(pattern: str):
    """Compile one pattern with the ``regex`` package (``re``'s syntax); PatternError if it is not one."""
    if not isinstance(pattern, str):
        raise PatternError(f"a pattern must be a string, got {pattern!r}")
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise PatternError(f"a pattern of {len(pattern)} characters is longer than {MAX_PATTERN_LENGTH}")
    import regex  # (imported when a run's patterns are first used, not by every import of smdebug)

    try:
        return regex.compile(pattern, flags=regex.VERSION0)
    except (regex.error, RecursionError, OverflowError, ValueError) as e:
        raise PatternError(f"invalid regex {pattern!r}: {e}") from None


class Budget:
    """Abandoned matches shared by the patterns of one source (one collections file)."""

    def __init__(self, source: str = "", limit: int = MAX_TIMEOUTS):
        self.source = source
        self.limit = limit
        self.timeouts = 0

    @property
    def spent(self) -> bool:
        return self.timeouts >= self.limit


class BoundedPatterns:
    """Some patterns, matched with ``search`` (anywhere in the name), each match in bounded time."""

    def __init__(self, patterns: Sequence[str], owner: str = "", budget: Optional[Budget] = None,
                 whole: bool = False):
        self.owner = owner
        self.budget = budget or Budget(owner)
        self._live = [(p, compile_pattern(p)) for p in patterns]
        self._whole = whole  # fullmatch instead of search
        #: patterns set aside after a match took too long
        self.refused: List[str] = []

    def search(self, name: str) -> bool:
        if not self._live:
            return False
        if self.budget.spent:
            self._refuse_all()
            return False
        limit = timeout()
        for i, (pattern, compiled) in enumerate(self._live):
            try:
                match = compiled.fullmatch if self._whole else compiled.search
                if match(name, timeout=limit) is not None:
                    return True
            except TimeoutError:
                self.budget.timeouts += 1
                self._refuse(i, pattern, name, limit)
                return self.search(name)  # (the remaining patterns)
        return False

    def _refuse(self, i: int, pattern: str, name: str, limit: float) -> None:
        del self._live[i]
        self.refused.append(pattern)
        logger.warning(
            "smdebug: include_regex %r of %s took more than %gs to match the name %r (catastrophic "
            "backtracking?); it is not used: the collection keeps its explicit tensor names and other "
            "patterns (SMDEBUG_RUN_REGEX_TIMEOUT sets the limit)", pattern[:200], self.owner or "a collection",
            limit, name[:80])

    def _refuse_all(self) -> None:
        if self._live:
            self.refused += [p for p, _ in self._live]
            logger.warning("smdebug: %d more include_regex pattern(s) of %s are not used: its patterns took "
                           "too long %d times", len(self._live), self.budget.source or "this run",
                           self.budget.timeouts)
            self._live = []


def compile_bounded(pattern: str, what: str = "--regex", whole: bool = False) -> BoundedPatterns:
    """One pattern (e.g. a CLI option) matched in bounded time (``whole``: the whole name must match);
    PatternError if invalid."""
    return BoundedPatterns([pattern], what, whole=whole)
