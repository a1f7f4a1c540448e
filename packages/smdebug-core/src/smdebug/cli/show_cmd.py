"""Print a tensor's value at a step, or a summary of it at every saved step.

  smdebug show /tmp/run gradient/fc1.weight --step 40         # the value (numpy printing), per worker
  smdebug show /tmp/run gradient/fc1.weight                   # min/max/mean/std/l2 at every step
  smdebug show /tmp/run loss --mode eval                      # scalars: the value at every EVAL step
  smdebug show /tmp/run weights/fc1.weight --reduction l2 [--abs]   # stored if the hook saved it, else computed
  smdebug show /tmp/run loss --json

--step is a global step, or a step of --mode when that is given. Without --worker every worker that
saved the step is shown. Large arrays are shortened the way numpy prints them (--full prints all).
In --json output arrays are nested lists and non-finite numbers are the strings "nan", "inf", "-inf".
Exit status: 0, 1 (no such tensor, step or worker in the run), 2 (bad arguments, unreadable run).
"""

from __future__ import annotations

import argparse
import sys

from smdebug.cli import _common as c
from smdebug.core.names import listed
from smdebug.cli._series import REDUCTIONS

STATS = ("min", "max", "mean", "std", "l2")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    c.add_trial_argument(parser)
    parser.add_argument("tensor", metavar="TENSOR", help="tensor name (see `smdebug ls`)")
    parser.add_argument("--step", type=int, default=None, metavar="N",
                        help="the step to print (global, or of --mode); default: a summary of every step")
    c.add_mode_argument(parser, "train, eval, predict or global: only that mode's steps; --step is a step of it")
    parser.add_argument("--worker", metavar="NAME", help="only this worker (default: every worker that saved it)")
    parser.add_argument("--reduction", choices=REDUCTIONS, metavar="NAME",
                        help=f"show this reduction instead of the value ({', '.join(REDUCTIONS)})")
    parser.add_argument("--abs", action="store_true", help="with --reduction: of the absolute values")
    parser.add_argument("--last", type=int, default=None, metavar="N", help="without --step: only the last N steps")
    parser.add_argument("--full", action="store_true", help="print whole arrays, however large")
    parser.add_argument("--json", action="store_true", help="print a JSON document")
    c.add_progress_arguments(parser)


# --------------------------------------------------------------------------------------------------
def _stored_reductions(tensor, g, worker) -> dict:
    """{"l2": value, "abs_min": value, ...} of the reductions the hook saved at this step."""
    from smdebug.cli._series import _scalar

    try:
        stored = tensor.reduction_values(g, worker=worker)
    except Exception:  # noqa: BLE001 - nothing stored / unreadable: nothing to show
        return {}
    return {("abs_" if is_abs else "") + op: _scalar(v) for (op, is_abs), v in sorted(stored.items())}


def _reduction_row(tensor, g, worker, reduction, is_abs) -> dict:
    from smdebug.cli._series import _scalar

    try:
        stored = (reduction, is_abs) in tensor.reduction_values(g, worker=worker)
    except Exception:  # noqa: BLE001
        stored = False
    value = tensor.reduction_value(g, reduction, worker=worker, abs=is_abs)
    return {"value": _scalar(value), "stored": stored}


def _stats(arr) -> dict:
    import numpy as np

    from smdebug.core.reductions import compute_reduction

    out = {}
    if arr.dtype.kind not in "biufc" or arr.size == 0:
        return out
    with np.errstate(all="ignore"):
        for op in STATS:
            try:
                out[op] = float(np.real(compute_reduction(arr, op)))
            except (ValueError, TypeError):
                continue
    if arr.dtype.kind in "fc":
        out["nonfinite"] = int(arr.size - np.count_nonzero(np.isfinite(arr)))
    return out


