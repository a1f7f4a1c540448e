"""Summarise a run: steps per mode, workers, collections, tensors and the steps they were saved at.

  smdebug ls /tmp/run
  smdebug ls s3://bucket/prefix --json
  smdebug ls /tmp/run --collection gradients

Saved steps are written as compact ranges: 0-90/10 is 0, 10, ..., 90; 0-4 is every step from 0 to 4;
ranges are separated by commas. Steps are mode steps per mode (TRAIN, EVAL, PREDICT) and global
steps for data saved in GLOBAL mode. Only the run's index is read, never a tensor value, so this is
quick even on long runs. Exit status: 0, 1 (no tensor matches the filter), 2 (unreadable run).
"""

from __future__ import annotations

import argparse
import sys

from smdebug.cli import _common as c


def add_arguments(parser: argparse.ArgumentParser) -> None:
    c.add_trial_argument(parser)
    parser.add_argument("--json", action="store_true", help="print a JSON document (with every saved step)")
    filters = parser.add_mutually_exclusive_group()
    filters.add_argument("--collection", metavar="NAME", help="only the tensors of this collection")
    filters.add_argument("--regex", metavar="REGEX", help="only tensors whose name matches (re.search)")
    parser.add_argument("--no-tensors", action="store_true", help="leave out the list of tensors")


MODE_ORDER = ("TRAIN", "EVAL", "PREDICT", "GLOBAL")


def _steps_by_mode(trial, global_steps):
    """{mode name: [mode steps]} for a list of global steps."""
    from smdebug.core.modes import ModeKeys

    out = {}
    for g in global_steps:
        m, ms = trial.mode_modestep(g)
        if m is None:
            m, ms = ModeKeys.GLOBAL, g
        out.setdefault(m.name, []).append(ms)
    # (a mode step once, however many global steps' files claim it: the trial resolves it to one)
    return {m: sorted(set(out[m])) for m in MODE_ORDER if m in out}


def _summary(steps):
    return {
        "count": len(steps),
        "first": steps[0] if steps else None,
        "last": steps[-1] if steps else None,
        "ranges": c.compact_steps(steps),
        "steps": list(steps),
    }


def collect(trial, collection=None, regex=None, tensors=True) -> dict:
    """Everything ``smdebug ls`` shows, as plain data (no tensor value is read)."""
    from smdebug.core.run_regex import PatternError, compile_bounded

    global_steps = trial.steps()
    incomplete = len(trial.steps(show_incomplete_steps=True)) - len(global_steps)
    by_mode = _steps_by_mode(trial, global_steps)
    names = trial.tensor_names()
    colls = trial.collections()
    coll_names = sorted(colls)
    members = {cn: set(colls[cn].members(names)) for cn in coll_names}
    membership = {n: [cn for cn in coll_names if n in members[cn]] for n in names}

    shown = names
    if collection is not None:
        if collection not in colls:
            raise c.no_collection_error(collection, trial)
        shown = [n for n in names if collection in membership[n]]
    elif regex is not None:
        try:
            rx = compile_bounded(regex)  # matched in bounded time (a script may pass any pattern)
        except PatternError as e:
            raise c.CliError(str(e)) from None
        shown = [n for n in names if rx.search(n)]
        if not shown:
            raise c.CliError(f"no tensor matches {regex!r}", c.EXIT_NOT_FOUND)

    tensor_docs = []
    if tensors:
        for n in shown:
            steps = _steps_by_mode(trial, trial.tensor(n).steps())
            tensor_docs.append({"name": n, "collections": membership[n],
                                "modes": {m: _summary(s) for m, s in steps.items()}})
    return {
        "trial": trial.name,
        "path": c.display_path(trial),
        "state": c.run_state(trial),
        "finished": bool(trial.loaded_all_steps),
        "workers": trial.workers(),
        "num_workers": trial.num_workers,
        "workers_note": getattr(trial, "missing_workers_note", None),
        # (a hook that stopped saving, or lost steps, said so in the run: the run holds less than training saved)
        "hook_failures": trial.hook_failures(),
        "global_steps": _summary(global_steps),
        "incomplete_steps": incomplete,
        "modes": {m: _summary(s) for m, s in by_mode.items()},
        "collections": [
            {"name": cn, "tensors": sum(1 for n in names if cn in membership[n]),
             "include_regex": colls[cn].include_regex, "refused_regex": colls[cn].refused_regex}
            for cn in coll_names
        ],
        "tensor_count": len(names),
        "tensors": tensor_docs,
    }


