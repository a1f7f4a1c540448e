"""The report's interactive charts, drawn with Bokeh (its JavaScript is embedded in the page).

Every chart can be zoomed (box zoom, wheel zoom once activated, pan; reset), hovered for values, and
its series hidden and shown by clicking their legend entries. Line charts draw each series twice on one
data source: the saved values (the hover target) and the same values through a smoothing transform
(an exponential moving average, TensorBoard's, whose weight the page's slider sets); with the weight at
0 the two are the same line.

Text from a run (tensor, worker, feature, rule names, reasons) only ever goes into data columns,
legend labels and factor names, which Bokeh draws on the canvas or inserts as text, never into
templates or axis labels (where Bokeh would read ``$$...$$`` as TeX).
"""

from __future__ import annotations

from typing import List, Tuple

import numpy as np

from smdebug.cli.report.content import Chart
from smdebug.cli.report.lines import Line, limit_lines, non_finite_runs, plot_points

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd")
DASHES = ("solid", "dashed", "dotted", "dotdash", "dashdot")
MODE_DASH = {"TRAIN": "solid", "EVAL": "dashed", "PREDICT": "dotted", "GLOBAL": "solid"}
STATUS_COLOUR = {"IssuesFound": "#d62728", "Error": "#b35900", "NotEvaluated": "#7b8794", "NotApplicable": "#aab4be",
                 "InProgress": "#52606d", "TrainingFailed": "#d62728",
                 "NoIssuesFound": "#2ca02c"}
HEIGHT = 320
#: rule findings marked on one chart at most (each is a glyph with a tooltip)
MAX_MARKERS = 2000

# The smoothing transform: a debiased exponential moving average over the finite values, as
# TensorBoard draws it; weight 0 gives the values back.
SMOOTH_JS = """
const w = state.data.w[0];
if (!(w > 0)) return xs;
const out = new Float64Array(xs.length);
let last = 0, n = 0;
for (let i = 0; i < xs.length; i++) {
  const v = xs[i];
  if (!isFinite(v)) { out[i] = NaN; continue; }
  last = last * w + (1 - w) * v; n++;
  out[i] = last / (1 - Math.pow(w, n));
}
return out;
"""

# live pages: remember a zoom the user made, so the page's reload keeps it (see page.GLUE_JS)
ZOOM_JS = "window.smdZoom = window.smdZoom || {}; window.smdZoom[cb_obj.origin.name] = [cb_obj.x0, cb_obj.x1, cb_obj.y0, cb_obj.y1];"
RESET_JS = "if (window.smdZoom) { delete window.smdZoom[cb_obj.origin.name]; }"


