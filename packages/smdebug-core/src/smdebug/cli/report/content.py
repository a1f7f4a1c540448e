"""What goes into a report: the sections a run holds data for, and the charts' data.

A section is there only when the run (or one of the compared runs) has something for it, decided from
the run's collections and the tensors in them, never from the framework's name:

- losses and metrics: the collections losses, metrics, sm_metrics, scalars (and ``scalar/`` tensors);
- weights and gradients: l2 norms per tensor over steps, and histograms over steps where raw values
  were saved;
- activations: collections named ``*activations`` (``relu_activations``, ``tanh_activations``, ...): the
  share of dead (ReLU) or saturated (tanh, sigmoid) values over steps;
- XGBoost: feature importance over rounds, a SHAP summary, tree depth per round (the collections
  feature_importance, average_shap / full_shap, trees);
- workers: runs written by several workers get their gradient norms per worker;
- rules: verdicts, with each finding marked on the chart of the tensor it is about.

Charts are plain data here (:class:`Chart`); :mod:`.charts` draws them.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

import numpy as np

from smdebug.cli.report import verdicts as vd
from smdebug.cli.report.lines import Line, LineReader, merge_workers_first, mode_order

LOSS_COLLECTIONS = ("losses",)
METRIC_COLLECTIONS = ("metrics", "sm_metrics", "scalars")
WEIGHT_COLLECTIONS = ("weights", "biases")
GRADIENT_COLLECTIONS = ("gradients",)
XGB_COLLECTIONS = ("feature_importance", "average_shap", "full_shap", "trees")

MAX_SCALAR_CHARTS = 24
LINES_PER_CHART = 16  # norm charts: more tensors are split over several charts
#: norm charts per section at most (so MAX_NORM_CHARTS * LINES_PER_CHART tensors), as the other sections
#: are bounded: the page, its build and what is read for it stay the same size however many tensors a run has
MAX_NORM_CHARTS = 8
MAX_HISTOGRAMS = 12  # tensors with a histogram-over-steps chart, per section
HISTOGRAM_STEPS = 60  # steps read for a histogram chart
HISTOGRAM_BINS = 40
ACTIVATION_STEPS = 200  # steps read for an activation share line
MAX_FEATURES = 12  # features drawn per importance chart
MAX_SHAP_FEATURES = 20
SHAP_POINTS = 300  # rows per feature in the SHAP spread
WORKER_LAYERS = 6  # gradient tensors compared per worker

# share of values beyond which an activation counts as saturated: outputs of tanh (|y| >= 0.97) and
# sigmoid (y <= 0.03 or y >= 0.97), and the inputs giving them
SATURATION = 0.97


@dataclass
class Chart:
    kind: str  # "lines", "heatmap", "bars", "spread", "timeline"
    title: str
    key: str = ""  # what the chart is of, to place rule markers (tensor name or collection)
    lines: List[Line] = field(default_factory=list)
    y_label: str = ""
    x_label: str = "step"
    logy: bool = False
    note: str = ""
    markers: List[dict] = field(default_factory=list)  # rule findings drawn on it
    data: dict = field(default_factory=dict)  # heatmap / bars / spread / timeline data
    smooth: bool = True  # offered to the smoothing slider


@dataclass
class Section:
    sid: str
    title: str
    intro: str = ""
    charts: List[Chart] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)


@dataclass
class RunInfo:
    label: str
    trial: object
    reader: LineReader
    rules: Optional[vd.RuleResults] = None
    groups: dict = field(default_factory=dict)  # groups_of(trial), set by build()


def members(trial, names: Sequence[str], collection_names: Sequence[str], exclude=()) -> List[str]:
    colls = [trial.collections()[cn] for cn in collection_names if cn in trial.collections()]
    exclude = set(exclude)  # (a list of thousands of names, tested for each name, was quadratic)
    return [n for n in names if n not in exclude and any(c.matches(n) for c in colls)]


def groups_of(trial) -> dict:
    """Which tensors of the run go into which section."""
    names = trial.tensor_names()
    colls = trial.collections()
    losses = members(trial, names, LOSS_COLLECTIONS)
    metrics = members(trial, names, METRIC_COLLECTIONS, exclude=losses)
    known = set(metrics) | set(losses)
    metrics += [n for n in names if n.startswith("scalar/") and n not in known]
    taken = set(losses) | set(metrics)
    xgb = {c: members(trial, names, (c,), exclude=taken) for c in XGB_COLLECTIONS}
    taken |= {n for ns in xgb.values() for n in ns}
    weights = members(trial, names, WEIGHT_COLLECTIONS, exclude=taken)
    gradients = members(trial, names, GRADIENT_COLLECTIONS, exclude=taken | set(weights))
    activations = {}
    for cname in sorted(colls):
        if cname.lower().endswith("activations"):
            found = members(trial, names, (cname,), exclude=taken)
            if found:
                activations[cname] = found
    return {"losses": losses, "metrics": sorted(metrics), "weights": weights, "gradients": gradients,
            "activations": activations, "xgb": {k: v for k, v in xgb.items() if v}}


def is_boosting(groups: dict) -> bool:
    return bool(groups["xgb"])


def _norm_modes(lines_by_name: Dict[str, List[Line]]) -> Optional[set]:
    """Norm charts show one mode: TRAIN when the tensors were saved in it (weights saved at EVAL steps
    are the same weights again), else every mode they have."""
    modes = {ln.mode for ls in lines_by_name.values() for ln in ls}
    return {"TRAIN"} if "TRAIN" in modes else None


def _label(run: RunInfo, many: bool) -> str:
    return run.label if many else ""


def _with_run(lines: List[Line], run: str) -> List[Line]:
    for ln in lines:
        ln.run = run
    return lines


# --------------------------------------------------------------------------------------------------
# sections
# --------------------------------------------------------------------------------------------------
def build(runs: List[RunInfo]) -> List[Section]:
    many = len(runs) > 1
    groups = [groups_of(r.trial) for r in runs]
    for r, g in zip(runs, groups):
        r.groups = g
    sections: List[Section] = []
    boosting = any(is_boosting(g) for g in groups)
    x_label = "step (boosting round)" if boosting else "step"
    sections.append(_scalars(runs, groups, many, x_label))
    sections.append(_norms(runs, groups, many, "weights", "Weights", x_label))
    sections.append(_norms(runs, groups, many, "gradients", "Gradients", x_label))
    sections.append(_activations(runs, groups, many, x_label))
    sections.append(_xgboost(runs, groups, many))
    sections.append(_workers(runs, groups, many, x_label))
    return [s for s in sections if s.charts]


def _scalars(runs, groups, many, x_label) -> Section:
    sec = Section("curves", "Losses and metrics",
                  "Each saved value over the global step, one line per mode (and worker, and run). "
                  "Hover for values; drag to zoom; click a legend entry to hide it.")
    names = _union(g["losses"] + g["metrics"] for g in groups)
    shown = names[:MAX_SCALAR_CHARTS]
    per_name: Dict[str, List[Line]] = {n: [] for n in shown}
    losses = set()
    for run, g in zip(runs, groups):
        wanted = [n for n in shown if n in g["losses"] or n in g["metrics"]]
        losses.update(g["losses"])
        for n, ls in run.reader.lines(wanted).items():
            per_name[n] += _with_run(ls, _label(run, many))
    for n in shown:
        if per_name[n]:
            sec.charts.append(Chart("lines", per_name[n][0].quantity, key=n, lines=per_name[n], x_label=x_label,
                                    y_label="loss" if n in losses else "value"))
    if len(names) > len(shown):
        sec.notes.append(f"{len(names) - len(shown)} more curves left out (the first {MAX_SCALAR_CHARTS} are shown): "
                         + ", ".join(names[len(shown):len(shown) + 20]) + ("…" if len(names) > len(shown) + 20 else ""))
    return sec


def _norms(runs, groups, many, what, title, x_label) -> Section:
    sec = Section(what, title,
                  f"l2 norm of each {what[:-1]} tensor over the global step (stored by the hook when it saved "
                  "one, else computed from the saved value); TRAIN steps when the tensors were saved in TRAIN mode; "
                  "in a run of several workers, the first worker that saved each step.")
    names = _union(g[what] for g in groups)
    if not names:
        return sec
    # (only the tensors drawn are read: 20,000 gradient tensors took 9 min, 3.4 GB and 1,268 charts)
    shown = pick_norm_tensors(names, _finding_tensors(runs), MAX_NORM_CHARTS * LINES_PER_CHART)
    all_lines = _norm_lines(runs, groups, many, what, shown)
    sec.charts += _norm_charts(all_lines, shown, title, what, x_label)
    if len(shown) < len(names):
        sec.notes.append(_left_out_note(what, len(names), len(shown)))
    for run, g in zip(runs, groups):
        held = set(g[what])
        for chart in _histograms(run, [n for n in shown if n in held], many):
            sec.charts.append(chart)
    return sec


def _union(lists) -> List[str]:
    """Every name of the lists once, in the order first met (a dict: testing each name against a list of
    those kept was quadratic)."""
    return list(dict.fromkeys(n for names in lists for n in names))


def _finding_tensors(runs) -> set:
    return {f.tensor for r in runs if r.rules for v in r.rules.verdicts for f in v.findings if f.tensor}


def pick_norm_tensors(names: Sequence[str], wanted: set, limit: int) -> List[str]:
    """At most ``limit`` of ``names``, in their order: those a rule finding is about first, then the rest
    spread evenly over the names (the first and the last among them), so that the layers near the input
    and those near the output are both drawn; chosen from the names alone, without reading a value."""
    if len(names) <= limit:
        return list(names)
    first = [n for n in names if n in wanted][:limit]
    taken = set(first)
    rest = [n for n in names if n not in taken]
    room = limit - len(first)
    if room == 1:
        taken.add(rest[0])
    elif room > 1:
        taken.update(rest[round(i * (len(rest) - 1) / (room - 1))] for i in range(room))
    return [n for n in names if n in taken]


def _norm_lines(runs, groups, many, what, shown) -> List[Line]:
    all_lines: List[Line] = []
    for run, g in zip(runs, groups):
        held = set(g[what])
        wanted = [n for n in shown if n in held]
        by_name = run.reader.lines(wanted, kind="l2")
        modes = _norm_modes(by_name)
        for n in wanted:
            ls = [ln for ln in by_name[n] if modes is None or ln.mode in modes]
            all_lines += _with_run(merge_workers_first(ls), _label(run, many))
    return all_lines


def _norm_charts(all_lines, shown, title, what, x_label) -> List[Chart]:
    parts = math.ceil(len(shown) / LINES_PER_CHART)
    charts = []
    for i in range(0, len(shown), LINES_PER_CHART):
        chunk = set(shown[i:i + LINES_PER_CHART])
        lines = [ln for ln in all_lines if ln.tensor in chunk]
        if not lines:
            continue
        part = f" ({i // LINES_PER_CHART + 1} of {parts})" if parts > 1 else ""
        charts.append(Chart("lines", f"{title}: l2 norm per tensor{part}", key=what, lines=lines,
                            y_label="l2 norm", x_label=x_label, logy=_wide_positive(lines)))
    return charts


def _left_out_note(what: str, total: int, drawn: int) -> str:
    collection = "gradients" if what == "gradients" else "weights"
    return (f"{total - drawn:,} of {total:,} {what[:-1]} tensors are not drawn (at most {MAX_NORM_CHARTS} charts "
            f"of {LINES_PER_CHART} tensors): drawn are those a rule finding is about, and others spread evenly "
            "over the names in order, the first and the last included. List them all with: "
            f"smdebug ls RUN --collection {collection}; draw any of them with: "
            "smdebug plot RUN NAME-OR-REGEX -o FILE.png")


def _wide_positive(lines: List[Line]) -> bool:
    """Log scale when every value is positive and they span more than two orders of magnitude."""
    vals = np.concatenate([ln.values[np.isfinite(ln.values)] for ln in lines] or [np.empty(0)])
    return bool(len(vals)) and bool((vals > 0).all()) and float(vals.max() / vals.min()) > 100


def _spread_steps(steps: Sequence[int], n: int) -> List[int]:
    from smdebug.cli._common import subsample

    return subsample(list(steps), n)


def _histograms(run: RunInfo, names: Sequence[str], many: bool) -> List[Chart]:
    """Histograms over steps (a heatmap: step x value, colour = share of the values) for tensors whose
    raw values were saved; at most HISTOGRAM_STEPS steps of the first worker."""
    from smdebug.trials.table import long_table

    trial = run.trial
    charts = []
    for n in names:
        if len(charts) >= MAX_HISTOGRAMS:
            break
        t = trial.tensor(n)
        steps = t.steps()
        train = [s for s in steps if (trial.mode(s) is None or trial.mode(s).name == "TRAIN")]
        picked = _spread_steps(train or steps, HISTOGRAM_STEPS)
        if not picked:
            continue
        first_worker = trial.workers()[0] if trial.workers() else None
        table = long_table(trial, tensors=[n], steps=picked, workers=[first_worker] if first_worker else None)
        pairs = [(g, np.asarray(v, dtype=np.float64).reshape(-1)) for g, v in zip(table["step"], table["value"])
                 if np.asarray(v).dtype.kind in "biuf" and np.asarray(v).size > 1]
        if len(pairs) < 2:
            continue
        finite = np.concatenate([v[np.isfinite(v)] for _, v in pairs])
        if not len(finite):
            continue
        lo, hi = float(finite.min()), float(finite.max())
        if hi <= lo:
            hi = lo + 1.0
        # (halved, then doubled back exactly, when the span itself overflows: finite values of a diverged
        # float64 tensor near +-1.8e308 made every edge infinite, and np.histogram refused them)
        edges = (np.linspace(lo, hi, HISTOGRAM_BINS + 1) if np.isfinite(hi - lo)
                 else np.linspace(lo / 2, hi / 2, HISTOGRAM_BINS + 1) * 2)
        counts = np.stack([np.histogram(v[np.isfinite(v)], bins=edges)[0] / max(1, v.size) for _, v in pairs], axis=1)
        steps_read = [int(g) for g, _ in pairs]
        charts.append(Chart("heatmap", f"{n}: histogram over steps" + (f" ({run.label})" if many else ""), key=n,
                            x_label="step", y_label="value", smooth=False,
                            data={"steps": steps_read, "edges": edges.tolist(), "share": counts},
                            note=f"share of the values in each of {HISTOGRAM_BINS} bins at {len(steps_read)} steps"))
    return charts


_HARDTANH = re.compile(r"^Hardtanh\(min_val=([-+0-9.eE]+), max_val=([-+0-9.eE]+)\)$")


def _activation_measure(collection: str, tensor: str, layer_type: Optional[str] = None):
    """(label, function of the values) for an activation collection, or None where no measure fits.
    ``layer_type``: the type the hook recorded for the tensor's layer (see :func:`_layer_types`); the hard
    variants PyTorch puts in the relu/tanh/sigmoid collections die or saturate where they go flat, not where
    their smooth kin do."""
    kind = collection.lower()[: -len("activations")].rstrip("_") or ""
    is_input = "input" in tensor.lower() and "output" not in tensor.lower()
    layer_type = layer_type or ""
    if layer_type.startswith("Hardswish"):  # (0, with no gradient, at or below -3; negative but alive above)
        if is_input:
            return "dead share (inputs <= -3)", lambda v: float(np.mean(v <= -3))
        return "dead share (values == 0)", lambda v: float(np.mean(v == 0))
    hardtanh = _HARDTANH.match(layer_type)
    if hardtanh:
        low, high = float(hardtanh.group(1)), float(hardtanh.group(2))
        return (f"saturated share (x <= {low:g} or x >= {high:g})",
                lambda v: float(np.mean((v <= low) | (v >= high))))
    if layer_type.startswith("Hardsigmoid"):
        if is_input:
            return "saturated share (|x| >= 3)", lambda v: float(np.mean(np.abs(v) >= 3))
        return "saturated share (y <= 0 or y >= 1)", lambda v: float(np.mean((v <= 0) | (v >= 1)))
    if kind in ("relu", "relu6"):
        return "dead share (values <= 0)", lambda v: float(np.mean(v <= 0))
    if kind == "tanh":
        bound = math.atanh(SATURATION) if is_input else SATURATION
        return f"saturated share (|x| >= {bound:.3g})", lambda v: float(np.mean(np.abs(v) >= bound))
    if kind == "sigmoid":
        if is_input:
            b = math.log(SATURATION / (1 - SATURATION))
            return f"saturated share (|x| >= {b:.3g})", lambda v: float(np.mean(np.abs(v) >= b))
        return (f"saturated share (y <= {1 - SATURATION:.2g} or y >= {SATURATION})",
                lambda v: float(np.mean((v <= 1 - SATURATION) | (v >= SATURATION))))
    return None


def _layer_types(layers, collection: str, names: List[str]) -> Dict[str, str]:
    """{tensor: the type the hook recorded for its layer} for ``names`` of an activation collection, from the
    run's record of its activation layers (``activation_layers(trial)``; None: no record, no types)."""
    out: Dict[str, str] = {}
    for layer in (layers or {}).get(collection, []):
        for n in layer.input_names(names) + layer.output_names(names):
            out.setdefault(n, layer.type)
    return out