def render(doc: dict) -> str:
    # (the lines that hold names from the run, a table's cells too, are each made one line: c.one_line)
    out = [c.one_line(f"Run          {doc['path']}  ({doc['state']})")]
    workers = doc["workers"]
    shown_workers = ", ".join(workers[:8]) + (f", ... ({len(workers) - 8} more)" if len(workers) > 8 else "")
    out.append(c.one_line(f"Workers      {doc['num_workers']}: {shown_workers or '-'}"))
    if doc.get("workers_note"):
        out.append(c.one_line(f"  note: {doc['workers_note']}"))
    for note in doc.get("hook_failures") or ():
        out.append(c.one_line(f"  warning: {note}"))
    g = doc["global_steps"]
    span = f"{g['first']}-{g['last']}" if g["count"] else "none"
    extra = f", {doc['incomplete_steps']} more not complete yet" if doc["incomplete_steps"] else ""
    out.append(f"Global steps {g['count']} ({span}{extra})")
    out.append("")
    out.append("Steps per mode:")
    rows = [(m, s["count"], s["first"], s["last"], s["ranges"]) for m, s in doc["modes"].items()]
    out.append(c.table(("MODE", "STEPS", "FIRST", "LAST", "SAVED"), rows, align_right=(1, 2, 3)) if rows else "  (none)")
    out.append("")
    out.append(f"Collections ({len(doc['collections'])}):")
    # (a hook defines a collection per kind of layer it could meet: a small PyTorch run has 22, 12 of them
    # empty; those are named on one line, so the table shows what the run holds; --json lists them all)
    rows = [(col["name"], col["tensors"]) for col in doc["collections"] if col["tensors"]]
    empty = [col["name"] for col in doc["collections"] if not col["tensors"]]
    if rows:
        out.append(c.table(("NAME", "TENSORS"), rows, align_right=(1,)))
    if empty:
        out.append(c.one_line(f"  {'holding no tensor' if rows else 'none holds a tensor'}: {_names_line(empty)}"))
    if not doc["collections"]:
        out.append("  (none)")
    for col in doc["collections"]:
        refused = col.get("refused_regex")
        if refused:  # (the first few: a file of 300,000 patterns made a 3 MB line; --json lists them all)
            more = f" and {len(refused) - 5:,} more" if len(refused) > 5 else ""
            out.append(c.one_line(f"  note: {col['name']}: include_regex {', '.join(repr(r[:200]) for r in refused[:5])}{more} "
                       "not used (too slow to match, or too costly to compile)"))
    if doc["tensors"] or doc["tensor_count"] == 0:
        out.append("")
        modes = [m for m in MODE_ORDER if any(m in t["modes"] for t in doc["tensors"])]
        heading = f"Tensors ({len(doc['tensors'])}"
        heading += f" of {doc['tensor_count']}):" if len(doc["tensors"]) != doc["tensor_count"] else "):"
        out.append(heading)
        if doc["tensors"]:
            headers = ["NAME"] + [f"{m} STEPS" for m in modes]
            rows = [[t["name"]] + [t["modes"][m]["ranges"] if m in t["modes"] else "-" for m in modes]
                    for t in doc["tensors"]]
            out.append(c.table(headers, rows))
        else:
            out.append("  (none)")
    return "\n".join(out)


def _names_line(names, limit: int = 40) -> str:
    """Names joined on one line, the first ``limit`` of them (a run may define thousands)."""
    more = f", ... ({len(names) - limit:,} more)" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def run(args: argparse.Namespace) -> int:
    trial = c.open_trial(args.trial, args.wait)
    doc = collect(trial, collection=args.collection, regex=args.regex, tensors=not args.no_tensors)
    if args.json:
        c.print_json(doc)
    else:
        sys.stdout.write(render(doc) + "\n")
    return c.EXIT_OK
