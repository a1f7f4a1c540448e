"""Regular expressions that come from data, not from the user's code, matched in bounded time.

A run's collections file carries ``include_regex`` patterns, and anyone who can write into a run folder
can put a pattern there whose backtracking takes exponential time (``^(a+)+$`` against ``'a' * 40 + '!'``).
Python's ``re`` cannot be interrupted, so such patterns are matched with the ``regex`` package (the same
syntax as ``re``, lookarounds included, which our own default collections use and RE2 lacks) and its
``timeout``: a match taking longer than ``SMDEBUG_RUN_REGEX_TIMEOUT`` seconds (default 0.25) is abandoned,
and the pattern is refused from then on, with one warning naming it. Patterns of one file share a budget
of ``MAX_TIMEOUTS`` abandoned matches and of ``SMDEBUG_RUN_REGEX_TOTAL`` seconds of compiling and matching in all
(default 10; each name is matched once, its answer kept), after which all of them are refused: a file full
of slow patterns, or of thousands of patterns against tens of thousands of names, costs seconds, however
many names are matched. A refused pattern matches nothing; the collection keeps its explicit tensor names
and its other patterns.

Compiling is bounded too. The ``regex`` package builds one copy of a counted repeat's body per count when
it compiles (``a{1000}`` is 1,000 items; ``(?:(?:a{1000}){1000}){100}``, 27 characters, is 10^8 of them,
about 26 GB): a pattern whose counted repeats unroll to more than ``MAX_UNROLLED`` items is refused before
it is compiled (:func:`unrolled_size`), and the patterns of one source may unroll to
``MAX_UNROLLED_PER_SOURCE`` items in all, after which the rest are set aside with one warning.

Patterns the user passes in code are compiled with plain ``re`` (their own input, any length), but matched
against a run's names in bounded time (:func:`names_matching`): the names are the run's. The CLI's
``--regex`` options go through :func:`compile_bounded` too: what a script passes there may come from anywhere.
"""

from __future__ import annotations

import contextlib
import re
import time
import warnings
from typing import Dict, List, Optional, Sequence, Set

try:  # Python 3.11+: re's own parser (sre_parse is its deprecated alias there)
    import re._constants as _sre_constants
    import re._parser as _sre_parse
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _sre_constants
    import sre_parse as _sre_parse

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
#: items a pattern may unroll to when compiled (see unrolled_size). The regex package costs about 260 bytes
#: and 6 us per unrolled item (measured: ``a{100000}`` 22 MB, ``a{1000000}`` 260 MB and 0.5 s), so this is
#: at most about 3 MB per pattern. Patterns over tensor names count a few dozen: ``\d{1,3}`` is 3,
#: ``[a-z]{2,10}`` 10, ``(ab){3}`` 7, ``\w{1,1000}`` 1,000; a tensor name of 10,000 characters is already
#: absurd, so a repeat longer than that matches nothing real.
MAX_UNROLLED = 10_000
#: items the patterns of one source (a collections file, a hook configuration) may unroll to in all (about
#: 260 MB at worst): every pattern is kept compiled while the run is read, and a 64 MB collections file holds
#: hundreds of thousands of patterns just under MAX_UNROLLED. Thousands of ordinary patterns fit.
MAX_UNROLLED_PER_SOURCE = 1_000_000

_MAXREPEAT = _sre_constants.MAXREPEAT
#: the counted repeats of a parsed pattern (POSSESSIVE_REPEAT: Python 3.11+)
_REPEATS = tuple(getattr(_sre_constants, n) for n in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")
                 if hasattr(_sre_constants, n))
#: a ``{m}``, ``{m,}``, ``{,n}`` or ``{m,n}`` repeat, read from the text when re's parser cannot parse it
_COSTLY = (f"its counted repeats ({{n}}, {{m,n}}; nested ones multiply) would unroll to more than "
           f"{MAX_UNROLLED:,} items when compiled (memory)")
_COUNTED = re.compile(r"\{(\d*)(?:(,)(\d*))?\}")


def timeout() -> float:
    return env_float("SMDEBUG_RUN_REGEX_TIMEOUT", DEFAULT_TIMEOUT, minimum=0.001)


class PatternError(ValueError):
    """A pattern that cannot be used (invalid, too long)."""


class CostlyPatternError(PatternError):
    """A valid pattern refused because compiling it would cost too much memory (:func:`unrolled_size`): a
    caller may set it aside, as a pattern too slow to match, rather than treat it as invalid."""


