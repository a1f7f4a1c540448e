"""``smdebug report`` of a run of thousands of tensors (probe 14c F9): at most MAX_NORM_CHARTS norm charts
per section and a note of what is left out; only the tensors drawn are read. One chart per 16 tensors
made 1,268 charts, an 88.6 MB page and 3.4 GB of memory for 20,000 gradient tensors.

The run is written by the real writer."""

from __future__ import annotations

import html
import re

import numpy as np
import pytest

from _support import write_run

pytest.importorskip("bokeh", reason="smdebug report needs bokeh (smdebug-core[cli])")


TENSORS = 3000


@pytest.fixture(scope="module")
def wide_run(tmp_path_factory):
    """A finished run of TENSORS weight tensors at 3 steps, written by the real writer (one value each: no
    histogram charts, whose drawing would only slow the test)."""
    root = tmp_path_factory.mktemp("wide") / "run"
    names = [f"w/layer{i:05d}.weight" for i in range(TENSORS)]
    write_run(str(root), range(3), tensors=lambda step, w: {
        n: np.array([i + step], np.float32) for i, n in enumerate(names)})
    return root, names


def test_a_run_of_thousands_of_tensors_gets_a_bounded_page(wide_run, smdebug_cli, tmp_path):
    from smdebug.cli.report.content import LINES_PER_CHART, MAX_NORM_CHARTS

    run, names = wide_run
    out = smdebug_cli("report", str(run), "-o", str(tmp_path / "r.html"))
    assert out.returncode == 0, out.stderr
    page = html.unescape((tmp_path / "r.html").read_text(encoding="utf-8"))
    weights = re.search(r'<section id="weights">(.*?)</section>', page, re.S).group(1)
    norm_charts = re.findall(r"<h3>Weights: l2 norm per tensor[^<]*</h3>", weights)
    assert 0 < len(norm_charts) <= MAX_NORM_CHARTS, len(norm_charts)
    drawn = MAX_NORM_CHARTS * LINES_PER_CHART
    assert f"{TENSORS - drawn:,} of {TENSORS:,} weight tensors are not drawn" in weights, weights[-3000:]
    assert "smdebug ls RUN --collection weights" in weights and "smdebug plot RUN" in weights
    assert (tmp_path / "r.html").stat().st_size < 8 << 20
    # the first and the last of the names are drawn (the input's and the output's layers)
    assert names[0] in page and names[-1] in page and names[TENSORS // 2 + 1] not in page


def test_tensors_a_finding_is_about_are_drawn_and_only_the_drawn_ones_are_read(wide_run):
    from smdebug.cli.report import content
    from smdebug.cli.report import verdicts as vd
    from smdebug.cli.report.lines import LineReader
    from smdebug.trials import create_trial

    run, names = wide_run
    trial = create_trial(str(run))
    info = content.RunInfo("run", trial, LineReader(trial))
    about = names[1234]
    info.rules = vd.RuleResults(source="doc", status="IssuesFound", verdicts=[vd.Verdict(
        name="R", status="IssuesFound", findings=[vd.Finding("R", 1, None, None, "big", tensor=about)])])
    read = []
    lines = info.reader.lines

    def counted(wanted, **kw):  # (the real reader, with what it was asked to read noted)
        read.extend(wanted)
        return lines(wanted, **kw)

    info.reader.lines = counted
    weights = next(s for s in content.build([info]) if s.sid == "weights")
    drawn = {ln.tensor for c in weights.charts for ln in c.lines}
    assert about in drawn and names[0] in drawn and names[-1] in drawn
    assert len(drawn) == content.MAX_NORM_CHARTS * content.LINES_PER_CHART
    assert len(set(read)) <= len(drawn), len(set(read))
