"""Context managers that control a trial's implicit refresh."""

from contextlib import contextmanager


def _as_list(trials):
    return trials if isinstance(trials, (list, tuple)) else [trials]


@contextmanager
def no_refresh(trials):
    """Inside the block the trial(s) do not look for new steps (what rules use while evaluating)."""
    trials = _as_list(trials)
    previous = [t.dynamic_refresh for t in trials]
    for t in trials:
        t.dynamic_refresh = False
    try:
        yield trials
    finally:
        for t, p in zip(trials, previous):
            t.dynamic_refresh = p


@contextmanager
def refresh(trials):
    """Inside the block the trial(s) refresh implicitly. Restores the previous setting afterwards
    (the original left refresh disabled after the block)."""
    trials = _as_list(trials)
    previous = [t.dynamic_refresh for t in trials]
    for t in trials:
        t.dynamic_refresh = True
    try:
        yield trials
    finally:
        for t, p in zip(trials, previous):
            t.dynamic_refresh = p