def _activations(runs, groups, many, x_label) -> Section:
    from smdebug.trials.table import long_table

    sec = Section("activations", "Activations",
                  "Share of dead (ReLU) or saturated (tanh, sigmoid) values of each saved activation over steps, "
                  f"from the raw values at up to {ACTIVATION_STEPS} steps.")
    from smdebug.core.activations import activation_layers

    for run, g in zip(runs, groups):
        layers = activation_layers(run.trial) if g["activations"] else None  # (read once per run)
        for cname, names in g["activations"].items():
            outputs = [n for n in names if "output" in n.lower()]
            chosen = outputs or names
            types = _layer_types(layers, cname, chosen)
            lines = []
            label = None
            for n in chosen:
                measure = _activation_measure(cname, n, types.get(n))
                if measure is None:
                    continue
                label, fn = measure
                steps = _spread_steps(run.trial.tensor(n).steps(), ACTIVATION_STEPS)
                table = long_table(run.trial, tensors=[n], steps=steps)
                acc: Dict[tuple, list] = {}
                for g_, m, ms, w, v in zip(table["step"], table["mode"], table["mode_step"], table["worker"], table["value"]):
                    arr = np.asarray(v)
                    if arr.dtype.kind not in "biuf" or arr.size == 0:
                        continue
                    acc.setdefault((m, w), []).append((int(g_), int(ms), fn(arr)))
                for (m, w), pts in sorted(acc.items(), key=lambda kv: (mode_order(kv[0][0]), kv[0][1])):
                    lines.append(Line(n, n, m, w, np.array([p[0] for p in pts], np.int64),
                                      np.array([p[1] for p in pts], np.int64), np.array([p[2] for p in pts]),
                                      _label(run, many)))
            if lines:
                sec.charts.append(Chart("lines", f"{cname}: {label}" + (f" ({run.label})" if many else ""), key=cname,
                                        lines=lines, y_label="share", x_label=x_label))
            else:
                sec.notes.append(f"{cname}: no dead/saturation measure for this kind of activation")
    return sec