def unrolled_size(pattern: str, limit: int = MAX_UNROLLED) -> int:
    """An upper bound of the items the ``regex`` package builds when it compiles ``pattern``: each item of
    the parsed pattern counts once per copy the counted repeats around it make (``(?:ab{3}){2}`` is
    2 x (1 + 3) + 1), so nested counts multiply and siblings add. A repeat counts its upper bound (``{m,n}``:
    n), an unbounded one its lower bound (``{m,}``: m; ``*`` and ``+`` count 1): the engine unrolls what it
    must match at least, and n is the safe side of what it may unroll. Counting stops past ``limit``
    (the answer is then only "more than limit").

    The pattern is parsed with re's own parser, which builds the tree with its counts and unrolls nothing.
    A pattern it does not parse (syntax of the regex package only, such as ``\\p{L}`` or ``(?V1)`` sets) is
    bounded from its text: its length times the product of every ``{...}`` count in it, since no item of it
    can be copied more often than all counts together, and it has no more items than characters."""
    try:
        # (re warns of syntax it may read differently one day, "Possible nested set": the regex package
        # reads it today, and this parse only counts, so the warning would be noise to the user)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = _sre_parse.parse(pattern)
    except (re.error, OverflowError, RecursionError, ValueError, TypeError, IndexError):
        return _unrolled_size_from_text(pattern, limit)
    total = 0
    todo = [(tree, 1)]  # (items, copies of them): a list, not recursion, as groups may nest thousands deep
    while todo:
        items, copies = todo.pop()
        for op, av in items:
            total += copies
            if total > limit:
                return total
            if op in _REPEATS:
                low, high, body = av
                count = low if high == _MAXREPEAT else high
                # (capped: the product of thousands of nested counts need not be computed exactly)
                todo.append((body, min(copies * max(count, 1), limit + 1)))
            elif op == _sre_constants.SUBPATTERN:
                todo.append((av[-1], copies))
            elif op == _sre_constants.BRANCH:
                todo.extend((branch, copies) for branch in av[1])
            elif op in (_sre_constants.ASSERT, _sre_constants.ASSERT_NOT):
                todo.append((av[1], copies))
            elif op == _sre_constants.GROUPREF_EXISTS:
                todo.extend((branch, copies) for branch in av[1:] if branch is not None)
            elif op == getattr(_sre_constants, "ATOMIC_GROUP", None):
                todo.append((av, copies))
    return total


def _unrolled_size_from_text(pattern: str, limit: int) -> int:
    product = max(len(pattern), 1)
    for m in _COUNTED.finditer(pattern):
        low, comma, high = m.groups()
        count = int(high) if comma and high else int(low or 0)  # ({m,}: m; {,n} and {m,n}: n)
        product *= max(count, 1)
        if product > limit:
            return product
    return product


def _check_pattern(pattern: str) -> int:
    """What :func:`compile_pattern` refuses before compiling (PatternError); else the pattern's
    :func:`unrolled_size`."""
    if not isinstance(pattern, str):
        raise PatternError(f"a pattern must be a string, got {pattern!r}")
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise PatternError(f"a pattern of {len(pattern)} characters is longer than {MAX_PATTERN_LENGTH}")
    size = unrolled_size(pattern)
    if size > MAX_UNROLLED:
        raise CostlyPatternError(f"regex {pattern[:200]!r} refused: {_COSTLY}")
    return size


def compile_pattern(pattern: str):
    """Compile one pattern with the ``regex`` package (``re``'s syntax); PatternError if it is not one.

    None, not compiled, if compiling it would cost too much memory (:func:`unrolled_size`): such a pattern is
    not invalid, only too costly, and the patterns of a file (a run's collections file, the hook's
    configuration) that cost too much are set aside by :class:`BoundedPatterns` with one warning, as the
    patterns too slow to match are; the file is still read. (A collection checks its patterns with this
    function before it keeps them: an error here would make the whole run unreadable.)"""
    try:
        _check_pattern(pattern)
    except CostlyPatternError:
        return None
    return _compile_checked(pattern)


def _compile_checked(pattern: str):
    """Compile a pattern :func:`_check_pattern` has let through."""
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
        #: the patterns of this source compiled so far, and the items they unroll to in all (memory)
        self.compiled: Set[str] = set()
        self.unrolled = 0
        self.said_costly = False  # whether the warning that patterns are set aside for memory was given

    @property
    def spent(self) -> bool:
        return self.timeouts >= self.limit or self.seconds >= self.seconds_limit

    @contextlib.contextmanager
    def timing(self):
        """Count the time of what runs inside against the seconds limit: compiling counts too (a collections
        file of 300,000 cheap patterns spent minutes compiling them, none of it counted)."""
        started = time.monotonic()
        try:
            yield
        finally:
            self.seconds += time.monotonic() - started

    def why(self) -> str:
        if self.timeouts >= self.limit:
            return f"its patterns took too long {self.timeouts} times"
        return (f"compiling and matching its patterns took more than {self.seconds_limit:g} s in all "
                "(SMDEBUG_RUN_REGEX_TOTAL sets the limit)")