class Drawer:
    """Builds the Bokeh models of a page's charts; :meth:`embed` gives the script and one div per chart."""

    def __init__(self, max_points: int, live: bool = False):
        from bokeh.models import ColumnDataSource, CustomJS, CustomJSTransform

        self.max_points = max_points
        self.live = live
        self.state = ColumnDataSource(data={"w": [0.0]}, name="smd-smoothing")
        self.smooth = CustomJSTransform(args={"state": self.state}, v_func=SMOOTH_JS)
        self.zoom_cb = CustomJS(code=ZOOM_JS) if live else None
        self.reset_cb = CustomJS(code=RESET_JS) if live else None
        self.models: List[object] = []
        self.names: List[str] = []

    # ----------------------------------------------------------------------------------------------
    def add(self, chart: Chart) -> str:
        """Draw a chart; returns its element name (``chart-<n>``)."""
        name = f"chart-{len(self.models) + 1}"
        if chart.kind == "lines":  # (a chart of thousands of series is neither drawable nor readable)
            chart.lines, left_out = limit_lines(chart.lines)
            if left_out:
                chart.note = f"{chart.note} ({left_out})" if chart.note else left_out
        if len(chart.markers) > MAX_MARKERS:
            chart.note = (chart.note + " " if chart.note else "") + (
                f"({len(chart.markers) - MAX_MARKERS} of {len(chart.markers)} rule findings not marked)")
            chart.markers = chart.markers[:MAX_MARKERS]
        fig = {"lines": self._lines, "heatmap": self._heatmap, "bars": self._bars, "spread": self._spread,
               "timeline": self._timeline}[chart.kind](chart, name)
        if self.live:
            from bokeh import events

            fig.js_on_event(events.RangesUpdate, self.zoom_cb)
            fig.js_on_event(events.Reset, self.reset_cb)
        self.models.append(fig)
        self.names.append(name)
        return name

    def embed(self) -> Tuple[str, List[str]]:
        from bokeh.document import Document
        from bokeh.embed import components

        if not self.models:
            return "", []
        # One document for all the charts, its model graph worked out once: components() would add
        # them one by one, walking every model again at each (more than half of the page's build time).
        doc = Document()
        with doc.models.freeze():
            for m in self.models:
                doc.add_root(m)
        script, divs = components(self.models)
        return script, list(divs)

    # ----------------------------------------------------------------------------------------------
    def _figure(self, chart: Chart, name: str, **kw):
        from bokeh.plotting import figure

        fig = figure(name=name, height=HEIGHT, sizing_mode="stretch_width", tools="pan,box_zoom,wheel_zoom,reset,save",
                     active_drag="box_zoom", toolbar_location="above", x_axis_label=chart.x_label,
                     y_axis_label=chart.y_label, **kw)
        fig.toolbar.logo = None
        fig.min_border_left = 50
        return fig

    def _lines(self, chart: Chart, name: str):
        from bokeh.models import ColumnDataSource, HoverTool, Legend, LegendItem
        from bokeh.transform import transform

        fig = self._figure(chart, name, y_axis_type="log" if chart.logy else "linear")
        lines = chart.lines
        styles = _styles(lines)
        labels = _labels(lines)
        items, hover_targets, bad = [], [], []
        finite_all = [ln.values[np.isfinite(ln.values)] for ln in lines]
        finite = np.concatenate(finite_all) if finite_all else np.empty(0)
        if chart.logy:
            finite = finite[finite > 0]
        y_hi = float(finite.max()) if len(finite) else 1.0
        for ln, (colour, dash), label in zip(lines, styles, labels):
            xs, ms, ys = plot_points(ln, self.max_points)
            ys = np.where(np.isfinite(ys), ys, np.nan)
            if chart.logy:
                ys = np.where(ys > 0, ys, np.nan)
            src = ColumnDataSource(data={"x": _ints(xs), "y": _floats(ys), "ms": _ints(ms)})
            raw = fig.line("x", "y", source=src, color=colour, line_dash=dash, line_width=1.4, name=label)
            raw.tags = ["smd-raw"]  # (a tags= argument would go to the glyph, not the renderer)
            renderers = [raw]
            if chart.smooth:
                smooth = fig.line("x", transform("y", self.smooth), source=src, color=colour, line_dash=dash,
                                  line_width=2.2, name=label)
                smooth.tags = ["smd-smooth"]
                renderers.append(smooth)
            if len(xs) <= 60:
                renderers.append(fig.scatter("x", "y", source=src, color=colour, size=4, name=label))
            hover_targets.append(raw)
            items.append(LegendItem(label=label, renderers=renderers))
            for run in non_finite_runs(ln):
                anchor = run["anchor"] if run["anchor"] is not None and (run["anchor"] > 0 or not chart.logy) else y_hi
                what = f"{run['kind']} at step {run['step']}" + (
                    f" to {run['last_step']} ({run['count']} values)" if run["count"] > 1 else "")
                bad.append((run["step"], anchor, run["mode_step"], label, what))
        fig.add_tools(HoverTool(renderers=hover_targets, line_policy="nearest", formatters={"@y": "printf"},
                                tooltips=[("series", "$name"), ("step", "@x"), ("mode step", "@ms"),
                                          ("value", "@y{%.6g}")]))
        if bad:
            src = ColumnDataSource(data={"x": [b[0] for b in bad], "y": [b[1] for b in bad], "ms": [b[2] for b in bad],
                                         "series": [b[3] for b in bad], "what": [b[4] for b in bad]})
            r = fig.scatter("x", "y", source=src, marker="x", size=14, line_width=3, color="#d62728",
                            name="non-finite values")
            fig.add_tools(HoverTool(renderers=[r], tooltips=[("series", "@series"), ("value", "@what"),
                                                              ("mode step", "@ms")]))
            items.append(LegendItem(label="non-finite values", renderers=[r]))
        if chart.markers:
            r = self._markers(fig, chart.markers, y_hi)
            items.append(LegendItem(label="rule findings", renderers=[r]))
        legend = Legend(items=items, click_policy="hide", label_text_font_size="8pt", spacing=0, padding=4)
        fig.add_layout(legend, "right" if len(items) > 4 else "center")
        if len(items) <= 4:
            legend.location = "top_right"
        return fig

    def _markers(self, fig, markers: List[dict], y_top: float):
        """Findings on a line chart, at the value of their step (at the top where that is not finite)."""
        return _findings(fig, markers, [m["y"] if m["y"] is not None else y_top for m in markers], size=15)

    def _heatmap(self, chart: Chart, name: str):
        from bokeh.models import HoverTool, LinearColorMapper

        d = chart.data
        share = np.asarray(d["share"], dtype=np.float32)
        steps, edges = d["steps"], d["edges"]
        fig = self._figure(chart, name)
        x0, x1 = steps[0], steps[-1]
        half = (x1 - x0) / max(1, len(steps) - 1) / 2
        mapper = LinearColorMapper(palette=_viridis(), low=0.0, high=float(share.max()) or 1.0)
        r = fig.image(image=[share], x=x0 - half, y=edges[0], dw=(x1 - x0) + 2 * half, dh=edges[-1] - edges[0],
                      color_mapper=mapper)
        fig.add_tools(HoverTool(renderers=[r], formatters={"$x": "printf", "$y": "printf"},
                                tooltips=[("step", "$x{%d}"), ("value", "$y{%.4g}"), ("share", "@image{0.[000]}")]))
        fig.x_range.range_padding = 0
        fig.y_range.range_padding = 0
        return fig

    def _bars(self, chart: Chart, name: str):
        from bokeh.models import ColumnDataSource, HoverTool

        d = chart.data
        feats = list(reversed(d["features"]))
        vals = list(reversed(d["values"]))
        fig = self._figure(chart, name, y_range=feats)
        fig.height = max(HEIGHT, 22 * len(feats) + 80)
        src = ColumnDataSource(data={"y": feats, "v": vals, "c": ["#1f77b4" if v >= 0 else "#d62728" for v in vals]})
        r = fig.hbar(y="y", right="v", height=0.7, source=src, color="c")
        fig.add_tools(HoverTool(renderers=[r], formatters={"@v": "printf"}, tooltips=[("feature", "@y"), ("value", "@v{%.4g}")]))
        return fig

    def _spread(self, chart: Chart, name: str):
        from bokeh.models import ColumnDataSource, HoverTool
        from bokeh.transform import jitter

        d = chart.data
        feats = list(reversed(d["features"]))
        fig = self._figure(chart, name, y_range=feats)
        fig.height = max(HEIGHT, 26 * len(feats) + 80)
        bars = ColumnDataSource(data={"y": feats, "v": list(reversed(d["mean_abs"]))})
        rb = fig.hbar(y="y", right="v", height=0.8, source=bars, color="#c6dbef", legend_label="mean |SHAP|")
        xs, ys = [], []
        for f in feats:
            vals = np.asarray(d["values"][f], dtype=np.float64)
            xs.append(vals)
            ys += [f] * len(vals)
        pts = ColumnDataSource(data={"x": _floats(np.concatenate(xs) if xs else np.empty(0)), "y": ys})
        rp = fig.scatter(x="x", y=jitter("y", width=0.5, range=fig.y_range), source=pts, size=3, alpha=0.5,
                         color="#08519c", legend_label="one row")
        fig.add_tools(HoverTool(renderers=[rb], formatters={"@v": "printf"},
                                tooltips=[("feature", "@y"), ("mean |SHAP|", "@v{%.4g}")]))
        fig.add_tools(HoverTool(renderers=[rp], formatters={"@x": "printf"},
                                tooltips=[("feature", "@y"), ("SHAP", "@x{%.4g}")]))
        fig.legend.click_policy = "hide"
        fig.legend.location = "bottom_right"
        return fig

    def _timeline(self, chart: Chart, name: str):
        d = chart.data
        rows = list(dict.fromkeys(d["rules"]))
        rows.reverse()
        extra = {}
        if d.get("x_range"):  # the whole run, so a finding's place in it shows
            lo, hi = d["x_range"]
            pad = max(1.0, (hi - lo) * 0.02)
            extra["x_range"] = (lo - pad, hi + pad)
        fig = self._figure(chart, name, y_range=rows, **extra)
        fig.height = max(160, 30 * len(rows) + 90)
        _findings(fig, d["findings"], [f["rule"] for f in d["findings"]], size=13)
        return fig


