"""A run as one long table: a row per (tensor, step, worker), read in bulk.

:func:`long_table` is what ``Trial.to_dataframe`` and ``smdebug report`` read runs with. It walks the
run step by step rather than tensor by tensor: every index file (one step of one worker) is parsed
once, and the records it needs are fetched with one request per file when they lie close together
(the records of a step are contiguous), in batches through ``storage.read_many`` (a few hundred ranged
GETs in parallel on S3). So asking for 20 tensors costs about as much I/O as asking for one.

Columns are plain lists/numpy arrays; pandas is needed only to make a DataFrame of them.
"""

from __future__ import annotations

import re
from typing import Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np

from smdebug.core import reader_arguments as argcheck
from smdebug.core.modes import ModeKeys
from smdebug.core.names import listed
from smdebug.core.reductions import compute_reduction
from smdebug.core.run_regex import PatternError, names_matching
from smdebug.core.skip_notes import warn_skipped
from smdebug.core.storage.errors import UnreadableFileError
from smdebug.exceptions import EventFileCorrupted, MissingEventFile, SMDebugTypeError, SMDebugValueError

#: records of one file closer together than this are fetched in one request
_GAP_BYTES = 256 << 10
#: index files whose records are fetched in one read_many call
_BATCH_FILES = 256

KEY_COLUMNS = ("tensor", "step", "mode", "mode_step", "worker")

#: the reductions smdebug.core.reductions computes (and a hook may store)
REDUCTIONS = ("min", "max", "mean", "std", "variance", "sum", "prod", "median", "l1", "l2")

StepsArg = Optional[Union[Iterable[int], range]]


def select_names(trial, tensors=None, collections=None) -> List[str]:
    """Tensor names for ``tensors`` (exact names, else regular expressions matching whole names) and
    ``collections`` (names of the run's collections); every tensor when both are None."""
    patterns = argcheck.name_list(tensors, "tensors", "tensor name or pattern") or []
    colls = argcheck.name_list(collections, "collections", "collection name") or []
    all_names = trial.tensor_names()
    if not patterns and not colls:
        return all_names
    chosen = set()
    known = set(all_names)
    for p in patterns:
        if p in known:
            chosen.add(p)
            continue
        try:
            rx = re.compile(p)
        except re.error as e:
            raise SMDebugValueError(f"{p!r} is neither a tensor of the run nor a valid regular expression ({e})") from None
        try:  # (each match bounded: the names are the run's, see names_matching)
            chosen.update(names_matching([rx], all_names, "to_dataframe(tensors=...)", whole=True))
        except PatternError as e:
            raise SMDebugValueError(str(e)) from None
    run_colls = trial.collections()
    for c in colls:
        coll = run_colls.get(c)
        if coll is None:
            raise SMDebugValueError(f"no collection {c!r} in the run (it has: {listed(sorted(run_colls))})")
        chosen.update(n for n in all_names if coll.matches(n))
    return sorted(chosen)


def _modes(modes) -> Optional[set]:
    if modes is None:
        return None
    if isinstance(modes, (str, ModeKeys)):
        items = [modes]
    elif not isinstance(modes, (bytes, bytearray, dict)) and argcheck.iterable(modes):
        items = list(modes)
    else:  # (an int was "not iterable" from here; a dict's keys were taken for modes)
        raise SMDebugTypeError(f"modes must be a mode (ModeKeys or its name) or a list of modes, got {modes!r} "
                               f"({type(modes).__name__})")
    return {ModeKeys.parse(m) if not isinstance(m, ModeKeys) else m for m in items}


def _reduction_specs(reductions: Sequence[str]) -> List[Tuple[str, str, bool]]:
    """``["l2", "abs_max"]`` -> ``[("l2", "l2", False), ("abs_max", "max", True)]`` (column, op, abs)."""
    specs = []
    for r in reductions:
        op, is_abs = (r[4:], True) if r.startswith("abs_") else (r, False)
        if op not in REDUCTIONS:
            raise SMDebugValueError(f"unknown reduction {r!r} (choose from {', '.join(REDUCTIONS)}, "
                                    "each optionally prefixed with abs_)")
        specs.append((r, op, is_abs))
    return specs


