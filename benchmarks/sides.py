"""Which smdebug a benchmark side measures. Each side checks before it measures, and stops if it is wrong.

Our smdebug-core and the original smdebug 1.0.34 are both the import package ``smdebug``. Should the
original ever be installed into our environment (as happened once when its venv was built into the
bench session's instead of its own), ``import smdebug`` there is whichever comes first on the path, and
"ours" would silently measure the original. So:

* :func:`check_ours` (our process, and the child processes it starts with the same interpreter): the
  ``smdebug`` package comes from the smdebug-core distribution, and the original's ``smdebug``
  distribution is not installed beside it;
* :func:`check_original` (the scripts run in the original's venv): ``smdebug`` is the original 1.0.34,
  from that venv, and no smdebug-core is installed there.

This module imports only the standard library (it runs in both environments).
"""

from __future__ import annotations

import os
import sys
from importlib import metadata

ORIGINAL_VERSION = "1.0.34"


class WrongSmdebug(RuntimeError):
    """A benchmark side would measure the other smdebug."""


def _installed(dist: str):
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _inside(path: str, folder: str) -> bool:
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return os.path.commonpath([path, folder]) == folder


def check_ours() -> str:
    """Raise :class:`WrongSmdebug` unless ``import smdebug`` is our smdebug-core; returns what it is."""
    original = _installed("smdebug")
    if original is not None:
        raise WrongSmdebug(
            f"the original smdebug {original} is installed in this environment ({sys.prefix}) beside ours: "
            "`import smdebug` may be either, so 'ours' could measure the original. Remove it (for the nox "
            "session: rm -rf .nox/bench, then nox -s bench) and run again."
        )
    ours = _installed("smdebug-core")
    if ours is None:
        raise WrongSmdebug(f"smdebug-core is not installed in this environment ({sys.prefix})")
    import smdebug

    if getattr(smdebug, "__version__", None) != ours:
        raise WrongSmdebug(f"`import smdebug` gives version {getattr(smdebug, '__version__', '?')} from "
                           f"{smdebug.__file__}, not smdebug-core {ours}")
    return f"smdebug-core {ours} ({os.path.dirname(smdebug.__file__)})"


def check_original() -> str:
    """Raise :class:`WrongSmdebug` unless ``import smdebug`` is the original 1.0.34 of this venv."""
    if _installed("smdebug-core") is not None:
        raise WrongSmdebug(f"smdebug-core is installed in the original's environment ({sys.prefix})")
    import smdebug

    version = getattr(smdebug, "__version__", None)
    if version != ORIGINAL_VERSION or not _inside(smdebug.__file__, sys.prefix):
        raise WrongSmdebug(f"`import smdebug` gives version {version} from {smdebug.__file__}, not the original "
                           f"{ORIGINAL_VERSION} of {sys.prefix}")
    return f"smdebug {version} ({os.path.dirname(smdebug.__file__)})"
