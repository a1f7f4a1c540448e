"""Plot tensors over steps into an image file (PNG, SVG or PDF, from the file name), with matplotlib.

  smdebug plot /tmp/run loss -o loss.png                       # one line per mode (and per worker)
  smdebug plot /tmp/run 'gradient/.*' -o grads.png --logy      # a regex over whole tensor names
  smdebug plot /tmp/run --collection weights -o w.png --reduction max --abs --mode train
  smdebug plot /tmp/run loss accuracy -o curves.png --subplots
  smdebug plot /tmp/run loss -o - > loss.png                   # a PNG image to stdout

Single values (losses, metrics, scalars) are drawn as they are. A larger tensor is drawn as a
reduction: its l2 norm unless --reduction says otherwise; the legend says which ("l2(gradient/w)").
A reduction the hook saved is used as stored, otherwise it is computed from the saved value. The x axis
is the global step, or the step of --mode when one is given; EVAL lines are dashed. Needs matplotlib:
pip install 'smdebug-core[cli]'. Exit status: 0, 1 (nothing matched or nothing to draw), 2 (error).
"""

from __future__ import annotations

import argparse
import math
import os
import sys

from smdebug.cli import _common as c
from smdebug.core.names import listed
from smdebug.cli._series import REDUCTIONS, left_out_note


def _size(text: str):
    try:
        w, h = (float(v) for v in text.lower().split("x"))
        if not (w > 0 and h > 0 and math.isfinite(w) and math.isfinite(h)):  # (nan passes "<= 0")
            raise ValueError
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid size {text!r}: use WIDTHxHEIGHT in inches, e.g. 10x6") from None
    return w, h


def add_arguments(parser: argparse.ArgumentParser) -> None:
    c.add_trial_argument(parser)
    # (default=[]: without one argparse lists an optional nargs="*" positional among the required ones)
    parser.add_argument("tensors", nargs="*", default=[], metavar="TENSOR",
                        help="tensor names, or regular expressions matching whole names ('gradient/.*')")
    parser.add_argument("-o", "--output", required=True, metavar="FILE",
                        help="image to write (.png, .svg, .pdf); - writes a PNG image to stdout")
    parser.add_argument("--collection", action="append", default=[], metavar="NAME",
                        help="also plot every tensor of this collection (repeatable)")
    parser.add_argument("--reduction", choices=REDUCTIONS, metavar="NAME",
                        help=f"plot this reduction of every tensor ({', '.join(REDUCTIONS)}); "
                             "default: values of scalars, l2 norm of anything larger")
    parser.add_argument("--abs", action="store_true", help="with --reduction: of the absolute values")
    c.add_mode_argument(parser, "only this mode (train, eval, predict, global); x is then its step")
    parser.add_argument("--worker", metavar="NAME", help="only this worker (default: one line per worker)")
    parser.add_argument("--max-points", type=int, default=0, metavar="N",
                        help="read at most N steps per tensor, evenly spread (default: every saved step)")
    parser.add_argument("--subplots", action="store_true", help="one panel per tensor instead of one shared plot")
    parser.add_argument("--logy", action="store_true", help="logarithmic y axis")
    parser.add_argument("--title", help="figure title (default: the run's name)")
    parser.add_argument("--size", type=_size, default=(10.0, 6.0), metavar="WxH",
                        help="figure size in inches (default 10x6; with --subplots the height of each panel is 3)")
    parser.add_argument("--dpi", type=int, default=100, help="pixels per inch (default 100)")
    parser.add_argument("--json", action="store_true", help="print the plotted data as JSON on stdout")
    c.add_progress_arguments(parser)


def collect(trial, names, *, mode=None, reduction=None, is_abs=False, worker=None, max_points=None, progress=None):
    """{tensor: [Series]} for every name, reading with one progress bar over all of them."""
    from smdebug.cli._series import collect_series, count_points

    total = count_points(trial, names, mode, max_points, worker)
    bar = c.progress(range(total), total=total, desc="reading steps", enabled=progress)
    ticks = iter(bar)

    def tick(_n):
        next(ticks, None)

    out = {}
    for name in names:
        out[name] = collect_series(trial, name, mode=mode, reduction=reduction, abs=is_abs, worker=worker,
                                   max_points=max_points, tick=tick)
    for _ in ticks:  # finish (and close) the bar
        pass
    return out


def draw(by_tensor, output: str, *, title: str, x_label: str, subplots: bool, logy: bool, size, dpi: int) -> int:
    """Draw and save the chart; returns how many values were too large to draw (left out)."""
    from smdebug.cli._series import draw_axes, new_figure, plain_text

    names = [n for n, s in by_tensor.items() if s]
    width, height = size
    check_pixels(width, 3.0 * len(names) if subplots and len(names) > 1 else height, dpi)
    if subplots and len(names) > 1:
        fig = new_figure(width, 3.0 * len(names), dpi)
        axes = fig.subplots(len(names), 1, sharex=True, squeeze=False)[:, 0]
        left_out = 0
        for ax, name in zip(axes, names):
            series = by_tensor[name]
            left_out += draw_axes(ax, series, x_label=x_label if ax is axes[-1] else "",
                                  title=series[0].quantity, logy=logy, with_tensor=False)
    else:
        fig = new_figure(width, height, dpi)
        ax = fig.add_subplot()
        all_series = [s for n in names for s in by_tensor[n]]
        y_label = all_series[0].quantity if len({s.quantity for s in all_series}) == 1 else ""
        left_out = draw_axes(ax, all_series, x_label=x_label, y_label=y_label, logy=logy)
    fig.suptitle(plain_text(title))
    save_figure(fig, output, dpi)
    return left_out


