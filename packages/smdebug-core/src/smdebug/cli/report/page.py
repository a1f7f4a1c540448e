"""The report's HTML: one self-contained page (Bokeh's JavaScript and CSS inline, no external resource).

Every string from a run is escaped here (``_e``); the charts' own text goes through Bokeh (see
:mod:`.charts`). The small script at the end (:data:`GLUE_JS`) is the page's only hand-written
JavaScript: the smoothing slider, and for a live page (``--follow``) the reload that keeps the scroll
position and any zoom the reader made.
"""

from __future__ import annotations

import datetime
import html
import json
import re
from typing import List, Optional

from smdebug.cli.report import verdicts as vd
from smdebug.core.names import listed
from smdebug.cli.report.content import Chart, RunInfo, Section

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0; color: #1f2933; background: #f5f7fa; }
header { background: #243b53; color: #fff; padding: 16px 32px; }
header h1 { margin: 0 0 4px; font-size: 22px; }
header p { margin: 2px 0; color: #d9e2ec; font-size: 14px; }
.live { display: inline-block; background: #f0b429; color: #243b53; font-weight: 600; padding: 1px 8px; border-radius: 10px; font-size: 12px; }
nav { padding: 8px 32px; background: #d9e2ec; font-size: 14px; position: sticky; top: 0; z-index: 10; display: flex; flex-wrap: wrap; gap: 4px 16px; align-items: center; }
nav a { color: #243b53; }
nav .controls { margin-left: auto; font-size: 13px; color: #323f4b; }
main { padding: 8px 32px 32px; }
section { background: #fff; border-radius: 6px; padding: 12px 20px 16px; margin: 16px 0; box-shadow: 0 1px 2px rgba(0,0,0,.08); }
h2 { font-size: 18px; margin: 6px 0 8px; }
h3 { font-size: 14px; margin: 10px 0 4px; word-break: break-all; }
table { border-collapse: collapse; font-size: 13px; margin: 4px 0 8px; }
th, td { text-align: left; padding: 3px 10px 3px 0; border-bottom: 1px solid #e4e7eb; vertical-align: top; }
td { overflow-wrap: break-word; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
table.kv th { color: #52606d; font-weight: normal; }
code { font-size: 12px; }
.runs { display: flex; flex-wrap: wrap; gap: 8px 40px; align-items: flex-start; }
.runs > div { min-width: 0; flex: 1 1 420px; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr)); gap: 12px 20px; }
.chart { min-width: 0; }
.chart.wide { grid-column: 1 / -1; }
.badge { display: inline-block; white-space: nowrap; padding: 1px 8px; border-radius: 10px; font-size: 12px; font-weight: 600; }
.ok { background: #c6f7e2; color: #014d40; } .bad { background: #ffd0d0; color: #8a041a; }
.err { background: #ffe8b3; color: #8d2b0b; } .wait { background: #e4e7eb; color: #323f4b; }
.skip { background: #e4e7eb; color: #3e4c59; border: 1px dashed #7b8794; } .na { background: #f5f7fa; color: #616e7c; border: 1px dotted #9aa5b1; } .unknown { background: #e8e1fa; color: #44337a; }
.note { color: #52606d; font-size: 13px; margin: 4px 0; }
.problem { color: #8d2b0b; font-size: 13px; }
.mismatch { background: #fff3c4; border-left: 4px solid #f0b429; color: #8d2b0b; padding: 6px 10px; margin: 6px 0;
            font-size: 14px; }
footer { color: #7b8794; font-size: 12px; padding: 0 32px 24px; }
"""

# The page's glue. Bokeh renders its documents asynchronously: wait for them, then wire the slider.
# On a live page: reload every N seconds, keeping the scroll position and the zooms the reader made
# (recorded by the charts' RangesUpdate callbacks) across the reload, in sessionStorage.
GLUE_JS = """
(function () {
  var cfg = JSON.parse(document.getElementById('smd-config').textContent);
  var key = 'smdebug-report:' + location.pathname;
  function withBokeh(cb, tries) {
    if (window.Bokeh && Bokeh.documents && Bokeh.documents.length > 0) { cb(Bokeh.documents[0]); return; }
    if ((tries || 0) > 600) { document.body.setAttribute('data-smd-ready', 'no-charts'); return; }
    setTimeout(function () { withBokeh(cb, (tries || 0) + 1); }, 50);
  }
  function tagged(doc, tag) {
    var out = [];
    doc.all_models.forEach(function (m) { if (m.tags && m.tags.indexOf(tag) >= 0) { out.push(m); } });
    return out;
  }
  function setup(doc) {
    var slider = document.getElementById('smd-smoothing');
    var shown = document.getElementById('smd-smoothing-value');
    if (slider) {
      var state = doc.get_model_by_name('smd-smoothing');
      var smooth = tagged(doc, 'smd-smooth'), raw = tagged(doc, 'smd-raw');
      slider.addEventListener('input', function () {
        var w = parseFloat(slider.value);
        shown.textContent = w.toFixed(2);
        if (state) { state.data = {w: [w]}; }
        raw.forEach(function (r) { r.glyph.line_alpha = w > 0 ? 0.3 : 1.0; });
        smooth.forEach(function (r) { r.data_source.change.emit(); });
      });
    }
    if (cfg.live) {
      var saved = null;
      try { saved = JSON.parse(sessionStorage.getItem(key) || 'null'); } catch (e) { saved = null; }
      if (saved && saved.zoom) {
        Object.keys(saved.zoom).forEach(function (name) {
          var fig = doc.get_model_by_name(name), z = saved.zoom[name];
          if (fig && z) {
            fig.x_range.setv({start: z[0], end: z[1]});
            fig.y_range.setv({start: z[2], end: z[3]});
          }
        });
        window.smdZoom = saved.zoom;
      }
      // again now that the charts have their height
      if (saved && typeof saved.scroll === 'number') { setTimeout(function () { window.scrollTo(0, saved.scroll); }, 0); }
    }
    document.body.setAttribute('data-smd-ready', '1');
  }
  if (cfg.live) {
    var before = null;
    try { before = JSON.parse(sessionStorage.getItem(key) || 'null'); } catch (e) { before = null; }
    if (before && typeof before.scroll === 'number') { window.scrollTo(0, before.scroll); }
    setTimeout(function () {
      try { sessionStorage.setItem(key, JSON.stringify({scroll: window.scrollY, zoom: window.smdZoom || {}})); } catch (e) {}
      location.reload();
    }, cfg.live * 1000);
  }
  if (cfg.charts) { withBokeh(setup); } else { document.body.setAttribute('data-smd-ready', '1'); }
})();
"""


def _e(x) -> str:
    return html.escape(str(x), quote=True)


class Raw(str):
    """Already-escaped HTML for a table cell."""


def _cell(v) -> str:
    return v if isinstance(v, Raw) else _e(v)


def table(headers, rows, numeric=(), cls="") -> str:
    head = "".join(f'<th class="num">{_e(h)}</th>' if i in numeric else f"<th>{_e(h)}</th>" for i, h in enumerate(headers))
    body = "".join("<tr>" + "".join(f'<td class="num">{_cell(v)}</td>' if i in numeric else f"<td>{_cell(v)}</td>"
                                    for i, v in enumerate(row)) + "</tr>" for row in rows)
    cls_attr = f' class="{cls}"' if cls else ""
    return f"<table{cls_attr}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def kv_table(rows) -> str:
    body = "".join(f"<tr><th>{_e(k)}</th><td>{_cell(v)}</td></tr>" for k, v in rows)
    return f'<table class="kv"><tbody>{body}</tbody></table>'


def badge(status: str) -> Raw:
    return Raw(f'<span class="badge {vd.status_class(status)}" title="{_e(vd.status_meaning(status))}">{_e(status)}</span>')


# --------------------------------------------------------------------------------------------------
# the run and rules sections
# --------------------------------------------------------------------------------------------------
def run_card(run: RunInfo, facts: dict) -> str:
    from smdebug.cli import _common as c

    trial = run.trial
    g = facts["global_steps"]
    meta = [
        ("path", c.display_path(trial)),
        ("state", c.run_state(trial)),
        ("global steps", f"{len(g)} ({g[0]}-{g[-1]})" if g else "0"),
        ("workers", f"{len(trial.workers())}: {listed(trial.workers(), limit=40)}"),
        ("tensors", facts["tensor_count"]),
    ]
    if facts.get("ended"):
        meta.insert(2, ("training ended", facts["ended"]))
    missing = facts.get("absent", [])
    if missing:
        meta.append(("not in this run", ", ".join(missing)))
    for note in trial.hook_failures():  # (the run holds less than training saved: said where it is described)
        meta.append(("warning", note))
    step_rows = [(m, len(s), s[0], s[-1], c.compact_steps(s)) for m, s in facts["steps"].items()]
    out = (f"<div><h3>{_e(run.label)}</h3>" if facts.get("many") else "<div>") + kv_table(meta)
    out += "<h3>Steps per mode</h3>" + table(("mode", "steps", "first", "last", "saved"), step_rows, numeric=(1, 2, 3))
    # (as smdebug ls: the collections holding tensors in the table, the hook's empty ones named in one line)
    held = [(name, n) for name, n in facts["collections"] if n]
    empty = [name for name, n in facts["collections"] if not n]
    out += "<h3>Collections</h3>" + (table(("collection", "tensors"), held, numeric=(1,)) if held else "")
    if empty:
        shown = ", ".join(empty[:40]) + (f", ... ({len(empty) - 40:,} more)" if len(empty) > 40 else "")
        out += f'<p class="note">{"holding no tensor" if held else "none holds a tensor"}: {_e(shown)}</p>'
    return out + "</div>"


def rules_block(run: RunInfo, many: bool) -> str:
    title = f"<h3>{_e(run.label)}</h3>" if many else ""
    res = run.rules
    if res is None:
        return (title + '<p class="note">No rule results for this run. Save the rule runner\'s result in the run '
                f'(<code>smdebug rules run RUN --rule ... -o RUN/{vd.RULE_RESULTS_FILE}</code>) or pass '
                "<code>--rules FILE</code>, and write the report again.</p>")
    meta = [("overall", badge(res.status)), ("source", res.source), ("rules", len(res.verdicts))]
    if res.trial is not None:
        meta.insert(2, ("judged run", res.trial))
    for key in ("steps_evaluated", "last_step", "started", "finished"):
        value = getattr(res, key)
        if value is not None:
            meta.append((key.replace("_", " "), value))
    if res.training_ended is not None:
        meta.append(("training ended", "yes" if res.training_ended else "no"))
    if res.not_final:
        meta.append(("not final", res.not_final))
    rows = []
    for v in res.verdicts:
        shown = []
        for f in v.findings[:5]:
            where = f"step {f.step}" + (f" ({f.mode} {f.mode_step})" if f.mode else "")
            shown.append(f"{_e(where)}: {_e(f.reason)}")
        if v.findings_total > len(shown):
            shown.append(f"… {v.findings_total - len(shown)} more")
        detail = "<br>".join(shown)
        if v.detail:
            detail += ("<br>" if detail else "") + _e(v.detail)
        if v.error:
            detail += ("<br>" if detail else "") + '<span class="problem">error: ' + _e(v.error) + "</span>"
        params = ", ".join(f"{k}={val}" for k, val in v.params)
        rows.append((v.name, badge(v.status), "-" if v.steps_evaluated is None else v.steps_evaluated,
                     v.findings_total, Raw(detail or "-"), params or "-"))
    out = title + mismatch_block(res) + kv_table(meta)
    if rows:
        out += table(("rule", "verdict", "steps", "issues", "findings", "parameters"), rows, numeric=(2, 3), cls="verdicts")
    if res.problems:
        out += ('<p class="problem">Problems in the rule results (shown as far as they could be read):</p><ul>'
                + "".join(f'<li class="problem">{_e(p)}</li>' for p in res.problems[:50]) + "</ul>")
    return out


def mismatch_block(res: vd.RuleResults) -> str:
    """What does not fit this run, above its verdicts: they read as this run's otherwise."""
    if not res.mismatch:
        return ""
    items = "".join(f"<li>{_e(m)}</li>" for m in res.mismatch)
    return ('<div class="mismatch" data-rules-mismatch="1"><strong>These verdicts do not match this run as it is '
            f"now:</strong><ul>{items}</ul></div>")


# --------------------------------------------------------------------------------------------------
# the page
# --------------------------------------------------------------------------------------------------
def chart_block(chart: Chart, name: str, div: str) -> str:
    wide = " wide" if chart.kind in ("timeline",) or (chart.kind == "lines" and len(chart.lines) > 6) else ""
    note = f'<p class="note">{_e(chart.note)}</p>' if chart.note else ""
    return (f'<div class="chart{wide}" id="wrap-{name}" data-chart="{name}" data-kind="{chart.kind}">'
            f"<h3>{_e(chart.title)}</h3>{div}{note}</div>")


def render(*, title: str, runs: List[RunInfo], facts: List[dict], sections: List[Section], timeline: Optional[Chart],
           drawer, live: Optional[float], max_points: int, finished: bool) -> str:
    from smdebug._version import __version__
    from smdebug.cli import _common as c

    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    many = len(runs) > 1
    names_by_chart = {}
    if timeline is not None and timeline.data.get("findings"):
        names_by_chart[id(timeline)] = drawer.add(timeline)
    for s in sections:
        for ch in s.charts:
            names_by_chart[id(ch)] = drawer.add(ch)
    script, divs = drawer.embed()
    div_of = dict(zip(drawer.names, divs))

    def block(ch):
        name = names_by_chart[id(ch)]
        return chart_block(ch, name, div_of[name])

    run_html = '<div class="runs">' + "".join(run_card(r, dict(f, many=many)) for r, f in zip(runs, facts)) + "</div>"
    parts = [f'<section id="run"><h2>{"Runs" if many else "Run"}</h2>{run_html}</section>']
    nav = [("run", "Runs" if many else "Run")]
    rules_html = '<div class="runs">' + "".join(f"<div>{rules_block(r, many)}</div>" for r in runs) + "</div>"
    if timeline is not None and timeline.data.get("findings"):
        rules_html += f'<div class="charts">{block(timeline)}</div>'
    parts.append(f'<section id="rules"><h2>Rule verdicts</h2>{rules_html}</section>')
    nav.append(("rules", "Rules"))
    for s in sections:
        body = f'<p class="note">{_e(s.intro)}</p>' if s.intro else ""
        body += '<div class="charts">' + "".join(block(ch) for ch in s.charts) + "</div>"
        body += "".join(f'<p class="note">{_e(n)}</p>' for n in s.notes)
        parts.append(f'<section id="{s.sid}"><h2>{_e(s.title)}</h2>{body}</section>')
        nav.append((s.sid, s.title.split(":")[0]))
    smoothable = any(ch.smooth and ch.kind == "lines" for s in sections for ch in s.charts)
    controls = ""
    if smoothable:
        controls = ('<span class="controls"><label for="smd-smoothing">smoothing</label> '
                    '<input type="range" id="smd-smoothing" min="0" max="0.99" step="0.01" value="0"> '
                    '<span id="smd-smoothing-value">0.00</span></span>')
    nav_html = "".join(f'<a href="#{sid}">{_e(label)}</a>' for sid, label in nav) + controls
    subtitle = "".join(f"<p>{_e(r.label + ': ' if many else '')}{_e(c.display_path(r.trial))} · "
                       f"{_e(c.run_state(r.trial))}</p>" for r in runs)
    live_html = ""
    if live:
        live_html = (f'<p><span class="live">live</span> this page reloads itself every {live:g} s while '
                     "<code>smdebug report --follow</code> keeps it current; it stops when training ends.</p>")
    elif finished:
        live_html = "<p>final report: training ended.</p>" if all(r.trial.loaded_all_steps for r in runs) else ""
    config = json.dumps({"live": live or 0, "charts": len(drawer.names)}).replace("<", "\\u003c")
    resources = _resources() if script else ""
    last_steps = ",".join(str(f["global_steps"][-1]) if f["global_steps"] else "-" for f in facts)
    head = (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="generator" content="smdebug report">'
        '<link rel="icon" href="data:,">'
        f"<title>{_e(title)}</title><style>{CSS}</style>")
    return visible_direction_controls(head) + resources + visible_direction_controls(
        "</head>\n"
        f'<body data-last-step="{_e(last_steps)}" data-live="{1 if live else 0}">'
        f"<header><h1>{_e(title)}</h1>{subtitle}<p>written {_e(now)} · up to {max_points} points per line "
        f"(each bucket's extremes kept)</p>{live_html}</header>"
        f"<nav>{nav_html}</nav><main>\n" + "\n".join(parts) + "\n</main>"
        f"<footer>smdebug {_e(__version__)} · <code>smdebug report</code> · charts: Bokeh {_e(_bokeh_version())}</footer>"
        f'<script type="application/json" id="smd-config">{config}</script>'
        f"{script}<script>{GLUE_JS}</script></body></html>\n")


#: characters that change the direction or the lines of the text around them: bidirectional embeddings,
#: overrides and isolates, the marks, and the line/paragraph separators (which also end a JavaScript line);
#: and the rest of what the CLI escapes for a terminal (smdebug.cli.terminal): control characters but tab and
#: newline, which HTML forbids and which act on a terminal that shows the file (`cat report.html`: a note
#: holding ESC ] 0 ; ... BEL retitled it), and the characters that show as nothing, with which two tensors or
#: workers ('w', 'w' + ZERO WIDTH SPACE) read the same on the page (red team 12)
_DIRECTION_CONTROLS = re.compile("[\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
                                 "\x00-\x08\x0b-\x1f\x7f-\x9f\xad\u200b\u2060-\u2064\ufeff\ud800-\udfff]")


def visible_direction_controls(text: str) -> str:
    """``text`` with each character of :data:`_DIRECTION_CONTROLS` shown as ``[U+XXXX]`` (control characters and
    invisible ones as well: see there). A tensor name from a
    run holding U+202E would display reversed wherever the page shows it (a heading, a table, a chart's title,
    legend or tooltip: the "Trojan Source" trick makes one tensor look like another). Applied to the whole
    page but Bokeh's own code, so every way a name reaches it is covered; the replacement is plain text in
    HTML, attributes and JSON strings alike, and never decodes back (as a ``\\u202e`` escape in the charts'
    JSON would)."""
    return _DIRECTION_CONTROLS.sub(lambda m: "[U+%04X]" % ord(m.group()), text)


def _resources() -> str:
    """Bokeh's JavaScript, inline. Its default log level ("info") fills the console with status lines,
    and its own set_log_level() call logs itself: the level is set on its logger directly instead."""
    from bokeh.resources import Resources

    res = Resources(mode="inline", components=["bokeh"])
    scripts = [js for js in res.js_raw if "set_log_level" not in js or len(js) > 200]
    return ("".join(f"<script>{js}</script>" for js in scripts)
            + '<script>if (window.Bokeh && Bokeh.logger) { Bokeh.logger.set_level("warn"); }</script>'
            + res.render_css())


def _bokeh_version() -> str:
    import bokeh

    return bokeh.__version__