def long_table(trial, tensors=None, collections=None, steps: StepsArg = None, modes=None,
               workers=None, reductions: Optional[Sequence[str]] = None) -> Dict[str, object]:
    """The run's saved values as columns: tensor, step, mode, mode_step, worker, then ``value`` (or one
    column per reduction). See :meth:`smdebug.trials.trial.Trial.to_dataframe` for the arguments.

    Returned as a dict of column name -> list (tensor, mode, worker, and an object ``value`` column)
    or numpy array (step, mode_step, float columns), rows ordered by tensor, step, worker.
    """
    reductions = argcheck.name_list(reductions, "reductions", "reduction name")
    want_workers = argcheck.name_list(workers, "workers", "worker name")
    want_workers = set(want_workers) if want_workers is not None else None
    if steps is not None:  # (int() of each took "3" for step 3, 1.7 for step 1, and b"x" for step 120)
        steps = set(argcheck.step_list(steps, "steps"))
    want_modes = _modes(modes)
    names = select_names(trial, tensors, collections)
    specs = _reduction_specs(reductions) if reductions else None
    wanted = set(names)
    per_tensor: Dict[str, list] = {n: [] for n in names}
    plan = []  # (file, global step, mode, mode step, [names it holds that we want])
    for g in trial.steps():
        if steps is not None and g not in steps:
            continue
        mode, mode_step = trial.mode_modestep(g)
        mode = ModeKeys.GLOBAL if mode is None else mode
        if want_modes is not None and mode not in want_modes:
            continue
        for w, f in sorted(trial._files.get(g, {}).items()):
            if want_workers is not None and w not in want_workers:
                continue
            held = [n for n in trial._names_of(f) if n in wanted]
            if held:
                # (g, not f.step: workers that number their steps differently are read aligned by mode step)
                plan.append((f, g, mode, g if mode_step is None else mode_step, held))
    for start in range(0, len(plan), _BATCH_FILES):
        _read_batch(trial, plan[start:start + _BATCH_FILES], specs, per_tensor)
    return _columns(names, per_tensor, specs)


def _needs(f, name: str, specs) -> List[Tuple[str, Tuple[int, int]]]:
    """The records to fetch for one tensor of one file: [("raw" | column, (start, length))]."""
    raw = f.location(name)
    if specs is None:
        return [("raw", raw)] if raw is not None else []
    out, need_raw = [], False
    stored = f.reductions.get(name, {})
    for column, op, is_abs in specs:
        entry = stored.get((op, is_abs))
        if entry is not None and entry.location is not None:
            out.append((column, entry.location))
        elif raw is not None:
            need_raw = True
    if need_raw:
        out.append(("raw", raw))
    return out


def _groups(locations: List[Tuple[int, int]]) -> List[Tuple[int, int]]:
    """Merge sorted (start, length) ranges lying within _GAP_BYTES of each other into fetches."""
    out: List[List[int]] = []
    for start, length in sorted(locations):
        if out and start - out[-1][1] <= _GAP_BYTES:
            out[-1][1] = max(out[-1][1], start + length)
        else:
            out.append([start, start + length])
    return [(lo, hi - lo) for lo, hi in out]


def _read_batch(trial, batch, specs, per_tensor) -> None:
    jobs = []  # (file, global step, mode, mode_step, key, [(name, [(what, location)])])
    requests, owners = [], []  # one ranged read per group of nearby records
    for f, g, mode, mode_step, held in batch:
        needs = [(n, _needs(f, n, specs)) for n in held]
        needs = [(n, nd) for n, nd in needs if nd]
        if not needs:
            continue
        key = trial._event_path(f)
        locs = [loc for _, nd in needs for _, loc in nd]
        try:  # (an index may claim gigabytes of a sparse event file: the records' headers say first)
            for start, length in locs:
                trial._check_claimed_length(f, key, start, length)
        except (EventFileCorrupted, MissingEventFile) as e:
            if not getattr(trial, "skip_damaged", False):
                raise
            warn_skipped(trial, "Skipping damaged step %s of worker %s: %s", f.step, f.worker, e)
            continue
        except (FileNotFoundError, UnreadableFileError):
            pass  # (read record by record below, with the trial's own error handling)
        for lo, length in _groups(locs):
            requests.append((key, lo, length))
            owners.append(len(jobs))
        jobs.append((f, g, mode, mode_step, key, needs))
    if not jobs:
        return
    try:
        blobs = trial.storage.read_many(requests)
    except (FileNotFoundError, UnreadableFileError):
        blobs = None  # a file went missing or cannot be read: find out which, record by record, below
    spans: Dict[int, List[Tuple[int, object]]] = {}
    if blobs is not None:
        for (key, lo, _), owner, blob in zip(requests, owners, blobs):
            spans.setdefault(owner, []).append((lo, blob))
    for i, (f, g, mode, mode_step, key, needs) in enumerate(jobs):
        try:
            values = _decode_job(trial, f, key, needs, spans.get(i))
        except (EventFileCorrupted, MissingEventFile) as e:
            if not getattr(trial, "skip_damaged", False):
                raise
            warn_skipped(trial, "Skipping damaged step %s of worker %s: %s", f.step, f.worker, e)
            continue
        for name, got in values:
            row = _row(got, specs)
            if row is not None:
                per_tensor[name].append((g, mode.name, mode_step, f.worker, row))