def _value_row(tensor, g, worker, full_value: bool) -> dict:
    import numpy as np

    from smdebug.exceptions import TensorUnavailableForStep

    try:
        arr = np.asarray(tensor.value(g, worker=worker))
    except TensorUnavailableForStep as e:
        if not getattr(e, "has_reductions", False):
            raise
        return {"value": None, "only_reductions": True, "reductions": _stored_reductions(tensor, g, worker)}
    row = {"shape": list(arr.shape), "dtype": str(arr.dtype)}
    if full_value:
        row["value"] = arr
        reds = _stored_reductions(tensor, g, worker)
        if reds:
            row["reductions"] = reds
    elif arr.size == 1:
        row["value"] = arr.reshape(-1)[0].item()
    else:
        row["stats"] = _stats(arr)
    return row


def collect(trial, name: str, *, step=None, mode=None, worker=None, reduction=None, is_abs=False,
            last=None, progress=None) -> dict:
    from smdebug.cli._series import tensor_points

    if not trial.has_tensor(name):
        raise c.CliError(f"no tensor {name!r} in {trial.path}{c.suggest(name, trial.tensor_names())}",
                         c.EXIT_NOT_FOUND)
    tensor = trial.tensor(name)
    points = tensor_points(trial, name, mode)
    if step is not None:
        if mode is None:
            chosen = [p for p in points if p[0] == step]
        else:
            chosen = [p for p in points if p[2] == step]
        if not chosen:
            where = f"{mode.name} step {step}" if mode is not None else f"step {step}"
            saved = c.compact_steps([p[2] if mode is not None else p[0] for p in points])
            raise c.CliError(f"{name} was not saved at {where} (saved at: {saved})", c.EXIT_NOT_FOUND)
        points = chosen
    elif last:
        points = points[-last:]
    if worker is not None and worker not in trial.workers():
        raise c.CliError(f"no worker {worker!r} in the run (workers: {listed(trial.workers())})", c.EXIT_NOT_FOUND)

    plan = []
    for g, m, ms in points:
        workers = tensor.workers(g)
        if worker is not None:
            if worker not in workers:
                if step is not None:
                    raise c.CliError(f"worker {worker} did not save {name} at step {g} (saved by: {listed(workers)})",
                                     c.EXIT_NOT_FOUND)
                continue
            workers = [worker]
        plan += [(g, m, ms, w) for w in workers]

    rows = []
    for g, m, ms, w in c.progress(plan, total=len(plan), desc=f"reading {name}", enabled=progress):
        row = {"step": g, "mode": m.name, "mode_step": ms, "worker": w}
        if reduction:
            row.update(_reduction_row(tensor, g, w, reduction, is_abs))
        else:
            row.update(_value_row(tensor, g, w, full_value=step is not None))
        rows.append(row)
    return {
        "trial": trial.name,
        "path": c.display_path(trial),
        "tensor": name,
        "mode": mode.name if mode is not None else None,
        "step": step,
        "reduction": reduction,
        "abs": bool(is_abs) if reduction else False,
        "rows": rows,
    }


# --------------------------------------------------------------------------------------------------
def _where(row: dict) -> str:
    if row["mode"] == "GLOBAL":
        return f"step {row['step']}"
    return f"step {row['step']} ({row['mode']} step {row['mode_step']})"


def _format_array(arr, full: bool) -> str:
    import shutil

    import numpy as np

    width = max(60, min(shutil.get_terminal_size((120, 24)).columns, 200))
    threshold = sys.maxsize if full else 200
    # (the elements of a string tensor are clipped as its elements are counted: one may be megabytes long)
    formatter = None if full else {"numpystr": lambda v: repr(c.clip_value_text(str(v)))}
    with np.printoptions(threshold=threshold, edgeitems=3, linewidth=width, precision=6, suppress=False,
                         formatter=formatter):
        return np.array2string(np.asarray(arr), separator=" ")


