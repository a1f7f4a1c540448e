"""The report of ``smdebug report`` in a real browser (Debian's headless Chromium, driven by Playwright):
it loads offline with no console error, hovering a point shows its value, a rule's finding sits on its
step, names from the run stay text, the smoothing slider works, and a ``--follow`` page picks up the
steps a training process writes and stops when training ends."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from _cli_runs import mlp_run  # noqa: F401 - a fixture

pytest.importorskip("bokeh", reason="smdebug report needs bokeh (smdebug-core[cli])")
sync_api = pytest.importorskip("playwright.sync_api", reason="the browser tests drive chromium with playwright")
pytestmark = pytest.mark.browser

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Where a data point of a chart is on the screen: the chart's Bokeh view maps data to canvas pixels.
POINT_TO_PIXEL = """([name, x, y]) => {
  const fig = Bokeh.documents[0].get_model_by_name(name);
  const view = Bokeh.index.get(fig);
  const r = view.canvas_view.el.getBoundingClientRect();
  return [r.left + view.frame.x_scale.compute(x), r.top + view.frame.y_scale.compute(y)];
}"""
# The text of every tooltip shown (Bokeh draws them in shadow roots).
TOOLTIPS = """() => {
  const out = [];
  (function walk(node) {
    if (node.shadowRoot) walk(node.shadowRoot);
    for (const c of node.children || []) {
      if (c.classList && [...c.classList].some(k => k.toLowerCase().includes('tooltip')) && c.offsetParent !== null
          && c.innerText.trim()) out.push(c.innerText);
      walk(c);
    }
  })(document.body);
  return out;
}"""
MARKERS = """(name) => {
  const out = [];
  Bokeh.documents[0].all_models.forEach(m => {
    if (m.tags && m.tags.indexOf('smd-findings') >= 0 && m.data_source) {
      const fig = Bokeh.documents[0].roots().find(r => r.renderers && r.renderers.indexOf(m) >= 0);
      if (!name || (fig && fig.name === name)) out.push(...Array.from(m.data_source.data.x));
    }
  });
  return out;
}"""


@pytest.fixture(scope="module")
def browser(chromium):
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


class Page:
    """A page opened offline: any request that leaves file:// is blocked and recorded."""

    def __init__(self, browser, path, wait_ready=True):
        self.page = browser.new_page(viewport={"width": 1300, "height": 1000})
        self.messages, self.requests = [], []
        self.page.on("console", lambda m: self.messages.append(f"{m.type}: {m.text}"))
        self.page.on("pageerror", lambda e: self.messages.append(f"pageerror: {e}"))
        self.page.route("**/*", self._route)
        self.page.goto(path.resolve().as_uri())
        if wait_ready:
            self.ready()

    def _route(self, route):
        if route.request.url.startswith("file:"):
            route.continue_()
        else:
            self.requests.append(route.request.url)
            route.abort()

    def ready(self, timeout=120_000):
        self.page.wait_for_selector("body[data-smd-ready='1']", timeout=timeout)

    def chart(self, title):
        for wrap in self.page.query_selector_all("div.chart"):
            if wrap.query_selector("h3").inner_text() == title:
                return wrap.get_attribute("data-chart")
        raise AssertionError(f"no chart titled {title!r}")

    def hover(self, chart, x, y):
        self.page.locator(f"#wrap-{chart}").scroll_into_view_if_needed()
        px, py = self.page.evaluate(POINT_TO_PIXEL, [chart, x, y])
        self.page.mouse.move(px - 30, py - 30)
        self.page.mouse.move(px, py, steps=3)
        self.page.wait_for_timeout(300)
        return self.page.evaluate(TOOLTIPS)

    def close(self):
        self.page.close()


def _report(*args, timeout=300):
    out = subprocess.run([sys.executable, "-m", "smdebug.cli", "report", *map(str, args)], capture_output=True,
                         text=True, timeout=timeout)
    assert out.returncode == 0, out.stderr
    return out


@pytest.fixture(scope="module")
def report_page(mlp_run, tmp_path_factory):
    path, losses = mlp_run
    where = tmp_path_factory.mktemp("browser")
    results = where / "rules.json"
    results.write_text(json.dumps({
        "trial": "mlp", "status": "IssuesFound", "started": time.time() - 2, "finished": time.time(),
        "rules": [{"name": "LossNotDecreasing", "status": "IssuesFound", "steps_evaluated": 50, "findings_total": 1,
                   "findings": [{"step": 30, "reason": "loss went up", "mode": "TRAIN", "mode_step": 25, "tensor": "loss"}]},
                  {"name": "DeadRelu", "status": "NotEvaluated", "findings": [], "detail": "no relu_activations"}],
    }))
    _report(path, "-o", where / "report.html", "--rules", results)
    return where / "report.html", losses


