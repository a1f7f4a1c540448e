"""``smdebug report`` (probe 14c): verdicts of another run, or of fewer steps than the run now has, are
said to be so on the page and on stderr (F8); a rule_results.json that cannot be used is not claimed as
the verdicts' source by the summary (F11).

Runs are written by the real writer and rule results by the real rule runner."""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys

import pytest

from _hostile import plant, write_simple_run
from _support import write_run

pytest.importorskip("bokeh", reason="smdebug report needs bokeh (smdebug-core[cli])")


def _rules_run(smdebug_cli, run, output, *extra, cwd=None):
    """The real rule runner's result for ``run``, written to ``output``."""
    pytest.importorskip("smdebug.rules", reason="needs smdebug-rules")
    args = ["rules", "run", str(run), "--rule", "exploding_tensor", "-o", str(output), "-q", *extra]
    if cwd is None:
        out = smdebug_cli(*args)
    else:  # (the run named relative to the folder the runner runs in, as a user in that folder would)
        exe = os.path.join(os.path.dirname(sys.executable), "smdebug")
        out = subprocess.run([exe, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr


def _report(smdebug_cli, run, page, *extra):
    out = smdebug_cli("report", str(run), "-o", str(page), *map(str, extra))
    assert out.returncode == 0, out.stderr
    return html.unescape(page.read_text(encoding="utf-8")), out


def _rules_section(page: str) -> str:
    found = re.search(r'<section id="rules">(.*?)</section>', page, re.S)
    assert found, page[:2000]
    return found.group(1)


# --------------------------------------------------------------------------------------------------
# F8: verdicts of another run, or of an earlier state of this one
# --------------------------------------------------------------------------------------------------
def test_verdicts_of_another_run_in_the_run_folder_are_said_to_be_so(tmp_path, smdebug_cli):
    run = write_simple_run(tmp_path / "run", steps=range(5))
    other = write_simple_run(tmp_path / "other", steps=range(3))
    _rules_run(smdebug_cli, other, os.path.join(run, "rule_results.json"))  # (copied in by mistake)
    page, out = _report(smdebug_cli, run, tmp_path / "r.html")
    said = f"these verdicts were computed for {other}, not this run ({run})"
    rules = _rules_section(page)
    assert 'class="mismatch"' in rules and said in rules, rules
    assert rules.index(said) < rules.index("ExplodingTensor")  # (above the verdicts, not below them)
    assert said in out.stderr and "warning" in out.stderr
    assert "judged up to step 2; the run now has steps to 4" in rules and "judged up to step 2" in out.stderr
    assert "which do not match this run" in out.stdout


def test_a_rules_file_of_another_run_is_said_to_be_so(tmp_path, smdebug_cli):
    run = write_simple_run(tmp_path / "run", steps=range(3))
    other = write_simple_run(tmp_path / "other", steps=range(3))
    _rules_run(smdebug_cli, other, tmp_path / "other.json")
    page, out = _report(smdebug_cli, run, tmp_path / "r.html", "--rules", tmp_path / "other.json")
    said = f"these verdicts were computed for {other}, not this run ({run})"
    assert said in _rules_section(page) and said in out.stderr
    # the same steps: a moved or copied run would match, which the note says (a reader can tell)
    assert "as many as this run has: if this run was moved or copied from there" in out.stderr


def test_verdicts_of_fewer_steps_than_the_run_has_are_said_to_be_stale(tmp_path, smdebug_cli):
    run = tmp_path / "run"
    write_run(str(run), range(3), end=False)
    _rules_run(smdebug_cli, run, run / "rule_results.json", "--ended")
    write_run(str(run), range(3, 6))  # (the run went on training after the rules were run)
    page, out = _report(smdebug_cli, run, tmp_path / "r.html")
    stale = "judged up to step 2; the run now has steps to 5"
    assert stale in _rules_section(page) and stale in out.stderr
    assert "computed for" not in out.stderr  # (it is this run)


def test_a_copied_run_with_its_verdicts_says_where_they_were_computed(tmp_path, smdebug_cli):
    run = write_simple_run(tmp_path / "run", steps=range(4))
    _rules_run(smdebug_cli, run, os.path.join(run, "rule_results.json"))
    copy = tmp_path / "copy"
    shutil.copytree(run, copy)
    page, out = _report(smdebug_cli, copy, tmp_path / "r.html")
    rules = _rules_section(page)
    assert f"computed for {run}, not this run ({copy})" in rules
    assert "as many as this run has: if this run was moved or copied from there, they are its own" in rules


def test_this_runs_own_verdicts_show_the_run_they_judged_and_no_warning(tmp_path, smdebug_cli):
    """A relative path in the result (the runner run from the run's parent folder) is this run."""
    run = write_simple_run(tmp_path / "run", steps=range(3))
    _rules_run(smdebug_cli, "run", os.path.join(run, "rule_results.json"), cwd=tmp_path)
    page, out = _report(smdebug_cli, run, tmp_path / "r.html")
    rules = _rules_section(page)
    assert "<th>judged run</th><td>run</td>" in rules, rules
    assert 'class="mismatch"' not in rules and "warning" not in out.stderr, out.stderr
    assert f"rule verdicts from {run}/rule_results.json" in out.stdout and "do not match" not in out.stdout


# --------------------------------------------------------------------------------------------------
# F11: a rule_results.json in the run that cannot be used
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["deep_json", "fifo", "dir", "link_outside"])
def test_the_summary_never_claims_verdicts_from_a_file_it_could_not_use(tmp_path, smdebug_cli, kind):
    run = write_simple_run(tmp_path / "run", steps=range(3))
    results = os.path.join(run, "rule_results.json")
    if kind == "deep_json":
        with open(results, "w") as f:
            f.write("[" * 100000 + "]" * 100000)
    else:
        (tmp_path / "outside.json").write_text('{"rules": []}')
        plant(results, kind, outside=str(tmp_path / "outside.json"))
    page, out = _report(smdebug_cli, run, tmp_path / "r.html")
    summary = out.stdout.strip()
    assert "rule verdicts from" not in summary, summary
    assert re.search(r", rule verdicts could not be read \(.*rule_results\.json.*\)$", summary), summary
    assert len(out.stdout.splitlines()) == 1
    assert "warning: rule verdicts not shown:" in out.stderr and "rule_results.json" in out.stderr
    assert "rule_results.json" in _rules_section(page)  # (the page says why, as before)