def _xgboost(runs, groups, many) -> Section:
    sec = Section("xgboost", "Boosting: feature importance, SHAP, trees",
                  "What the XGBoost hook saved per boosting round.")
    for run, g in zip(runs, groups):
        xgb = g["xgb"]
        suffix = f" ({run.label})" if many else ""
        by_type: Dict[str, List[str]] = {}
        for n in xgb.get("feature_importance", []):
            parts = n.split("/", 2)
            by_type.setdefault(parts[1] if len(parts) == 3 else "importance", []).append(n)
        for itype, names in by_type.items():
            lines_by = run.reader.lines(names)
            lines = [ln for ls in lines_by.values() for ln in ls]
            last = {n: (ls[-1].values[-1] if ls and len(ls[-1].values) else -np.inf) for n, ls in lines_by.items()}
            top = sorted(names, key=lambda n: -last[n] if np.isfinite(last[n]) else np.inf)[:MAX_FEATURES]
            shown = [ln for ln in lines if ln.tensor in top]
            for ln in shown:
                ln.quantity = ln.tensor.split("/", 2)[-1]
            note = (f"the {MAX_FEATURES} features with the highest importance at the last round of {len(names)}"
                    if len(names) > MAX_FEATURES else "")
            if shown:
                sec.charts.append(Chart("lines", f"feature importance ({itype}) over rounds{suffix}", key="feature_importance",
                                        lines=_with_run(shown, _label(run, many)), y_label="share of the total",
                                        x_label="boosting round", note=note))
        shap = _shap_chart(run, xgb, suffix)
        if shap is not None:
            sec.charts.append(shap)
        trees = _trees_chart(run, xgb, suffix, many)
        if trees is not None:
            sec.charts.append(trees)
    return sec


