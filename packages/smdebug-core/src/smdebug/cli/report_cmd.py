"""Write a self-contained HTML report of a run: curves, per-layer norms, rule verdicts, metadata.

The page shows the run's metadata, loss and metric curves, per-layer weight and gradient norms over
steps, and rule verdicts.

  smdebug report /tmp/run -o report.html
  smdebug rules run /tmp/run --rule loss_not_decreasing --rule vanishing_gradient -o /tmp/run/rule_results.json
  smdebug report /tmp/run -o report.html                      # picks up /tmp/run/rule_results.json
  smdebug report s3://bucket/run -o report.html --rules results.json

The page has no external resources (plots are PNG images embedded as data: URIs, no scripts), so it
can be mailed or archived as one file. Curves come from the collections losses, metrics, sm_metrics
and scalars; norms from weights, biases and gradients (l2 norms: stored by the hook when it saved
them, else computed from the saved values), read at up to --max-points steps per tensor. Rule verdicts
come from --rules FILE, or from rule_results.json in the run's directory when there is one: save the
rule runner's result there (`smdebug rules run ... -o TRIAL/rule_results.json`) and every later report
shows it. Needs matplotlib: pip install 'smdebug-core[cli]'. Exit status: 0, 2 (error).
"""

from __future__ import annotations

import argparse
import html
import os

from smdebug.cli import _common as c

#: rule results the report picks up from the run's own directory
RULE_RESULTS_FILE = "rule_results.json"

LOSS_COLLECTIONS = ("losses",)
METRIC_COLLECTIONS = ("metrics", "sm_metrics", "scalars")
WEIGHT_COLLECTIONS = ("weights", "biases")
GRADIENT_COLLECTIONS = ("gradients",)
MAX_SCALAR_CHARTS = 24

