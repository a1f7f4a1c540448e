"""Handing work to a thread pool that may no longer take it.

Python refuses new work to every ``concurrent.futures`` pool once the interpreter has begun to exit (the
pools are shut down before the at-exit handlers run), and the at-exit close of a hook is exactly when the
last steps are written. Work refused then is done on the calling thread instead: slower, but nothing
queued is lost. (The checksum of each large tensor and the parts of an S3 upload raised "cannot schedule
new futures after interpreter shutdown" there, and the steps still queued were not saved.)
"""

from __future__ import annotations

import concurrent.futures
from typing import Callable, Iterable, List


def submit(pool: concurrent.futures.Executor, fn: Callable, *args) -> concurrent.futures.Future:
    """``pool.submit(fn, *args)``, or ``fn(*args)`` run here when the pool no longer takes work; either
    way a Future (done at once in the second case, holding the result or the exception)."""
    try:
        return pool.submit(fn, *args)
    except RuntimeError:  # shut down (the interpreter is exiting): ``fn`` was not started
        pass
    done: concurrent.futures.Future = concurrent.futures.Future()
    try:
        done.set_result(fn(*args))
    except BaseException as e:  # noqa: BLE001 - handed to the caller through the Future, as the pool would
        done.set_exception(e)
    return done


def map_results(pool: concurrent.futures.Executor, fn: Callable, items: Iterable) -> List:
    """``list(pool.map(fn, items))``, each item run here instead when the pool no longer takes work."""
    futures = [submit(pool, fn, item) for item in items]
    return [f.result() for f in futures]