def _shap_chart(run, xgb, suffix) -> Optional[Chart]:
    trial = run.trial
    full = xgb.get("full_shap", [])
    if full:
        last = max(max(trial.tensor(n).steps() or [-1]) for n in full)
        rows = _shap_columns(trial, full, last)
        if not rows:
            return None
        ranked = sorted(rows, key=lambda n: -float(np.mean(np.abs(rows[n]))))[:MAX_SHAP_FEATURES]
        rng = np.random.default_rng(0)
        spread = {}
        for n in ranked:
            v = rows[n]
            spread[n] = v if len(v) <= SHAP_POINTS else rng.choice(v, SHAP_POINTS, replace=False)
        return Chart("spread", f"SHAP summary at round {last}{suffix}", key="full_shap", smooth=False,
                     x_label="SHAP value (impact on the model's output)", y_label="feature",
                     data={"features": ranked,
                           "mean_abs": [float(np.mean(np.abs(rows[n]))) for n in ranked], "values": spread,
                           "rows": int(max(len(v) for v in rows.values()))},
                     note=f"features by mean |SHAP| over the rows (bars); each dot one row (up to {SHAP_POINTS} per feature)")
    avg = [n for n in xgb.get("average_shap", []) if n.startswith("average_shap/")]
    if not avg:
        return None
    lines_by = run.reader.lines(avg)
    last_vals = {n: float(ls[-1].values[-1]) for n, ls in lines_by.items() if ls and len(ls[-1].values)}
    ranked = sorted(last_vals, key=lambda n: -abs(last_vals[n]))[:MAX_SHAP_FEATURES]
    last = max(int(ls[-1].steps[-1]) for ls in lines_by.values() if ls and len(ls[-1].steps))
    return Chart("bars", f"SHAP summary at round {last}{suffix}", key="average_shap", smooth=False,
                 x_label="mean SHAP value over the rows (signed)", y_label="feature",
                 data={"features": [n.split("/", 1)[-1] for n in ranked], "values": [last_vals[n] for n in ranked]},
                 note="only average_shap was saved (signed means); save full_shap for mean |SHAP| and the spread")