STATUS_CLASS = {"NoIssuesFound": "ok", "IssuesFound": "bad", "Error": "err", "InProgress": "wait"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    c.add_trial_argument(parser)
    parser.add_argument("-o", "--output", required=True, metavar="FILE", help="the HTML file to write")
    parser.add_argument("--rules", metavar="FILE",
                        help="rule runner result (smdebug rules run ... -o FILE), a path or s3://bucket/key; "
                             f"default: TRIAL/{RULE_RESULTS_FILE} if present")
    parser.add_argument("--max-points", type=int, default=500, metavar="N",
                        help="read at most N steps per tensor, evenly spread (default 500; 0: every step)")
    parser.add_argument("--title", help="page title (default: the run's name)")
    parser.add_argument("--dpi", type=int, default=100, help="resolution of the plots (default 100)")
    c.add_progress_arguments(parser)


# --------------------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------------------
def _members(trial, names, collection_names, exclude=()):
    colls = [trial.collections()[cn] for cn in collection_names if cn in trial.collections()]
    return [n for n in names if n not in exclude and any(col.matches(n) for col in colls)]


def select_tensors(trial) -> dict:
    """Which tensors go into which section."""
    names = trial.tensor_names()
    losses = _members(trial, names, LOSS_COLLECTIONS)
    metrics = _members(trial, names, METRIC_COLLECTIONS, exclude=losses)
    metrics += [n for n in names if n.startswith("scalar/") and n not in metrics and n not in losses]
    taken = set(losses) | set(metrics)
    weights = _members(trial, names, WEIGHT_COLLECTIONS, exclude=taken)
    gradients = _members(trial, names, GRADIENT_COLLECTIONS, exclude=taken | set(weights))
    return {"losses": losses, "metrics": sorted(metrics), "weights": weights, "gradients": gradients}


def _norm_mode(trial, names):
    """The one mode whose steps the norm charts show: TRAIN when the tensors were saved in it."""
    from smdebug.cli._series import tensor_points

    counts = {}
    for n in names:
        for m in {p[1] for p in tensor_points(trial, n)}:
            counts[m] = counts.get(m, 0) + 1
    if not counts:
        return None
    from smdebug.core.modes import ModeKeys

    if ModeKeys.TRAIN in counts:
        return ModeKeys.TRAIN
    return max(counts, key=lambda m: (counts[m], m == ModeKeys.GLOBAL))


def load_rule_results(trial, path=None):
    """(document, where it came from) or (None, None)."""
    import json

    if path:
        text = c.read_file(path, "rule results").decode("utf-8", "replace")  # local or s3://
        source = path
    else:
        try:
            if not trial.storage.exists(RULE_RESULTS_FILE):
                return None, None
            text = trial.storage.read(RULE_RESULTS_FILE).decode("utf-8")
        except Exception:  # noqa: BLE001 - no readable results in the run: the report goes on without
            return None, None
        source = trial.storage.full_path(RULE_RESULTS_FILE)
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise c.CliError(f"{source} is not JSON: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("rules"), list):
        raise c.CliError(f"{source} does not look like a rule runner result (no 'rules' list)")
    return doc, source


def collect(trial, *, max_points=500, progress=None, rules_path=None) -> dict:
    from smdebug.cli._series import collect_series, count_points

    groups = select_tensors(trial)
    scalar_names = (groups["losses"] + groups["metrics"])[:MAX_SCALAR_CHARTS]
    norm_mode = _norm_mode(trial, groups["weights"] + groups["gradients"])
    total = count_points(trial, scalar_names, None, max_points)
    total += count_points(trial, groups["weights"] + groups["gradients"], norm_mode, max_points, all_workers=False)
    ticks = iter(c.progress(range(total), total=total, desc="reading steps", enabled=progress))

    def tick(_n):
        next(ticks, None)

    series = {}
    for n in scalar_names:
        series[n] = collect_series(trial, n, max_points=max_points, tick=tick)
    for n in groups["weights"] + groups["gradients"]:
        series[n] = collect_series(trial, n, mode=norm_mode, reduction="l2", all_workers=False,
                                   max_points=max_points, tick=tick, x_global=True)
    for _ in ticks:
        pass

    global_steps = trial.steps()
    by_mode = {}
    for g in global_steps:
        m, ms = trial.mode_modestep(g)
        by_mode.setdefault(m.name if m is not None else "GLOBAL", []).append(ms if ms is not None else g)
    names = trial.tensor_names()
    colls = trial.collections()
    rules, rules_source = load_rule_results(trial, rules_path)
    ended_age = None
    try:
        from smdebug.core.locations import END_OF_JOB_FILE

        ended_age = trial.storage.age(END_OF_JOB_FILE) if trial.loaded_all_steps else None
    except Exception:  # noqa: BLE001 - only informative
        ended_age = None
    return {
        "trial": trial,
        "groups": groups,
        "omitted_scalars": max(0, len(groups["losses"]) + len(groups["metrics"]) - MAX_SCALAR_CHARTS),
        "norm_mode": norm_mode.name if norm_mode is not None else None,
        "series": series,
        "steps": {m: by_mode[m] for m in ("TRAIN", "EVAL", "PREDICT", "GLOBAL") if m in by_mode},
        "global_steps": global_steps,
        "tensor_count": len(names),
        "collections": [(cn, sum(1 for n in names if colls[cn].matches(n))) for cn in sorted(colls)],
        "rules": rules,
        "rules_source": rules_source,
        "ended_age": ended_age,
    }


# --------------------------------------------------------------------------------------------------
# rendering
# --------------------------------------------------------------------------------------------------
CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0; color: #1f2933; background: #f5f7fa; }
header { background: #243b53; color: #fff; padding: 18px 32px; }
header h1 { margin: 0 0 4px; font-size: 22px; }
header p { margin: 0; color: #d9e2ec; font-size: 14px; }
nav { padding: 8px 32px; background: #d9e2ec; font-size: 14px; }
nav a { margin-right: 16px; color: #243b53; }
main { padding: 8px 32px 32px; }
section { background: #fff; border-radius: 6px; padding: 12px 20px 16px; margin: 16px 0; box-shadow: 0 1px 2px rgba(0,0,0,.08); }
h2 { font-size: 18px; margin: 6px 0 10px; }
h3 { font-size: 15px; margin: 14px 0 6px; }
table { border-collapse: collapse; font-size: 13px; margin: 4px 0 8px; }
th, td { text-align: left; padding: 3px 10px 3px 0; border-bottom: 1px solid #e4e7eb; vertical-align: top; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
table.kv th { color: #52606d; font-weight: normal; }
code { font-size: 12px; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; }
.cols { display: flex; flex-wrap: wrap; gap: 8px 40px; align-items: flex-start; }
.cols h3 { margin-top: 0; }
.row { display: flex; flex-wrap: wrap; gap: 0 16px; }
.row > section { flex: 1 1 520px; min-width: 0; }
figure { margin: 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #e4e7eb; }
figcaption { font-size: 12px; color: #52606d; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; font-weight: 600; }
.ok { background: #c6f7e2; color: #014d40; } .bad { background: #ffd0d0; color: #8a041a; }
.err { background: #ffe8b3; color: #8d2b0b; } .wait { background: #e4e7eb; color: #323f4b; }
.note { color: #52606d; font-size: 13px; }
footer { color: #7b8794; font-size: 12px; padding: 0 32px 24px; }
"""


def _e(x) -> str:
    return html.escape(str(x), quote=True)


def _table(headers, rows, numeric=(), cls="") -> str:
    head = "".join(f'<th class="num">{_e(h)}</th>' if i in numeric else f"<th>{_e(h)}</th>"
                   for i, h in enumerate(headers))
    body = []
    for row in rows:
        cells = []
        for i, v in enumerate(row):
            raw = v if isinstance(v, _Raw) else _e(v)
            cells.append(f'<td class="num">{raw}</td>' if i in numeric else f"<td>{raw}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    cls_attr = f' class="{cls}"' if cls else ""
    return f"<table{cls_attr}><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _kv_table(rows) -> str:
    body = "".join(f"<tr><th>{_e(k)}</th><td>{v if isinstance(v, _Raw) else _e(v)}</td></tr>" for k, v in rows)
    return f'<table class="kv"><tbody>{body}</tbody></table>'


class _Raw(str):
    """Already-escaped HTML for a table cell."""


def _png(fig, dpi: int) -> str:
    import base64
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _figure(series, *, title, x_label, y_label="", width=6.4, height=3.4, dpi=100, alt="", caption="",
            logy=False, legend="inside") -> str:
    from smdebug.cli._series import draw_axes, new_figure

    fig = new_figure(width, height, dpi)
    ax = fig.add_subplot()
    draw_axes(ax, series, x_label=x_label, y_label=y_label, title=title, logy=logy, legend=legend)
    data = _png(fig, dpi)
    w, h = int(round(width * dpi)), int(round(height * dpi))
    cap = f"<figcaption>{_e(caption)}</figcaption>" if caption else ""
    return (f'<figure><img src="data:image/png;base64,{data}" alt="{_e(alt or title)}" width="{w}" height="{h}">'
            f"{cap}</figure>")


def _scalar_section(report, names, dpi) -> str:
    from smdebug.cli._series import finite

    charts, rows = [], []
    for n in names:
        series = report["series"].get(n)
        if series is None:
            continue
        if not series:
            rows.append((n, "-", 0, "-", "-", "-", "-"))
            continue
        quantity = series[0].quantity
        charts.append(_figure(series, title=quantity, x_label="global step", dpi=dpi, alt=f"{quantity} over steps"))
        for s in series:
            ys = finite(s.y)
            rows.append((quantity, s.mode + (f" {s.worker}" if len({x.worker for x in series}) > 1 else ""),
                         len(s.y), c.fmt_number(s.y[0]) if s.y else "-", c.fmt_number(s.y[-1]) if s.y else "-",
                         c.fmt_number(min(ys)) if ys else "-", c.fmt_number(max(ys)) if ys else "-"))
    out = f'<div class="charts">{"".join(charts)}</div>'
    if rows:
        out += _table(("tensor", "mode", "points", "first", "last", "min", "max"), rows, numeric=(2, 3, 4, 5, 6))
    return out


def _norm_section(report, names, what, dpi) -> str:
    from smdebug.cli._series import finite

    series = [s for n in names for s in report["series"].get(n, [])]
    if not series:
        return '<p class="note">No readable values.</p>'
    mode = report["norm_mode"]
    workers = report["trial"].workers()
    caption = f"l2 norm of each tensor at the {mode} steps it was saved at, by global step"
    if len(workers) > 1:
        caption += "; values of the first worker that saved each step"
    fig = _figure(series, title=f"{what}: l2 norm per tensor", x_label="global step", y_label="l2 norm",
                  width=10.0, height=4.6, dpi=dpi, alt=f"{what} l2 norms over steps", caption=caption,
                  logy=all(v > 0 for s in series for v in finite(s.y)) and _spread(series) > 100,
                  legend="outside")
    rows = []
    for s in series:
        ys = finite(s.y)
        first, last = (s.y[0], s.y[-1]) if s.y else (None, None)
        ratio = c.fmt_number(last / first) if first not in (None, 0) and last is not None else "-"
        rows.append((s.tensor, len(s.y), c.fmt_number(first), c.fmt_number(last),
                     c.fmt_number(min(ys)) if ys else "-", c.fmt_number(max(ys)) if ys else "-", ratio))
    return fig + _table(("tensor", "points", "first", "last", "min", "max", "last/first"), rows,
                        numeric=(1, 2, 3, 4, 5, 6))


def _spread(series) -> float:
    from smdebug.cli._series import finite

    ys = [v for s in series for v in finite(s.y) if v > 0]
    return max(ys) / min(ys) if ys else 1.0


def _rules_section(report) -> str:
    import datetime

    doc = report["rules"]
    if doc is None:
        return ('<p class="note">No rule results. Run rules over this run and save the result in its directory '
                f'(<code>smdebug rules run TRIAL --rule ... -o TRIAL/{RULE_RESULTS_FILE}</code>) or pass '
                "<code>--rules FILE</code>, and write the report again.</p>")
    status = str(doc.get("status", "?"))
    rows_meta = [
        ("overall", _Raw(f'<span class="badge {STATUS_CLASS.get(status, "wait")}">{_e(status)}</span>')),
        ("source", report["rules_source"]),
        ("rules", len(doc["rules"])),
        ("steps evaluated", doc.get("steps_evaluated", "-")),
        ("last step", doc.get("last_step", "-")),
        ("training ended", "yes" if doc.get("training_ended") else "no"),
    ]
    for key in ("started", "finished"):
        if isinstance(doc.get(key), (int, float)):
            when = datetime.datetime.fromtimestamp(doc[key], datetime.timezone.utc)
            rows_meta.append((key, when.isoformat(timespec="seconds")))
    rows = []
    for r in doc["rules"]:
        if not isinstance(r, dict):
            continue
        rstatus = str(r.get("status", "?"))
        findings = r.get("findings") or []
        shown = []
        for f in findings[:5]:
            where = f"step {f.get('step')}"
            if f.get("mode"):
                where += f" ({f.get('mode')} {f.get('mode_step')})"
            shown.append(f"{_e(where)}: {_e(f.get('reason') or 'condition met')}")
        total = r.get("findings_total", len(findings)) or len(findings)
        if total > len(shown):
            shown.append(f"… {total - len(shown)} more")
        detail = "<br>".join(shown)
        if r.get("error"):
            detail = (detail + "<br>" if detail else "") + f"error: {_e(r['error'])}"
        params = ", ".join(f"{k}={v}" for k, v in (r.get("params") or {}).items())
        badge = _Raw(f'<span class="badge {STATUS_CLASS.get(rstatus, "wait")}">{_e(rstatus)}</span>')
        rows.append((r.get("name", "?"), badge,
                     r.get("steps_evaluated", "-"), total, _Raw(detail or "-"), params or "-"))
    return (_kv_table(rows_meta)
            + _table(("rule", "verdict", "steps", "issues", "findings", "parameters"), rows, numeric=(2, 3)))


def render(report, *, title=None, dpi=100) -> str:
    import datetime

    from smdebug._version import __version__

    trial = report["trial"]
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    title = title or f"smdebug report: {trial.name}"
    groups = report["groups"]
    g = report["global_steps"]
    meta = [
        ("path", c.display_path(trial)),
        ("state", c.run_state(trial)),
        ("global steps", f"{len(g)} ({g[0]}-{g[-1]})" if g else "0"),
        ("workers", f"{trial.num_workers}: {', '.join(trial.workers())}"),
        ("tensors", report["tensor_count"]),
        ("report written", now),
    ]
    if report["ended_age"] is not None:
        ended = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=report["ended_age"])
        meta.insert(2, ("training ended", ended.isoformat(timespec="seconds")))
    step_rows = [(m, len(s), s[0], s[-1], c.compact_steps(s)) for m, s in report["steps"].items()]
    run_html = ('<div class="cols"><div>' + _kv_table(meta) + "</div>"
                + "<div><h3>Steps per mode</h3>"
                + _table(("mode", "steps", "first", "last", "saved"), step_rows, numeric=(1, 2, 3)) + "</div>"
                + "<div><h3>Collections</h3>"
                + _table(("collection", "tensors"), report["collections"], numeric=(1,)) + "</div></div>")

    def section(sid, heading, body):
        return f'<section id="{sid}"><h2>{_e(heading)}</h2>{body}</section>'

    def none_in(colls):
        return f'<p class="note">No tensors in the collection(s) {_e(", ".join(colls))} of this run.</p>'

    parts = [section("run", "Run", run_html), section("rules", "Rule verdicts", _rules_section(report))]
    losses = groups["losses"]
    body = _scalar_section(report, losses, dpi) if losses else none_in(LOSS_COLLECTIONS)
    curves = [section("losses", "Losses", body)]
    metrics = groups["metrics"]
    body = _scalar_section(report, metrics, dpi) if metrics else none_in(METRIC_COLLECTIONS)
    if report["omitted_scalars"]:
        body += (f'<p class="note">{report["omitted_scalars"]} more curves left out '
                 f"(the first {MAX_SCALAR_CHARTS} are shown).</p>")
    curves.append(section("metrics", "Metrics and scalars", body))
    parts.append('<div class="row">' + "".join(curves) + "</div>")
    for sid, heading, colls in (("weights", "Weight norms per layer", WEIGHT_COLLECTIONS),
                                ("gradients", "Gradient norms per layer", GRADIENT_COLLECTIONS)):
        names = groups[sid]
        parts.append(section(sid, heading, _norm_section(report, names, sid, dpi) if names else none_in(colls)))
    nav = "".join(f'<a href="#{sid}">{_e(label)}</a>' for sid, label in (
        ("run", "Run"), ("rules", "Rules"), ("losses", "Losses"), ("metrics", "Metrics"),
        ("weights", "Weights"), ("gradients", "Gradients")))
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="generator" content="smdebug report">'
        '<link rel="icon" href="data:,">'
        f"<title>{_e(title)}</title><style>{CSS}</style></head>\n<body>"
        f"<header><h1>{_e(title)}</h1>"
        f"<p>{_e(c.display_path(trial))} · {_e(c.run_state(trial))} · written {_e(now)}</p></header>"
        f"<nav>{nav}</nav><main>\n" + "\n".join(parts) + "\n</main>"
        f"<footer>smdebug {_e(__version__)} · <code>smdebug report</code></footer></body></html>\n"
    )


def write_atomic(path: str, text: str) -> None:
    import tempfile

    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".report-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes it private; a report is an ordinary file
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def run(args: argparse.Namespace) -> int:
    if args.max_points < 0 or args.dpi <= 0:
        raise c.CliError("--max-points and --dpi must be positive")
    c.need_matplotlib("smdebug report")
    trial = c.open_trial(args.trial, args.wait)
    report = collect(trial, max_points=args.max_points or None, progress=args.progress, rules_path=args.rules)
    page = render(report, title=args.title, dpi=args.dpi)
    write_atomic(args.output, page)
    charts = page.count("<img ")
    verdict = f", rule verdicts from {report['rules_source']}" if report["rules"] is not None else ""
    print(f"wrote {args.output}: {charts} chart(s), {report['tensor_count']} tensor(s){verdict}")
    return c.EXIT_OK
