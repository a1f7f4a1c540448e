"""benchmarks/RESULTS.md keeps one section per benchmark, newest first, under the targets table; a section a
newer measurement replaces moves to benchmarks/history/ (benchmarks/results_file.py, used by run.py)."""

from __future__ import annotations

import datetime
import os

BENCHMARKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), *[os.pardir] * 4, "benchmarks")


def _section(title, date, line):
    return f"\n## {title} — {date}\n\n- machine: test\n{line}\n"


def test_a_new_section_replaces_its_benchmark_and_the_old_one_moves_to_history(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(os.path.abspath(BENCHMARKS))
    import results_file
    import run as bench_run

    path = tmp_path / "RESULTS.md"
    path.write_text("# old head\n" + _section("I/O", "2026-11-21", "- writes >= 1/s: 2/s (met)")
                    + _section("Torch", "2026-11-22", "- overhead <= 2%: 1% (met)")
                    + _section("I/O", "2026-11-22", "- writes >= 1/s: 3/s (met)"))
    results_file.normalise(str(path), [_section("Torch", "2026-11-25", "- overhead <= 2%: 5% (not met: load)")],
                           summary_of=bench_run.targets_summary)
    head, sections = results_file.split(path.read_text())
    assert head.startswith("# Benchmark results")
    assert [(t, d) for t, d, _ in sections] == [("Targets at a glance", datetime.date.today().isoformat()),
                                              ("Torch", "2026-11-25"), ("I/O", "2026-11-22")]
    summary = sections[0][2]
    assert "| Torch (2026-11-25) | overhead <= 2%: 5% (not met: load) |" in summary
    assert "| I/O (2026-11-22) | writes >= 1/s: 3/s (met) |" in summary and "2/s" not in summary
    io_history = (tmp_path / "history" / "i-o.md").read_text()
    torch_history = (tmp_path / "history" / "torch.md").read_text()
    assert "2/s (met)" in io_history and "3/s" not in io_history
    assert "1% (met)" in torch_history and "5%" not in torch_history

    # again with nothing new: the file is already in its shape and nothing moves twice
    before = path.read_text()
    results_file.normalise(str(path), summary_of=bench_run.targets_summary)
    assert path.read_text() == before
    assert (tmp_path / "history" / "torch.md").read_text() == torch_history