def _shap_columns(trial, names: List[str], step: int) -> Dict[str, np.ndarray]:
    """Each feature's SHAP values (flattened over rows and outputs) at ``step``, by feature name.

    The XGBoost hook saves, as smdebug 1.0.x did, the whole ``(rows[, outputs], features + 1)`` matrix under
    every ``full_shap/<feature>`` name (bias last), so one read gives every feature; which column is which
    feature comes from the ``f<i>`` names XGBoost gives unnamed features, else from the run's
    ``average_shap/<feature>`` means (each column's mean is its feature's saved average). A run whose
    ``full_shap/<feature>`` tensors are single columns is read column by column.
    """
    features = [n.split("/", 1)[-1] for n in names]
    try:
        first = np.asarray(trial.tensor(names[0]).value(step), dtype=np.float64)
    except Exception:  # noqa: BLE001 - a damaged record leaves the chart out, the rest of the report stays
        return {}
    if first.ndim < 2 or first.shape[-1] < 2:
        out = {}
        for name, feature in zip(names, features):
            try:
                out[feature] = np.asarray(trial.tensor(name).value(step), dtype=np.float64).reshape(-1)
            except Exception:  # noqa: BLE001
                continue
        return out
    columns = first.reshape(-1, first.shape[-1])[:, :-1]  # the bias column is no feature
    index = _shap_column_index(trial, features, columns, step)
    if index is None:
        return {f"column {i}": columns[:, i] for i in range(columns.shape[1])}
    return {feature: columns[:, i] for feature, i in index.items()}