class BoundedPatterns:
    """Some patterns, matched with ``search`` (anywhere in the name), each match in bounded time."""

    def __init__(self, patterns: Sequence[str], owner: str = "", budget: Optional[Budget] = None,
                 whole: bool = False):
        self.owner = owner
        # Patterns of a source with a budget (a file) that cost too much memory to compile are set aside with
        # a warning, and the file is read; one given alone (a CLI option, a rule's parameter) is refused with
        # CostlyPatternError, which says why to whoever passed it.
        self._set_aside_costly = budget is not None
        self.budget = budget or Budget(owner)
        #: patterns set aside (a match took too long, or the source's patterns unroll to too much in all)
        self.refused: List[str] = []
        self._live = []
        unused = []  # (patterns left once the source's budget is spent: never compiled)
        for p in patterns:
            if self.budget.spent:
                unused.append(p)
                continue
            with self.budget.timing():
                compiled = self._compile(p)
            if compiled is not None:
                self._live.append((p, compiled))
        self._whole = whole  # fullmatch instead of search
        #: name -> whether one of the patterns still in use matches it
        self._answers: Dict[str, bool] = {}
        self._timeout = timeout()
        if self.budget.spent:
            self._refuse_all(unused)

    def _compile(self, pattern: str):
        """The compiled pattern; PatternError if it is invalid; None if it is set aside for the memory it would
        take compiled: on its own (more than MAX_UNROLLED items), or with the patterns of its source already
        compiled (more than MAX_UNROLLED_PER_SOURCE items in all: each pattern stays compiled while the run is
        read, so their memory adds up)."""
        budget = self.budget
        try:
            size = _check_pattern(pattern)
        except CostlyPatternError:
            if not self._set_aside_costly:
                raise
            self._set_aside(pattern, _COSTLY)
            return None
        if pattern not in budget.compiled:  # (a collection compiles its patterns again after each change)
            if budget.unrolled + size > MAX_UNROLLED_PER_SOURCE:
                self._set_aside(pattern, (
                    f"with the other patterns of {budget.source or 'this run'}, compiled, counted repeats would "
                    f"unroll to more than {MAX_UNROLLED_PER_SOURCE:,} items in all (memory)"))
                return None
            budget.compiled.add(pattern)
            budget.unrolled += size
        return _compile_checked(pattern)

    def _set_aside(self, pattern: str, why: str) -> None:
        self.refused.append(pattern)
        if not self.budget.said_costly:  # (one warning per source: a file may hold thousands of such patterns)
            self.budget.said_costly = True
            logger.warning(
                "smdebug: the pattern %r of %s is not used: %s; a collection keeps its explicit tensor names and "
                "other patterns (`smdebug ls` lists every pattern set aside)", pattern[:200],
                self.owner or "a collection", why)

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

    def _refuse_all(self, unused: Sequence[str] = ()) -> None:
        if self._live or unused:
            self.refused += [p for p, _ in self._live] + list(unused)
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


class SlowPatternError(PatternError):
    """A pattern the user gave took too long to match names from a run."""


def names_matching(patterns: Sequence, names, what: str, whole: bool = False) -> Set[str]:
    """The ``names`` (from a run) that one of ``patterns`` (compiled with ``re`` by the caller: the user's
    own, in code) matches with ``search`` (``whole``: ``fullmatch``), each match in bounded time.

    The patterns are the user's, but the names are whatever the run's writer chose: ``^(\\w+\\s?)*$``, an
    ordinary pattern, backtracks for minutes on one crafted name, and ``re`` cannot be interrupted (a
    ``trial.tensor_names(regex=...)`` call hung). They are matched again with the ``regex`` package (``re``'s
    syntax) under SMDEBUG_RUN_REGEX_TIMEOUT per match and SMDEBUG_RUN_REGEX_TOTAL in all; past either,
    SlowPatternError names the pattern and the name, instead of an answer that silently left names out.
    Unlike a run's patterns they are not limited in length: a long alternation of names is a normal call."""
    import regex

    bounded = []
    for p in patterns:
        try:
            bounded.append((p.pattern, regex.compile(p.pattern, flags=p.flags & ~re.UNICODE | regex.VERSION0)))
        except (regex.error, RecursionError, OverflowError, ValueError, TypeError):
            bounded.append((p.pattern, None))  # (re took it, regex does not: matched with re, unbounded)
    limit, total = timeout(), total_seconds()
    started = time.monotonic()
    found: Set[str] = set()
    for name in names:
        for (pattern, compiled), plain in zip(bounded, patterns):
            try:
                if compiled is None:
                    hit = plain.fullmatch(name) if whole else plain.search(name)
                else:
                    hit = (compiled.fullmatch if whole else compiled.search)(name, timeout=limit)
            except TimeoutError:
                raise SlowPatternError(
                    f"{what}: the pattern {str(pattern)[:200]!r} took more than {limit:g} s to match the name "
                    f"{name[:80]!r} (catastrophic backtracking?); SMDEBUG_RUN_REGEX_TIMEOUT sets the limit") from None
            if hit is not None:
                found.add(name)
                break
        if time.monotonic() - started > total:
            raise SlowPatternError(f"{what}: matching the patterns took more than {total:g} s in all "
                                   "(SMDEBUG_RUN_REGEX_TOTAL sets the limit)")
    return found