def test_page_loads_offline_without_console_errors(browser, report_page):
    page = Page(browser, report_page[0])
    try:
        assert page.messages == [] and page.requests == []
        sections = page.page.eval_on_selector_all("section", "els => els.map(e => e.id)")
        assert sections == ["run", "rules", "curves", "weights", "gradients"]
        # every chart was drawn: a Bokeh view with a canvas of real size
        sizes = page.page.evaluate("() => Bokeh.documents[0].roots().map(f => { const v = Bokeh.index.get(f);"
                                   " const r = v.canvas_view.el.getBoundingClientRect(); return [f.name, r.width, r.height]; })")
        assert len(sizes) == 11 and all(w > 300 and h > 100 for _, w, h in sizes), sizes
    finally:
        page.close()


def test_hovering_a_point_shows_its_value(browser, report_page):
    path, losses = report_page
    page = Page(browser, path)
    try:
        chart = page.chart("loss")
        value = float(losses["TRAIN"][10])  # TRAIN step 10 is global step 10 (the first epoch)
        tips = page.hover(chart, 10, value)
        assert any("step:\t10" in t and f"value:\t{value:.6g}" in t and "TRAIN" in t for t in tips), tips
        eval_value = float(losses["EVAL"][2])  # EVAL mode step 2 is global step 22
        tips = page.hover(chart, 22, eval_value)
        assert any("step:\t22" in t and "mode step:\t2" in t and f"value:\t{eval_value:.6g}" in t for t in tips), tips
    finally:
        page.close()


def test_a_rule_marker_is_on_its_step(browser, report_page):
    path, losses = report_page
    page = Page(browser, path)
    try:
        chart = page.chart("loss")
        assert page.page.evaluate(MARKERS, chart) == [30]
        tips = page.hover(chart, 30, float(losses["TRAIN"][25]))  # global step 30 is TRAIN step 25
        assert any("rule:\tLossNotDecreasing" in t and "finding:\tloss went up" in t and "step:\t30" in t
                   for t in tips), tips
        verdicts = page.page.inner_text("table.verdicts")
        assert "NotEvaluated" in verdicts and "no relu_activations" in verdicts
    finally:
        page.close()


def test_smoothing_slider(browser, report_page):
    page = Page(browser, report_page[0])
    try:
        page.page.locator("#smd-smoothing").fill("0.9")
        page.page.wait_for_timeout(300)
        state = page.page.evaluate("""() => {
          const d = Bokeh.documents[0], alphas = [];
          d.all_models.forEach(m => {
            if (m.tags && m.tags.indexOf('smd-raw') >= 0) {
              const a = m.glyph.line_alpha;
              alphas.push(typeof a === 'object' ? a.value : a);
            }
          });
          return [d.get_model_by_name('smd-smoothing').data.w[0], alphas];
        }""")
        assert state[0] == pytest.approx(0.9) and state[1] and set(state[1]) == {0.3}
        assert page.page.inner_text("#smd-smoothing-value") == "0.90" and page.messages == []
    finally:
        page.close()


def test_names_from_the_run_stay_text(browser, tmp_path):
    """Tensor names, rule names and reasons with markup and TeX: shown as written, nothing runs."""
    from _cli_runs import write_named_losses_run

    names = ['loss<img src=x onerror="window.pwned=1">', "loss</script><script>window.pwned=2</script>",
             "lr$\\frac{a}{$ loss", "loss $$x^2$$"]
    write_named_losses_run(tmp_path / "run", names)
    (tmp_path / "run" / "rule_results.json").write_text(json.dumps({"status": "IssuesFound", "rules": [
        {"name": "<b>R</b><script>window.pwned=3</script>", "status": "IssuesFound", "findings": [
            {"step": 7, "reason": "<img src=y onerror='window.pwned=4'> $$x$$", "tensor": names[0]}]}]}))
    _report(tmp_path / "run", "-o", tmp_path / "r.html")
    page = Page(browser, tmp_path / "r.html")
    try:
        assert page.page.evaluate("window.pwned") is None
        assert page.messages == [] and page.requests == []
        titles = page.page.eval_on_selector_all("div.chart h3", "els => els.map(e => e.textContent)")
        assert set(names) <= set(titles)
        chart = page.chart(names[0])
        tips = page.hover(chart, 7, 1.0 / 8)
        assert any(f"series:\t{names[0]}" in t for t in tips), tips
        assert any("<img src=y onerror='window.pwned=4'> $$x$$" in t and "<b>R</b><script>" in t for t in tips), tips
        assert page.page.evaluate("window.pwned") is None
    finally:
        page.close()