def _shap_column_index(trial, features: List[str], columns: np.ndarray, step: int) -> Optional[Dict[str, int]]:
    width = columns.shape[1]
    numbered = {}
    for feature in features:
        if feature[:1] == "f" and feature[1:].isdigit() and int(feature[1:]) < width:
            numbered[feature] = int(feature[1:])
    if len(numbered) == len(features) and len(set(numbered.values())) == len(features):
        return numbered
    if len(features) != width:
        return None
    means = columns.mean(axis=0)
    index: Dict[str, int] = {}
    free = set(range(width))
    for feature in features:
        try:
            saved = float(np.asarray(trial.tensor("average_shap/" + feature).value(step)).reshape(-1)[0])
        except Exception:  # noqa: BLE001 - not saved at this step: the columns stay unnamed
            return None
        best = min(free, key=lambda i: abs(means[i] - saved))
        free.discard(best)
        index[feature] = best
    return index


def _trees_chart(run, xgb, suffix, many) -> Optional[Chart]:
    from smdebug.trials.table import long_table

    if "trees/Depth" not in xgb.get("trees", []):
        return None
    table = long_table(run.trial, tensors=["trees/Depth"])
    pts: Dict[tuple, list] = {}
    for g, m, ms, w, v in zip(table["step"], table["mode"], table["mode_step"], table["worker"], table["value"]):
        d = np.asarray(v, dtype=np.float64).reshape(-1)
        if d.size:
            pts.setdefault((m, w), []).append((int(g), int(ms), float(d.max()), float(d.mean()), float(d.size)))
    lines = []
    for (m, w), p in sorted(pts.items(), key=lambda kv: (mode_order(kv[0][0]), kv[0][1])):
        steps = np.array([q[0] for q in p], np.int64)
        ms = np.array([q[1] for q in p], np.int64)
        for j, what in ((2, "max depth"), (3, "mean node depth")):
            lines.append(Line("trees/Depth", what, m, w, steps, ms, np.array([q[j] for q in p]), _label(run, many)))
    if not lines:
        return None
    return Chart("lines", f"tree depth per round{suffix}", key="trees", lines=lines, y_label="depth",
                 x_label="boosting round", note="depth of the nodes of the trees built in each round (root: 0)")


