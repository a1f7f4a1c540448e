"""The names of the statistics a model keeps of its input: the one list that the hooks (which buffers to save)
and the rules (which saved tensors pair into a mean and a spread) both read.

BatchNorm's ``running_mean``/``running_var``, Keras's ``moving_mean``/``moving_variance``, and the buffers a model
registers to standardise its own input in its forward (``self.mu``, ``self.sd``, ``input_mean``...). A word
counts only as a whole part of a name (after a ``.``, ``_`` or ``/``, or at its start), in any case:
``upscale`` is no ``scale``.
"""

from __future__ import annotations

import re
from typing import Optional, Tuple

#: the last words of a mean, a variance and a standard deviation
MEAN_WORDS = ("mean", "mu", "loc", "center", "centre", "shift", "offset")
VARIANCE_WORDS = ("var", "variance")
STD_WORDS = ("std", "sd", "sigma", "scale")

MEAN, VARIANCE, STD = "mean", "variance", "std"


def _pattern(words) -> "re.Pattern[str]":
    # (the prefix is what a mean and its spread share: "bn1.", "Net.input_"; the running_/moving_ of the
    # normalisation layers is not part of it)
    return re.compile(rf"(?i)^(?P<prefix>(?:.*?[._/])?)(?:moving_|running_)?(?:{'|'.join(words)})$")


_KINDS = ((MEAN, _pattern(MEAN_WORDS)), (VARIANCE, _pattern(VARIANCE_WORDS)), (STD, _pattern(STD_WORDS)))


def statistic_kind(name: str) -> Optional[Tuple[str, str]]:
    """(:data:`MEAN`, :data:`VARIANCE` or :data:`STD`, the prefix it shares with its pair) when ``name`` ends in
    one of the words; None otherwise."""
    for kind, pattern in _KINDS:
        m = pattern.match(name)
        if m:
            return kind, m.group("prefix")
    return None
