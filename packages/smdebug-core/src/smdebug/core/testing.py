"""Helpers for testing smdebug plugins, part of the plugin contract (docs/architecture.md): a third-party
framework plugin or rule pack uses them in its own tests, as smdebug's plugins do.

- :func:`capture_smdebug_log` (:class:`LogCapture`): what the smdebug logger says (it does not propagate to
  pytest's ``caplog``), e.g. to check that a hook reports a problem once and clearly.
- :func:`check_recommended_run`: what a run of ``Hook.recommended`` must hold (the steps, the framework the run
  names, tensors of each collection the recommended rules read).
- :data:`TAPERED_SAVED_STEPS`: the steps ``Hook.recommended`` (``SaveConfig.tapered()``) saves in runs of a
  few lengths, written out by hand for every framework's tests to check against.

The repository's own test infrastructure (a moto S3 server, a horovodrun launcher) is not shipped: it lives
in tests/support (``smdebug_test_support``).
"""

from __future__ import annotations

import contextlib
import logging
from typing import Iterable


class LogCapture(logging.Handler):
    """Everything the smdebug logger says while installed (it does not propagate to pytest's caplog)."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records: list = []

    def emit(self, record):
        self.records.append(record)

    @property
    def text(self) -> str:
        return "\n".join(r.getMessage() for r in self.records)


@contextlib.contextmanager
def capture_smdebug_log():
    """``with capture_smdebug_log() as log: ...; assert "..." in log.text`` -- debug level and up."""
    from smdebug.core.logger import get_logger

    logger = get_logger()
    capture = LogCapture()
    saved = logger.level
    logger.addHandler(capture)
    logger.setLevel(logging.DEBUG)
    try:
        yield capture
    finally:
        logger.removeHandler(capture)
        logger.setLevel(saved)


#: run length -> the steps SaveConfig.tapered() saves in it (what every framework's Hook.recommended must save)
TAPERED_SAVED_STEPS = {
    30: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 20],
    3000: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 20, 40, 80, 160, 320, 500, 1000, 1500, 2000, 2500],
}


def check_recommended_run(out_dir: str, framework: str, saved, collections: Iterable[str]):
    """Assert that the run in ``out_dir``, written by ``Hook.recommended``, saved its tensors at the steps
    ``saved`` (the tapered schedule; the curves of ``CURVE_COLLECTIONS``, losses and metrics, are saved at
    every step besides), says it was written by ``framework`` and has tensors of every one of ``collections``
    at the last of ``saved``. Returns the trial."""
    from smdebug.core.presets import CURVE_COLLECTIONS
    from smdebug.core.run_info import framework_of
    from smdebug.trials import create_trial

    trial = create_trial(out_dir)
    curves = set()
    for coll in CURVE_COLLECTIONS:
        if coll in trial.collections():
            curves |= set(trial.tensor_names(collection=coll))
    tapered = sorted({s for name in trial.tensor_names() if name not in curves for s in trial.tensor(name).steps()})
    assert tapered == list(saved), tapered
    assert set(trial.steps()) >= set(saved), trial.steps()
    assert framework_of(trial) == framework
    for coll in collections:
        assert trial.tensor_names(step=list(saved)[-1], collection=coll), f"nothing of {coll} saved"
    return trial