def _workers(runs, groups, many, x_label) -> Section:
    sec = Section("workers", "Workers compared",
                  "Runs written by several workers: gradient l2 norms per worker over the global step "
                  "(the total over all gradient tensors, then the largest tensors one by one).")
    for run, g in zip(runs, groups):
        if len(run.trial.workers()) < 2:
            continue
        names = g["gradients"] or g["weights"]
        what = "gradient" if g["gradients"] else "weight"
        if not names:
            continue
        by_name = run.reader.lines(names, kind="l2")
        modes = _norm_modes(by_name)
        suffix = f" ({run.label})" if many else ""
        totals: Dict[str, Dict[int, list]] = {}
        for ls in by_name.values():
            for ln in ls:
                if modes is not None and ln.mode not in modes:
                    continue
                acc = totals.setdefault(ln.worker, {})
                for s, ms, v in zip(ln.steps.tolist(), ln.mode_steps.tolist(), ln.values.tolist()):
                    acc.setdefault(s, [ms, 0.0])[1] += v * v
        total_lines = []
        for w in sorted(totals):
            steps = sorted(totals[w])
            total_lines.append(Line(f"{what}s", f"total {what} norm", "TRAIN" if modes else "GLOBAL", w,
                                    np.array(steps, np.int64), np.array([totals[w][s][0] for s in steps], np.int64),
                                    np.sqrt(np.array([totals[w][s][1] for s in steps])), _label(run, many)))
        if total_lines:
            sec.charts.append(Chart("lines", f"total {what} l2 norm per worker{suffix}", key=f"{what}s-per-worker",
                                    lines=total_lines, y_label="l2 norm", x_label=x_label))
        size = {n: max((float(np.nanmax(ln.values)) for ln in ls if len(ln.values) and np.isfinite(ln.values).any()),
                       default=0.0) for n, ls in by_name.items()}
        for n in sorted(names, key=lambda n: -size[n])[:WORKER_LAYERS]:
            ls = [ln for ln in by_name[n] if modes is None or ln.mode in modes]
            if ls:
                sec.charts.append(Chart("lines", f"l2({n}) per worker{suffix}", key=n, lines=_with_run(ls, _label(run, many)),
                                        y_label="l2 norm", x_label=x_label))
    return sec


