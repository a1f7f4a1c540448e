"""The HTML report of ``smdebug report`` in a real browser (Debian's headless Chromium): it renders
with no console message, every embedded plot decodes to an image of its declared size, and a
screenshot shows the plots."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time

import numpy as np
import pytest

from _cli_runs import console_messages, dump_dom, mlp_run, screenshot  # noqa: F401 - mlp_run is a fixture

pytest.importorskip("matplotlib", reason="smdebug report needs matplotlib (smdebug-core[cli])")
pytestmark = pytest.mark.browser

# Test-only probe, added to a copy of the report: after the load event it writes, for every image,
# [alt, naturalWidth, naturalHeight, complete] into an attribute that --dump-dom shows. (The report
# itself has no script.)
PROBE = (
    "<script>window.addEventListener('load', function () {"
    "document.body.setAttribute('data-images', JSON.stringify(Array.from(document.images).map("
    "function (i) { return [i.alt, i.naturalWidth, i.naturalHeight, i.complete]; })));});</script>"
)


def _with_probe(page_path, out_path):
    text = page_path.read_text(encoding="utf-8")
    out_path.write_text(text.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    return out_path


def _loaded_images(chromium, page):
    out = dump_dom(chromium, page)
    assert out.returncode == 0, out.stderr[-2000:]
    match = re.search(r'data-images="([^"]*)"', out.stdout)
    assert match, "the probe did not run: " + out.stdout[:500]
    import html

    return json.loads(html.unescape(match.group(1))), out


@pytest.fixture(scope="module")
def report_page(mlp_run, tmp_path_factory):
    path, _ = mlp_run
    where = tmp_path_factory.mktemp("browser")
    results = where / "rules.json"
    results.write_text(json.dumps({
        "trial": "mlp", "status": "IssuesFound", "started": time.time() - 2, "finished": time.time(),
        "training_ended": True, "last_step": 49, "steps_evaluated": 50,
        "rules": [{"name": "LossNotDecreasing", "status": "IssuesFound", "steps_evaluated": 50,
                   "findings": [{"step": 30, "reason": "loss went up", "mode": "TRAIN", "mode_step": 25}],
                   "findings_total": 1, "params": {}, "error": None}],
    }))
    out = subprocess.run([sys.executable, "-m", "smdebug.cli", "report", str(path), "-o", str(where / "report.html"),
                          "--rules", str(results)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return where / "report.html"


def test_checks_catch_console_errors_and_broken_images(chromium, tmp_path):
    """The detection itself works: a page with a console error and a broken image is caught."""
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><html><body><img alt="broken" src="data:image/png;base64,AAAA">'
                   "<script>console.error('deliberate'); undefinedFunction();</script></body></html>")
    images, out = _loaded_images(chromium, _with_probe(bad, tmp_path / "bad-probe.html"))
    assert images == [["broken", 0, 0, True]]
    messages = console_messages(out.stderr)
    assert any("deliberate" in m for m in messages) and any("undefinedFunction" in m for m in messages)


def test_report_renders_without_console_messages(chromium, report_page, tmp_path):
    out = dump_dom(chromium, report_page)
    assert out.returncode == 0, out.stderr[-2000:]
    assert console_messages(out.stderr) == []
    dom = out.stdout
    for sid in ("run", "rules", "losses", "metrics", "weights", "gradients"):
        assert f'<section id="{sid}">' in dom
    assert dom.count("<img ") == 4 and "LossNotDecreasing" in dom


def test_report_images_decode_in_the_browser(chromium, report_page, tmp_path):
    images, out = _loaded_images(chromium, _with_probe(report_page, tmp_path / "probe.html"))
    assert console_messages(out.stderr) == []
    declared = re.findall(r'<img src="data:[^"]*" alt="([^"]*)" width="(\d+)" height="(\d+)"',
                          report_page.read_text(encoding="utf-8"))
    assert len(images) == len(declared) == 4
    for (alt, width, height, complete), (d_alt, d_width, d_height) in zip(images, declared):
        assert complete and alt == d_alt
        assert (width, height) == (int(d_width), int(d_height)), alt  # decoded, at its real size


def test_report_screenshot_shows_the_plots(chromium, report_page, tmp_path):
    from matplotlib.image import imread

    shot = tmp_path / "shot.png"
    out = screenshot(chromium, report_page, shot, width=1200, height=2400)
    assert out.returncode == 0 and shot.exists(), out.stderr[-2000:]
    pixels = imread(str(shot))[..., :3]
    assert pixels.shape[:2] == (2400, 1200)
    # not blank: the page has its dark header, text, and the plots' coloured lines
    assert pixels.std() > 0.1
    header = pixels[:40].reshape(-1, 3).mean(axis=0)
    assert header.max() < 0.4  # the dark blue header band was painted
    blue = (np.abs(pixels[..., 0] - 0x1F / 255) < 0.06) & (np.abs(pixels[..., 1] - 0x77 / 255) < 0.06) \
        & (np.abs(pixels[..., 2] - 0xB4 / 255) < 0.06)
    orange = (np.abs(pixels[..., 0] - 0xFF / 255) < 0.06) & (np.abs(pixels[..., 1] - 0x7F / 255) < 0.06) \
        & (np.abs(pixels[..., 2] - 0x0E / 255) < 0.06)
    assert blue.sum() > 500 and orange.sum() > 200, (blue.sum(), orange.sum())  # TRAIN and EVAL lines