#: the longest side of an image, in pixels (matplotlib's own limit is 2**23, where --dpi 100000 asked for a
#: canvas of terabytes and died of MemoryError)
MAX_SIDE_PIXELS = 1 << 15
#: the most pixels in all: 100 megapixels, 400 MB of RGBA canvas (327x327 inches at 100 dpi, each side
#: within the limit, took 4.3 GB and 71 s for one line)
MAX_PIXELS = 100_000_000
#: the fewest pixels on a side: a canvas of less than a pixel cannot be written, and a few pixels are no
#: picture (fonts of 1-pixel figures failed inside FreeType)
MIN_SIDE_PIXELS = 16


def check_pixels(width: float, height: float, dpi: int) -> None:
    """A CliError for a figure of more than MAX_SIDE_PIXELS on a side or MAX_PIXELS in all, or less than
    MIN_SIDE_PIXELS on a side, before any memory is spent on it."""
    w, h = width * dpi, height * dpi
    if max(w, h) > MAX_SIDE_PIXELS or w * h > MAX_PIXELS:
        raise c.CliError(f"the image would be {w:.0f}x{h:.0f} pixels; at most {MAX_SIDE_PIXELS} on a side and "
                         f"{MAX_PIXELS:,} in all (lower --size or --dpi)")
    if min(w, h) < MIN_SIDE_PIXELS:
        raise c.CliError(f"the image would be {w:.3g}x{h:.3g} pixels; at least {MIN_SIDE_PIXELS} on a side "
                         "(raise --size or --dpi)")


def check_format(output: str) -> None:
    """A CliError for an output whose extension matplotlib cannot write, before the run is read."""
    from matplotlib.figure import Figure

    if output == c.STDOUT:
        return  # (PNG)
    fmt = os.path.splitext(output)[1][1:].lower()
    supported = Figure().canvas.get_supported_filetypes()
    if fmt and fmt not in supported:
        raise c.CliError(f"cannot write {output!r}: .{fmt} is not an image format matplotlib writes "
                         f"(use .png, .svg or .pdf)")


def save_figure(fig, output: str, dpi: int) -> None:
    """Save to ``output`` without writing through a link planted there (rendered in memory, then written
    under a new temporary name and renamed into place). The format follows the file's extension."""
    import io

    from smdebug.core.storage.safe_fs import check_output_path, write_file_atomic

    if output == c.STDOUT:
        buf = io.BytesIO()
        fig.savefig(buf, dpi=dpi, format="png")
        c.write_stdout(buf.getvalue())
        return
    check_output_path(output)
    fmt = os.path.splitext(output)[1][1:].lower() or None
    buf = io.BytesIO()
    fig.savefig(buf, dpi=dpi, format=fmt)
    try:
        write_file_atomic(output, buf.getvalue())
    except OSError as e:  # (named after the output, not the temporary file beside it)
        from smdebug.cli._common import CliError

        raise CliError(f"cannot write {output}: {e.strerror or e}") from None


def run(args: argparse.Namespace) -> int:
    if not args.tensors and not args.collection:
        raise c.CliError("name at least one TENSOR (or --collection)")
    if args.abs and not args.reduction:
        raise c.CliError("--abs goes with --reduction")
    if args.max_points < 0 or args.dpi <= 0:
        raise c.CliError("--max-points and --dpi must be positive")
    c.need_matplotlib("smdebug plot")
    c.check_output(args.output)  # (before the run is read: said at once)
    if args.output == c.STDOUT:
        c.check_stdout("a PNG image", [(args.json, "--json")])
    check_format(args.output)
    check_pixels(*args.size, args.dpi)
    trial = c.open_trial(args.trial, args.wait)
    names = c.resolve_tensor_names(trial, args.tensors, args.collection)
    if args.worker is not None and args.worker not in trial.workers():
        raise c.CliError(f"no worker {args.worker!r} in the run (workers: {listed(trial.workers())})",
                         c.EXIT_NOT_FOUND)
    by_tensor = collect(trial, names, mode=args.mode, reduction=args.reduction, is_abs=args.abs,
                        worker=args.worker, max_points=args.max_points or None, progress=args.progress)
    lines = sum(len(s) for s in by_tensor.values())
    if not lines:
        raise c.CliError(f"nothing to plot: {', '.join(names)} have no readable values"
                         + (f" in mode {args.mode.name}" if args.mode is not None else ""), c.EXIT_NOT_FOUND)
    x_label = "global step" if args.mode is None else f"{args.mode.name} step"
    left_out = draw(by_tensor, args.output, title=args.title or f"smdebug run {trial.name}", x_label=x_label,
         subplots=args.subplots, logy=args.logy, size=args.size, dpi=args.dpi)
    points = sum(len(s.y) for series in by_tensor.values() for s in series)
    if args.json:
        c.print_json({"trial": trial.name, "path": c.display_path(trial), "output": os.path.abspath(args.output),
                      "x": "global_step" if args.mode is None else "mode_step",
                      "series": [s.to_dict() for series in by_tensor.values() for s in series]})
    else:
        where = "a PNG image to stdout" if args.output == c.STDOUT else args.output
        note = f"; {left_out_note(left_out)}" if left_out else ""
        print(f"wrote {where}: {len(names)} tensor(s), {lines} line(s), {points} point(s){note}",
              file=sys.stderr if args.output == c.STDOUT else sys.stdout)
    return c.EXIT_OK