# --------------------------------------------------------------------------------------------------
# rule findings on the charts
# --------------------------------------------------------------------------------------------------
def place_findings(sections: List[Section], runs: List[RunInfo], many: bool) -> Chart:
    """Mark each finding on the chart of the tensor it is about (a finding's ``tensor``), else on the
    run's first loss chart; every finding also goes on the run-level timeline this returns."""
    charts = [c for s in sections for c in s.charts if c.kind == "lines"]
    timeline = []
    drawn: Dict[str, List[str]] = {}  # run label -> the tensors drawn for it
    for run in runs:
        if run.rules is None:
            continue
        label = _label(run, many)
        loss_chart = next((c for c in charts if any(ln.run == label and ln.tensor in _losses(run) for ln in c.lines)), None)
        for v in run.rules.verdicts:
            for f in v.findings:
                timeline.append({"rule": (f"{run.label}: " if many else "") + v.name, "step": f.step, "mode": f.mode or "",
                                 "mode_step": "" if f.mode_step is None else f.mode_step, "reason": f.reason,
                                 "status": v.status, "tensor": f.tensor or ""})
                target, line = None, None
                about = f.tensor or _tensor_named_in(f.reason, drawn.setdefault(label, _drawn_tensors(charts, label)))
                if about:
                    for c in charts:
                        cand = [ln for ln in c.lines if ln.tensor == about and ln.run == label]
                        if cand:
                            target = c
                            line = next((ln for ln in cand if ln.mode == f.mode), cand[0])
                            break
                if target is None and loss_chart is not None:
                    target = loss_chart
                    cand = [ln for ln in loss_chart.lines if ln.run == label]
                    line = next((ln for ln in cand if ln.mode == f.mode), cand[0])
                if target is None:
                    continue
                at = line.value_at(f.step)
                y = at[1] if at is not None and math.isfinite(at[1]) else None
                target.markers.append({"step": f.step, "y": y, "rule": v.name, "status": v.status,
                                       "mode": f.mode or "", "mode_step": "" if f.mode_step is None else f.mode_step,
                                       "reason": f.reason, "run": label,
                                       "tensor": f.tensor or (f"{about} (named in the finding)" if line.tensor == about
                                                              else f"not named by the rule (shown on {line.tensor})")})
    spans = [s for r in runs for s in (r.trial.steps()[:1] + r.trial.steps()[-1:])]
    return Chart("timeline", "Findings over the run", key="rules", smooth=False, x_label="global step",
                 y_label="rule", data={"findings": timeline, "rules": _rule_rows(runs, many),
                                       "x_range": (min(spans), max(spans)) if spans else None})


def _drawn_tensors(charts, label: str) -> List[str]:
    return sorted({ln.tensor for c in charts for ln in c.lines if ln.run == label}, key=len, reverse=True)


def _tensor_named_in(reason, names: List[str]) -> Optional[str]:
    """The drawn tensor a finding's reason names first, as a whole name (``valid_loss rose ...``), for a
    finding that gives no ``tensor``: a rule judging two losses says which in its words, and the first loss
    chart would mark a validation loss's finding on the training loss. None when it names none."""
    if not isinstance(reason, str) or not reason:
        return None
    best = None
    for name in names:  # (longest first: of two names at one place, the longer is the one meant)
        at = _whole_name_at(reason, name)
        if at is not None and (best is None or at < best[0]):
            best = (at, name)
    return best[1] if best else None


def _whole_name_at(text: str, name: str) -> Optional[int]:
    """Where ``name`` first stands in ``text`` on its own (not inside a longer name: 'fc1' in
    'weights/fc1'), or None."""
    inside = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_/-")
    start = text.find(name)
    while start != -1:
        end = start + len(name)
        if (start == 0 or text[start - 1] not in inside) and (end == len(text) or text[end] not in inside):
            return start
        start = text.find(name, start + 1)
    return None


def _losses(run: RunInfo) -> List[str]:
    return run.groups.get("losses", []) if run.groups else groups_of(run.trial)["losses"]


def _rule_rows(runs, many) -> List[str]:
    return [(f"{r.label}: " if many else "") + v.name for r in runs if r.rules for v in r.rules.verdicts]