def _slice(spans, key_path, start: int, length: int):
    for lo, blob in spans:
        if lo <= start and start + length <= lo + len(blob):
            return blob[start - lo:start - lo + length]
    raise EventFileCorrupted(
        f"Index points past the end of the event file (wants bytes {start}..{start + length})", key_path, None)


def _decode_job(trial, f, key, needs, spans):
    out = []
    for name, nd in needs:
        got = {}
        for what, (start, length) in nd:
            if spans is None:  # read_many failed: one record at a time, with the trial's own error handling
                got[what] = trial.read_record(f, name, (start, length))
                continue
            raw = _slice(spans, trial.storage.full_path(key), start, length)
            got[what] = trial._decode(f, name, raw, key, (start, length))
        out.append((name, got))
    return out


def _scalar_or_array(v):
    arr = np.asarray(v)
    if arr.size == 1:
        x = arr.reshape(-1)[0]
        if arr.dtype.kind == "c":
            return complex(x)
        if arr.dtype.kind in "biuf":
            return float(x)
        return x.item() if hasattr(x, "item") else x
    return arr


def _row(got: dict, specs):
    if specs is None:
        return _scalar_or_array(got["raw"]) if "raw" in got else None
    raw = got.get("raw")
    row = []
    any_value = False
    for column, op, is_abs in specs:
        if column in got:
            v = got[column]
        elif raw is not None:
            try:
                v = compute_reduction(np.asarray(raw), op, is_abs)
            except (ValueError, TypeError):  # empty or string tensors have no such reduction
                row.append(float("nan"))
                continue
        else:
            row.append(float("nan"))
            continue
        any_value = True
        arr = np.asarray(v)
        row.append(float(abs(arr.reshape(-1)[0])) if arr.dtype.kind == "c" else float(arr.reshape(-1)[0]))
    return row if any_value else None


def _columns(names, per_tensor, specs) -> Dict[str, object]:
    cols: Dict[str, list] = {c: [] for c in KEY_COLUMNS}
    data: List = []
    for n in names:
        rows = sorted(per_tensor[n], key=lambda r: (r[0], r[3]))
        cols["tensor"].extend([n] * len(rows))
        for step, mode, mode_step, worker, row in rows:
            cols["step"].append(step)
            cols["mode"].append(mode)
            cols["mode_step"].append(mode_step)
            cols["worker"].append(worker)
            data.append(row)
    out: Dict[str, object] = {
        "tensor": cols["tensor"],
        "step": np.asarray(cols["step"], dtype=np.int64),
        "mode": cols["mode"],
        "mode_step": np.asarray(cols["mode_step"], dtype=np.int64),
        "worker": cols["worker"],
    }
    if specs is None:
        if all(isinstance(v, float) for v in data):
            out["value"] = np.asarray(data, dtype=np.float64)
        else:
            column = np.empty(len(data), dtype=object)
            for i, v in enumerate(data):  # (a list of equal-shape arrays would be broadcast as 2-d)
                column[i] = v
            out["value"] = column
    else:
        matrix = np.asarray(data, dtype=np.float64).reshape(len(data), len(specs))
        for j, (column, _op, _abs) in enumerate(specs):
            out[column] = matrix[:, j]
    return out


def to_pandas(columns: Dict[str, object]):
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("to_dataframe needs pandas: pip install 'smdebug-core[analysis]'") from None
    return pd.DataFrame(columns)