# --------------------------------------------------------------------------------------------------
def _findings(fig, items: List[dict], ys: list, size: int):
    """Rule findings as markers coloured by status, their text on hover (a chart's markers, the timeline)."""
    from bokeh.models import ColumnDataSource, HoverTool

    src = ColumnDataSource(data={
        "x": [m["step"] for m in items], "y": ys, "rule": [m["rule"] for m in items],
        "status": [m["status"] for m in items], "mode": [m["mode"] for m in items],
        "ms": [str(m["mode_step"]) for m in items], "reason": [m["reason"] for m in items],
        "tensor": [m["tensor"] for m in items], "run": [m.get("run", "") for m in items],
        "colour": [STATUS_COLOUR.get(m["status"], "#d62728") for m in items]})
    r = fig.scatter("x", "y", source=src, marker="inverted_triangle", size=size, color="colour", line_color="black",
                    name="rule findings")
    r.tags = ["smd-findings"]
    tips = [("rule", "@rule"), ("step", "@x"), ("mode", "@mode @ms"), ("tensor", "@tensor"), ("finding", "@reason")]
    if any(m.get("run") for m in items):
        tips.insert(1, ("run", "@run"))
    fig.add_tools(HoverTool(renderers=[r], tooltips=tips))
    return r


def _ints(a) -> np.ndarray:
    a = np.asarray(a, dtype=np.int64)
    if len(a) and (a.max() >= 2**31 or a.min() < -(2**31)):
        return a.astype(np.float64)  # beyond int32: Bokeh's typed arrays take float64
    return a.astype(np.int32)


