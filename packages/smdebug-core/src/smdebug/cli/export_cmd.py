"""Export a saved run into another tool's format (TensorBoard), after the fact.

  smdebug export tensorboard /tmp/run /tmp/tb                 # every tensor; then: tensorboard --logdir /tmp/tb
  smdebug export tensorboard /tmp/run /tmp/tb --collection losses --collection gradients --mode train
  smdebug export tensorboard s3://bucket/run s3://bucket/tb 'gradient/.*'

One event file per mode under DIR/<MODE>/, as the hook writes with export_tensorboard=True: single
values (losses, metrics) become scalars, larger numeric tensors histograms tagged <collection>/<tensor>,
steps saved as reductions only one scalar per reduction (<tensor>/<reduction>). DIR must hold no event
files yet (TensorBoard would show the same steps twice). Exit status: 0, 1 (no tensor or collection
matches, or nothing exportable), 2 (error).
"""

from __future__ import annotations

import argparse
import os

from smdebug.cli import _common as c
from smdebug.core.names import listed


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="export_format", metavar="FORMAT", required=True)
    tb = sub.add_parser("tensorboard", help="TensorBoard event files (scalars and histograms)",
                        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_trial_argument(tb)
    tb.add_argument("out_dir", metavar="DIR", help="where to write the event files (a directory or s3://bucket/prefix)")
    # (default=[]: without one argparse lists an optional nargs="*" positional among the required ones)
    tb.add_argument("tensors", nargs="*", default=[], metavar="TENSOR",
                    help="only these tensors: names, or regular expressions matching whole names (default: all)")
    tb.add_argument("--collection", action="append", default=[], metavar="NAME",
                    help="only the tensors of this collection (repeatable; with TENSOR: both)")
    c.add_mode_argument(tb, "only the steps of this mode (train, eval, predict, global)")
    tb.add_argument("--worker", metavar="NAME", help="export this worker's values (default: each step's first worker)")
    tb.add_argument("--json", action="store_true", help="print what was written as JSON")
    c.add_progress_arguments(tb)


def run(args: argparse.Namespace) -> int:
    from smdebug.analysis.tensorboard_export import ExportFailed, export_tensorboard
    from smdebug.exceptions import SMDebugValueError

    from smdebug.core.storage.base import is_s3_path

    if not args.out_dir.strip():  # (an unset variable: "" exported into the current directory)
        raise c.CliError("the output path is empty (an unset variable?): name the folder to export into")
    if not is_s3_path(args.out_dir) and os.path.exists(args.out_dir) and not os.path.isdir(args.out_dir):
        raise c.CliError(f"{args.out_dir} exists and is not a directory")
    trial = c.open_trial(args.trial, args.wait)
    names = None
    if args.tensors or args.collection:
        names = c.resolve_tensor_names(trial, args.tensors, args.collection)
    if args.worker is not None and args.worker not in trial.workers():
        raise c.CliError(f"no worker {args.worker!r} in the run (workers: {listed(trial.workers())})",
                         c.EXIT_NOT_FOUND)

    def bar(steps, total):
        return c.progress(steps, total=total, desc="exporting steps", enabled=args.progress)

    try:
        summary = export_tensorboard(trial, args.out_dir, names=names, mode=args.mode, worker=args.worker,
                                     progress=bar)
    except (SMDebugValueError, ExportFailed) as e:  # (ExportFailed says what it took back, or what is left)
        raise c.CliError(str(e)) from None
    except OSError as e:  # (the folder cannot be made: permissions, a file where a folder should be)
        raise c.CliError(f"cannot write {args.out_dir}: {e}") from None
    written = summary.scalars + summary.histograms + summary.reduction_scalars
    if args.json:
        c.print_json({"trial": trial.name, "path": c.display_path(trial), **summary.to_dict()})
    else:
        steps = ", ".join(f"{m} {len(s)}" for m, s in summary.steps_by_mode.items()) or "none"
        c.out(f"wrote {args.out_dir}: {summary.scalars} scalar(s), {summary.histograms} histogram(s), "
              f"{summary.reduction_scalars} reduction scalar(s) of {summary.tensors} tensor(s); steps: {steps}")
        for name, why in sorted(summary.skipped.items()):
            c.note(f"skipped {name}: {why}")
    if not written:
        raise c.CliError("nothing exportable: the selected tensors have no numeric values"
                         + (f" in mode {args.mode.name}" if args.mode is not None else ""), c.EXIT_NOT_FOUND)
    return c.EXIT_OK