def render(doc: dict, full: bool = False) -> str:
    name, rows = c.one_line(doc["tensor"]), doc["rows"]  # (a name from the run may hold a newline)
    quantity = None
    if doc["reduction"]:
        quantity = f"{doc['reduction']}(|{name}|)" if doc["abs"] else f"{doc['reduction']}({name})"
    if not rows:
        return f"{name}: nothing saved" + (f" in mode {doc['mode']}" if doc["mode"] else "")
    out = []
    if doc["step"] is not None:
        for row in rows:
            head = c.one_line(f"{name}  {_where(row)}  {row['worker']}")
            if quantity:
                out.append(f"{head}\n{quantity} = {c.fmt_number(row['value'])}  "
                           f"({'stored by the hook' if row['stored'] else 'computed from the saved value'})")
            elif row.get("only_reductions"):
                reds = "  ".join(f"{k}={c.fmt_number(v)}" for k, v in row["reductions"].items())
                out.append(f"{head}\nonly reductions were saved: {reds or '(none readable)'}")
            else:
                text = f"{head}\nshape {tuple(row['shape'])}  dtype {row['dtype']}\n{_format_array(row['value'], full)}"
                if row.get("reductions"):
                    text += "\nstored reductions: " + "  ".join(f"{k}={c.fmt_number(v)}" for k, v in row["reductions"].items())
                out.append(text)
        return "\n\n".join(out)

    modes = sorted({r["mode"] for r in rows})
    workers = sorted({r["worker"] for r in rows})
    summary = f"{name}: {len({r['step'] for r in rows})} steps"
    summary += f" in {', '.join(modes)}" + (f", {len(workers)} workers" if len(workers) > 1 else "")
    shapes = {tuple(r["shape"]) for r in rows if "shape" in r}
    dtypes = {r["dtype"] for r in rows if "dtype" in r}
    if len(shapes) == 1 and not quantity:
        summary += f", shape {next(iter(shapes))}"
    if len(dtypes) == 1 and not quantity:
        summary += f", {next(iter(dtypes))}"
    out.append(summary)
    headers = ["STEP", "MODE", "MODE_STEP", "WORKER"]
    if quantity:
        headers += [quantity, "SOURCE"]
        body = [[r["step"], r["mode"], r["mode_step"], r["worker"], c.fmt_number(r["value"]),
                 "stored" if r["stored"] else "computed"] for r in rows]
    elif all("value" in r and not r.get("only_reductions") for r in rows):
        headers += ["VALUE"]
        body = [[r["step"], r["mode"], r["mode_step"], r["worker"], c.fmt_number(r["value"])] for r in rows]
    else:
        show_shape = len(shapes) > 1
        show_nonfinite = any(r.get("stats", {}).get("nonfinite") for r in rows)
        headers += (["SHAPE"] if show_shape else []) + [s.upper() for s in STATS] + (["NONFINITE"] if show_nonfinite else [])
        body = []
        for r in rows:
            line = [r["step"], r["mode"], r["mode_step"], r["worker"]]
            if show_shape:
                line.append(tuple(r["shape"]) if "shape" in r else "-")
            if "stats" in r:
                stats = r["stats"]
            elif r.get("only_reductions"):
                stats = r.get("reductions", {})
            else:  # a one-element value among larger ones
                stats = {s: r.get("value") for s in STATS}
            line += [c.fmt_number(stats[s]) if s in stats else "-" for s in STATS]
            if show_nonfinite:
                line.append(stats.get("nonfinite", 0))
            body.append(line)
    out.append(c.table(headers, body, align_right=(0, 2) + tuple(range(4, len(headers)))))
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    if args.abs and not args.reduction:
        raise c.CliError("--abs goes with --reduction")
    if args.last is not None and args.last <= 0:
        raise c.CliError("--last needs a positive number")
    trial = c.open_trial(args.trial, args.wait)
    from smdebug.exceptions import SMDebugError

    try:
        doc = collect(trial, args.tensor, step=args.step, mode=args.mode, worker=args.worker,
                      reduction=args.reduction, is_abs=args.abs, last=args.last, progress=args.progress)
    except c.CliError:
        raise
    except SMDebugError as e:
        raise c.CliError(str(e), c.EXIT_NOT_FOUND) from None
    if not doc["rows"]:
        where = f" in mode {args.mode.name}" if args.mode is not None else ""
        where += f" by {args.worker}" if args.worker else ""
        raise c.CliError(f"{args.tensor} has no saved step{where}", c.EXIT_NOT_FOUND)
    if args.json:
        c.print_json(doc)
    else:
        sys.stdout.write(render(doc, full=args.full) + "\n")
    return c.EXIT_OK