def test_follow_mode_picks_up_new_steps(browser, tmp_path):
    """A real training process writes the run while ``--follow`` rewrites the page; the open page reloads
    itself, shows the steps written since, and stops reloading once training has ended. The trainer
    pauses after 30 steps until the test has seen the live page (so a slow machine cannot finish the
    training before the first page is written)."""
    run, out, gate = tmp_path / "run", tmp_path / "live.html", tmp_path / "go-on"
    trainer = subprocess.Popen([sys.executable, os.path.join(TESTS, "_report_jobs.py"), "slow", str(run),
                                "--epochs", "4", "--step-time", "0.05", "--pause-after", "30", "--gate", str(gate)])
    follower = subprocess.Popen([sys.executable, "-m", "smdebug.cli", "report", str(run), "-o", str(out), "--follow",
                                 "--interval", "1", "--wait", "120", "-q"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    page = None

    def body(attr):
        try:
            return page.page.get_attribute("body", attr, timeout=5000)
        except sync_api.Error:  # the page is reloading
            return None

    try:
        deadline = time.monotonic() + 400
        while not out.exists():
            assert time.monotonic() < deadline and follower.poll() is None, follower.stderr.read() if follower.poll() else ""
            time.sleep(0.2)
        page = Page(browser, out, wait_ready=False)
        while True:  # the live page, with part of the run
            assert time.monotonic() < deadline, "no live page with steps"
            last = body("data-last-step")
            if body("data-live") == "1" and last not in (None, "-"):
                first = int(last)
                break
            time.sleep(0.3)
        assert first < 99
        gate.touch()
        seen = [first]
        while time.monotonic() < deadline:
            last, live = body("data-last-step"), body("data-live")
            if last not in (None, "-"):
                seen.append(int(last))
            if live == "0":
                break
            time.sleep(0.5)
        assert trainer.wait(timeout=120) == 0
        assert follower.wait(timeout=240) == 0, follower.stderr.read()
        assert "(training ended)" in follower.stdout.read()
        assert page.page.get_attribute("body", "data-last-step") == "99", seen  # 4 epochs of 20 TRAIN + 5 EVAL steps
        assert seen == sorted(seen) and seen[0] < 99, seen  # the same tab followed the run as it grew
        page.ready()
        assert "final report: training ended." in page.page.inner_text("header")
        assert page.messages == []
        time.sleep(2.5)  # the final page no longer reloads itself
        assert page.page.get_attribute("body", "data-live") == "0"
    finally:
        for proc in (trainer, follower):
            if proc.poll() is None:
                proc.kill()
        if page is not None:
            page.close()


def test_screenshot_shows_the_charts(browser, report_page, tmp_path):
    page = Page(browser, report_page[0])
    try:
        shot = tmp_path / "shot.png"
        page.page.screenshot(path=str(shot), full_page=True)
        from PIL import Image

        pixels = np.asarray(Image.open(shot).convert("RGB"), dtype=np.float64) / 255
        assert pixels.std() > 0.1
        assert pixels[:40].reshape(-1, 3).mean(axis=0).max() < 0.4  # the dark header band
        blue = (np.abs(pixels - np.array([0x1F, 0x77, 0xB4]) / 255) < 0.06).all(axis=-1)
        assert blue.sum() > 500  # the first series' lines were drawn
    finally:
        page.close()


def test_the_checks_catch_errors_and_requests(browser, tmp_path):
    """The detection itself works: a console error, an uncaught exception and a request that leaves the page."""
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><html><body><img src="https://example.invalid/x.png">'
                   "<script>console.error('deliberate'); undefinedFunction();</script></body></html>")
    page = Page(browser, bad, wait_ready=False)
    try:
        page.page.wait_for_timeout(500)
        assert any("deliberate" in m for m in page.messages) and any("undefinedFunction" in m for m in page.messages)
        assert page.requests == ["https://example.invalid/x.png"]
    finally:
        page.close()
