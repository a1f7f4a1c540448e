"""Tensor names of one run that differ only in how their characters are encoded.

``"caf\\u00e9"`` (é as one character) and ``"cafe\\u0301"`` (e, then a combining accent) are different
names to smdebug, Python and the file format, but Unicode says they are the same text (canonically
equivalent: the same NFC form) and a terminal or a web page draws them alike, so ``smdebug ls`` and the report
showed two tensors under one name, and a hostile run could pass one off as the other. So are ``"\\u212aernel"``
(KELVIN SIGN) and ``"Kernel"``. Escaping every combining mark would garble the names of scripts that need them;
instead a trial says once, in a warning, which names print alike, each spelt with escapes (``ascii()``) so the
two can be told apart and asked for by their exact spelling.

Names that differ by letters of other scripts drawn like Latin ones (Cyrillic ``а`` for Latin ``a``, Greek
``Ο`` for ``O``: ``"\u0430ct"`` and ``"act"``) print alike too and are said the same way. Only the letters
Unicode's confusables data gives as the same glyph as a Latin letter in common fonts are folded (a short table,
:data:`_LIKE_LATIN`), so names of those scripts that merely share some letters with a Latin name are left
alone unless every letter matches.
"""

from __future__ import annotations

import unicodedata
from typing import Dict, Sequence, Set

from smdebug.core.logger import get_logger

#: pairs named, one warning each, per trial; then one line says more were found
NAMED = 5

#: Cyrillic and Greek letters drawn as a Latin letter (from Unicode's confusables, the unambiguous ones only)
_LIKE_LATIN = str.maketrans(
    "\u0430\u0435\u043e\u0440\u0441\u0443\u0445\u0456\u0458\u0455\u0501\u051b\u051d\u04bb\u04cf"
    "\u0410\u0412\u0415\u041a\u041c\u041d\u041e\u0420\u0421\u0422\u0425\u0423\u0406\u0408\u0405"
    "\u051a\u051c"
    "\u0391\u0392\u0395\u0396\u0397\u0399\u039a\u039c\u039d\u039f\u03a1\u03a4\u03a5\u03a7\u03bf",
    "aeopcyxijsdqwhl"
    "ABEKMHOPCTXYIJS"
    "QW"
    "ABEZHIKMNOPTYXo")


def lookalike_form(name: str) -> str:
    """The spelling ``name`` is drawn as: its NFC form with the letters of :data:`_LIKE_LATIN` made Latin."""
    return unicodedata.normalize("NFC", name).translate(_LIKE_LATIN)



class LookalikeNames:
    """Fed the names a trial learns, file by file; warns of new names equivalent to one seen before."""

    def __init__(self, where: str):
        self.where = where
        self.found = 0
        # NFC form -> the first name seen with it, for names that are not ASCII or whose NFC form is not their
        # own (an ASCII name is its own NFC form, so a run of ASCII names costs no entry and no normalising)
        self._first: Dict[str, str] = {}
        self._pairs: Set[frozenset] = set()

    def add(self, names: Sequence[str], known) -> None:
        """``names``: those of one index file; ``known``: the names the trial had before it (a set)."""
        in_file = None  # (the file's names as a set, made only when a name's NFC spelling must be looked up)
        for name in names:
            if name.isascii():
                # An ASCII name is its own NFC form: it is only looked up, and only once a non-ASCII name was
                # seen (in most runs none is: then nothing is normalised or kept at all).
                if self._first:
                    first = self._first.get(name)
                    if first is not None and first != name:
                        self._warn(first, name)
                continue
            if name in known:
                continue
            form = lookalike_form(name)
            first = self._first.setdefault(form, name)
            if first != name:
                self._warn(first, name)
            elif form != name:
                if in_file is None:
                    in_file = set(names)
                if form in known or form in in_file:
                    self._warn(form, name)  # (its NFC spelling, seen before or in the same file)

    def _warn(self, first: str, second: str) -> None:
        pair = frozenset((first, second))
        if pair in self._pairs:
            return  # (found from either side when both came in one index file)
        self._pairs.add(pair)
        self.found += 1
        if self.found <= NAMED:
            why = ("the same text to Unicode, encoded differently"
                   if unicodedata.normalize("NFC", first) == unicodedata.normalize("NFC", second)
                   else "letters of another script drawn as Latin ones")
            get_logger().warning(
                "smdebug: %s: tensor names %s and %s are different names that print alike (%s); ask for each "
                "by its exact spelling (smdebug ls --json lists both)",
                self.where, ascii(first)[:300], ascii(second)[:300], why)
        elif self.found == NAMED + 1:
            get_logger().warning("smdebug: %s: more tensor names that print alike; past the first %d, without "
                                 "a warning each", self.where, NAMED)
