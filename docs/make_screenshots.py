"""Make the README's report screenshot with the project's own tooling.

    python docs/make_screenshots.py [--keep DIR]

1. trains a small two-layer network in numpy with a hook attached (packages/smdebug-core/tests/_cli_runs.py,
   the run the CLI tests use, longer): TRAIN and EVAL steps, weights, biases, gradients, loss, accuracy;
2. when smdebug-rules is installed, runs ``smdebug rules run`` over it and saves the result as the run's
   rule_results.json, where ``smdebug report`` finds it;
3. writes the report with ``smdebug report``;
4. opens it in headless Chromium (Debian's ``chromium``, driven by Playwright; set SMDEBUG_CHROMIUM to use
   another binary), waits for the interactive charts to be drawn, hovers the loss curve so the picture
   shows a tooltip, takes a screenshot, shrinks it with Pillow and writes docs/images/report.png (kept
   under 300 KB).

Needs smdebug-core[cli] (Bokeh; matplotlib brings Pillow), playwright (the Python package only) and
chromium. ``--keep DIR`` keeps the run and the report there instead of a temporary directory.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "packages" / "smdebug-core" / "tests"
OUT = ROOT / "docs" / "images" / "report.png"
MAX_BYTES = 300_000


def run_smdebug(*args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "smdebug.cli", *args]
    print("$ smdebug " + " ".join(args), flush=True)
    return subprocess.run(cmd, text=True, capture_output=True)


def take_screenshot(chromium: str, page: Path, out: Path, width: int, height: int) -> None:
    """The page once its charts are drawn, the loss curve hovered (a tooltip shows a value)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        try:
            tab = browser.new_page(viewport={"width": width, "height": height})
            tab.goto(page.resolve().as_uri())
            tab.wait_for_selector("body[data-smd-ready='1']", timeout=120_000)
            x, y = tab.evaluate("""() => {
              const wrap = [...document.querySelectorAll('div.chart')].find(d => d.querySelector('h3').textContent === 'loss');
              const fig = Bokeh.documents[0].get_model_by_name(wrap.dataset.chart);
              const v = Bokeh.index.get(fig), r = v.canvas_view.el.getBoundingClientRect();
              const src = fig.renderers.find(r => r.tags && r.tags.indexOf('smd-raw') >= 0).data_source.data;
              let i = Math.floor(src.x.length * 0.6);
              while (i < src.y.length - 1 && !isFinite(src.y[i])) { i++; }  // (NaN: a break in the line)
              return [r.left + v.frame.x_scale.compute(src.x[i]), r.top + v.frame.y_scale.compute(src.y[i])];
            }""")
            tab.mouse.move(x - 20, y - 20)
            tab.mouse.move(x, y, steps=3)
            tab.wait_for_timeout(400)
            tab.screenshot(path=str(out))
        finally:
            browser.close()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", metavar="DIR", help="write the run and the report here")
    parser.add_argument("--output", default=str(OUT), help=f"screenshot file (default {OUT.relative_to(ROOT)})")
    args = parser.parse_args(argv)

    sys.path.insert(0, str(TESTS))
    from _cli_runs import find_chromium, write_mlp_run  # the tests' training loop and browser helper

    chromium = find_chromium()
    if chromium is None:
        print("chromium is not installed: apt-get install -y chromium (or set SMDEBUG_CHROMIUM)", file=sys.stderr)
        return 2
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="smdebug-docs-"))
    work.mkdir(parents=True, exist_ok=True)
    run = work / "mlp-run"
    if run.exists():
        import shutil

        shutil.rmtree(run)
    write_mlp_run(run, epochs=5, steps_per_epoch=40, eval_steps=5, save_interval=1)
    print(f"trained: {run}")

    try:
        import importlib

        importlib.import_module("smdebug.rules")
    except ImportError:
        print("smdebug-rules is not installed: the report will have no rule verdicts")
    else:
        out = run_smdebug("rules", "run", str(run), "--rule", "loss_not_decreasing", "--rule", "vanishing_gradient",
                      "--rule", "exploding_tensor", "-o", str(run / "rule_results.json"), "-q")
        if out.returncode not in (0, 1):
            print(out.stdout + out.stderr, file=sys.stderr)
            return 1

    report = work / "report.html"
    out = run_smdebug("report", str(run), "-o", str(report), "--title", "smdebug report: mlp-run")
    print(out.stdout + out.stderr, end="")
    if out.returncode != 0:
        return 1

    raw = work / "report-full.png"
    try:
        take_screenshot(chromium, report, raw, width=1200, height=2050)
    except Exception as e:  # noqa: BLE001 - say what failed, not a traceback
        print(f"could not take the screenshot: {e}", file=sys.stderr)
        return 1

    from PIL import Image

    image = Image.open(raw).convert("RGB")
    width = 900
    image = image.resize((width, round(image.height * width / image.width)), Image.LANCZOS)
    image = image.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)  # < 300 KB
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    image.save(output, optimize=True)
    size = os.path.getsize(output)
    print(f"wrote {output} ({image.width}x{image.height}, {size // 1024} KB)")
    if size > MAX_BYTES:
        print(f"{output} is larger than {MAX_BYTES // 1000} KB", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