def _floats(a) -> np.ndarray:
    """float32 where it loses nothing visible (7 digits, the range of float32), else float64."""
    a = np.asarray(a, dtype=np.float64)
    fin = np.abs(a[np.isfinite(a) & (a != 0)])
    if len(fin) and (fin.max() > 3e38 or fin.min() < 1e-37):
        return a
    return a.astype(np.float32)


def _viridis():
    from bokeh.palettes import Viridis256

    return Viridis256


def _styles(lines: List[Line]) -> List[Tuple[str, str]]:
    """(colour, dash) per line: colour by series (tensor, worker), or by run where that is all that
    differs; dash by mode where the chart has several, else by run."""
    series = list(dict.fromkeys((ln.quantity, ln.worker) for ln in lines))
    runs = list(dict.fromkeys(ln.run for ln in lines))
    modes = {ln.mode for ln in lines}
    colour_by_run = len(series) == 1 and len(runs) > 1
    out = []
    for ln in lines:
        if colour_by_run:
            colour = PALETTE[runs.index(ln.run) % len(PALETTE)]
        else:
            colour = PALETTE[series.index((ln.quantity, ln.worker)) % len(PALETTE)]
        if len(modes) > 1:
            dash = MODE_DASH.get(ln.mode, "solid")
            if not colour_by_run and len(runs) > 1 and runs.index(ln.run):
                dash = DASHES[(DASHES.index(dash) + runs.index(ln.run)) % len(DASHES)]
        elif len(runs) > 1 and not colour_by_run:
            dash = DASHES[runs.index(ln.run) % len(DASHES)]
        else:
            dash = "solid"
        out.append((colour, dash))
    return out


def _labels(lines: List[Line]) -> List[str]:
    """Legend labels: the quantity, plus the mode, worker and run where the chart has several."""
    quantities = {ln.quantity for ln in lines}
    modes = {ln.mode for ln in lines}
    workers = {ln.worker for ln in lines}
    runs = {ln.run for ln in lines}
    out = []
    for ln in lines:
        parts = [ln.quantity] if len(quantities) > 1 else []
        if len(modes) > 1:
            parts.append(ln.mode)
        if len(workers) > 1:
            parts.append(ln.worker)
        if len(runs) > 1:
            parts.append(f"[{ln.run}]")
        out.append(" ".join(parts) or ln.quantity)
    return out
