"""Regular expressions that come from data, not from the user's code, matched in bounded time.

A run's collections file carries ``include_regex`` patterns, and anyone who can write into a run folder
can put a pattern there whose backtracking takes exponential time (``^(a+)+$`` against ``'a' * 40 + '!'``).
Python's ``re`` cannot be interrupted, so such patterns are matched with the ``regex`` package (the same
syntax as ``re``, lookarounds included, which our own default collections use and RE2 lacks) and its
``timeout``: a match taking longer than ``SMDEBUG_RUN_REGEX_TIMEOUT`` seconds (default 0.25) is abandoned,
and the pattern is refused from then on, with one warning naming it. Patterns of one file share a budget
of ``MAX_TIMEOUTS`` abandoned matches and of ``SMDEBUG_RUN_REGEX_TOTAL`` seconds of matching in all
(default 10; each name is matched once, its answer kept), after which all of them are refused: a file full
of slow patterns, or of thousands of patterns against tens of thousands of names, costs seconds, however
many names are matched. A refused pattern matches nothing; the collection keeps its explicit tensor names
and its other patterns.

Patterns the user passes in code stay plain ``re`` (their own input). The CLI's ``--regex`` options go
through :func:`compile_bounded` too: what a script passes there may come from anywhere.
"""

from __future__ import annotations

import time
from typing import Dict, List, Optional, Sequence

from smdebug.core.env_settings import env_float
from smdebug.core.logger import get_logger

logger = get_logger()

DEFAULT_TIMEOUT = 0.25
#: answers kept per set of patterns (names are matched again beyond)
MAX_ANSWERS = 200_000
#: seconds the patterns of one source may spend matching in all (SMDEBUG_RUN_REGEX_TOTAL)
DEFAULT_TOTAL_SECONDS = 10.0
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


def total_seconds() -> float:
    return env_float("SMDEBUG_RUN_REGEX_TOTAL", DEFAULT_TOTAL_SECONDS, minimum=0.01)


class Budget:
    """What the patterns of one source (one collections file, one rule) may spend: abandoned matches, and
    seconds of matching in all. Each match under the per-match timeout is not enough: a file of patterns
    that each take 0.1 s on a run of crafted names costs names x patterns x 0.1 s (hours), and so do
    thousands of cheap patterns against tens of thousands of names."""

    def __init__(self, source: str = "", limit: int = MAX_TIMEOUTS, seconds: Optional[float] = None):
        self.source = source
        self.limit = limit
        self.timeouts = 0
        self.seconds_limit = total_seconds() if seconds is None else seconds
        self.seconds = 0.0
        self.said = False  # whether the warning that every pattern is set aside was given

    @property
    def spent(self) -> bool:
        return self.timeouts >= self.limit or self.seconds >= self.seconds_limit

    def why(self) -> str:
        if self.timeouts >= self.limit:
            return f"its patterns took too long {self.timeouts} times"
        return (f"matching its patterns took more than {self.seconds_limit:g} s in all "
                "(SMDEBUG_RUN_REGEX_TOTAL sets the limit)")


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
        #: name -> whether one of the patterns still in use matches it
        self._answers: Dict[str, bool] = {}
        self._timeout = timeout()

    def _remember(self, name: str, answer: bool) -> None:
        if len(self._answers) < MAX_ANSWERS:  # (memory: a run of millions of names is matched, not kept)
            self._answers[name] = answer

    @property
    def in_use(self) -> bool:
        """Whether any pattern is still matched (all may have been set aside)."""
        return bool(self._live) and not self.budget.spent

    def search(self, name: str) -> bool:
        if not self._live:
            return False
        if self.budget.spent:
            self._refuse_all()
            return False
        known = self._answers.get(name)
        if known is not None:  # (asked at every step by readers and rules: each name costs once)
            return known
        limit = self._timeout
        started = time.monotonic()
        try:
            for i, (pattern, compiled) in enumerate(self._live):
                try:
                    match = compiled.fullmatch if self._whole else compiled.search
                    if match(name, timeout=limit) is not None:
                        self._remember(name, True)
                        return True
                except TimeoutError:
                    self.budget.timeouts += 1
                    self._refuse(i, pattern, name, limit)
                    return self.search(name)  # (the remaining patterns)
            self._remember(name, False)
            return False
        finally:
            self.budget.seconds += time.monotonic() - started

    def _refuse(self, i: int, pattern: str, name: str, limit: float) -> None:
        del self._live[i]
        self._answers.clear()  # (answers given with the pattern no longer hold)
        self.refused.append(pattern)
        logger.warning(
            "smdebug: the pattern %r of %s took more than %gs to match the name %r (catastrophic "
            "backtracking?); it is not used: a collection keeps its explicit tensor names and other "
            "patterns (SMDEBUG_RUN_REGEX_TIMEOUT sets the limit)", pattern[:200], self.owner or "a collection",
            limit, name[:80])

    def _refuse_all(self) -> None:
        if self._live:
            self.refused += [p for p, _ in self._live]
            if not self.budget.said:  # (one warning per source, not one per collection of it)
                self.budget.said = True
                logger.warning("smdebug: the patterns of %s still in use are not used from now on: %s",
                               self.budget.source or "this run", self.budget.why())
            self._live = []
            self._answers.clear()


def compile_bounded(pattern: str, what: str = "--regex", whole: bool = False) -> BoundedPatterns:
    """One pattern (e.g. a CLI option) matched in bounded time (``whole``: the whole name must match);
    PatternError if invalid."""
    return BoundedPatterns([pattern], what, whole=whole)
