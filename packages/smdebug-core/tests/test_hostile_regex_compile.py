"""Patterns whose compiling costs gigabytes: the ``regex`` package unrolls counted repeats when it compiles, so
27 bytes, ``(?:(?:a{1000}){1000}){100}``, in a run's collections file made every command take 26 GB
(red-team pass 4, F1). Such patterns are refused before they are compiled (``run_regex.unrolled_size``): set
aside with one warning when they come from a file (the run is still read), an error naming the pattern when
they are a command's argument. Memory is measured in fresh processes under an address-space limit, so a
regression fails the test instead of taking the machine."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest

from _hostile import HERE, add_collection, run_smdebug, write_simple_run
from smdebug.core import run_regex
from smdebug.core.run_regex import PatternError, compile_bounded, compile_pattern, unrolled_size
from smdebug.trials import create_trial

#: 27 characters, 10^8 items unrolled (26 GB); 4 * 10^9 items; 10^9 items behind a lookahead; siblings that
#: each stay under the bound but not together; a count re's parser refuses (the text is bounded instead);
#: regex-only syntax (\p{L}), bounded from the text
BOMBS = [
    "(?:(?:a{1000}){1000}){100}",
    "a{4294967294}",
    "(?=(?:(?:b{1000}){1000}){1000})x",
    "(?:a{1000}b{1000}c{1000}d{1000}e{1000}f{1000}g{1000}h{1000}i{1000}j{1000}k{1000})",
    "a{99999999999}",
    r"(?:\p{L}{1000}){100}",
]
#: what people write over tensor names
ORDINARY = [r"\d{1,3}", "[a-z]{2,10}", "(ab){3}", r"conv\d+_(weight|bias)", r"^layer_\d{1,4}/.*relu_output$",
            r"\w{1,1000}", r"(?i)gradients/.*", r"(?<!foo)bar", r"\p{L}{2,10}", "x*+y", ".{0,100}"]


_LOG_LINE = re.compile(r"\[\d{4}-\d\d-\d\d ")


@pytest.fixture(autouse=True)
def _quick_end(monkeypatch):
    monkeypatch.setenv("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")


def _in_a_limited_process(code: str, *args: str, limit_bytes: int = 2 << 30, timeout: float = 120):
    """Run ``code`` in a fresh Python with its address space limited to ``limit_bytes``; ``code`` prints
    lines; the last line printed here is the growth of the peak resident memory (bytes) over the code."""
    script = (
        "import resource, sys\n"
        f"resource.setrlimit(resource.RLIMIT_AS, ({limit_bytes}, {limit_bytes}))\n"
        "def hwm():\n"
        "    with open('/proc/self/status') as f:\n"
        "        return next(int(l.split()[1]) * 1024 for l in f if l.startswith('VmHWM:'))\n"
        "import regex, smdebug.core.run_regex, smdebug.trials\n"  # (imports before the baseline)
        "before = hwm()\n" + code + "\nprint(hwm() - before)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=timeout,
                         env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    # (smdebug's log lines, "[date ... WARNING ...] smdebug: ...", may go to either stream)
    log = [line for line in (out.stdout + out.stderr).splitlines() if _LOG_LINE.match(line)]
    lines = [line for line in out.stdout.strip().splitlines() if not _LOG_LINE.match(line)]
    return lines[:-1], int(lines[-1]), "\n".join(log)


# --- the measure -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("pattern", BOMBS)
def test_a_pattern_that_unrolls_past_the_bound_is_refused_before_compiling(pattern):
    started = time.monotonic()
    assert unrolled_size(pattern) > run_regex.MAX_UNROLLED
    assert compile_pattern(pattern) is None  # (not compiled: a file's pattern, set aside by BoundedPatterns)
    with pytest.raises(PatternError, match="unroll to more than 10,000 items") as info:
        compile_bounded(pattern)  # (a command's argument: an error saying why)
    assert repr(pattern) in str(info.value) and "\n" not in str(info.value)
    assert time.monotonic() - started < 1


@pytest.mark.parametrize("pattern", ORDINARY)
def test_ordinary_patterns_are_accepted(pattern):
    assert unrolled_size(pattern) <= 1100
    assert compile_pattern(pattern) is not None
    assert compile_bounded(pattern).in_use


def test_the_measure_multiplies_nested_counts_and_adds_siblings():
    assert unrolled_size("(ab){3}") == 1 + 3 * 3  # the group, and its 3 items (group, a, b) three times
    assert unrolled_size("a{5}b{5}") == 12
    assert unrolled_size("(?:a{10}){10}") == 1 + 10 * (1 + 10)
    assert unrolled_size("a*") == unrolled_size("a+") == 2  # (unbounded repeats count their minimum)
    assert unrolled_size("a{7,}") == 8
    assert unrolled_size("a{2,9}") == 10  # (bounded ones their maximum)


def test_compiling_the_bombs_stays_within_a_few_megabytes():
    code = ("from smdebug.core.run_regex import compile_bounded, PatternError\n"
            "for p in sys.argv[1:]:\n"
            "    try:\n"
            "        compile_bounded(p); print('compiled', p)\n"
            "    except PatternError as e:\n"
            "        print('refused', p)\n")
    lines, growth, _ = _in_a_limited_process(code, *BOMBS)
    assert lines == [f"refused {p}" for p in BOMBS]
    assert growth < 32 << 20, growth


# --- a run's collections file ------------------------------------------------------------------------------
def _bomb_run(tmp_path, patterns):
    run = write_simple_run(tmp_path / "run", names=["w", "aaa", "layer_12/relu_output"])
    add_collection(run, "bomb", patterns)
    return run


def test_a_bomb_in_a_runs_collections_file_is_set_aside_and_the_run_read(tmp_path):
    run = _bomb_run(tmp_path, ["(?:(?:a{1000}){1000}){100}", "^w$", r"^layer_\d{1,3}/"])
    code = ("from smdebug.trials import create_trial\n"
            "t = create_trial(sys.argv[1])\n"
            "print(sorted(t.tensor_names(collection='bomb')))\n"
            "print(t.collection('bomb').refused_regex)\n"
            "print(t.tensor('w').value(2).tolist())\n")
    lines, growth, log = _in_a_limited_process(code, run)
    assert lines == ["['layer_12/relu_output', 'w']", "['(?:(?:a{1000}){1000}){100}']", "[2.0, 2.0, 2.0]"]
    assert growth < 64 << 20, growth
    warnings = [line for line in log.splitlines() if "(?:(?:a{1000}){1000}){100}" in line]
    assert len(warnings) == 1 and "is not used" in warnings[0] and "unroll" in warnings[0], log


def test_ordinary_counted_patterns_in_a_runs_collections_file_still_match(tmp_path):
    run = write_simple_run(tmp_path / "run", names=["w", "ab_ab_ab", "x123", "conv"])
    add_collection(run, "ordinary", [r"^x\d{1,3}$", "^(ab_?){3}$", "^[a-z]{2,10}$"])
    trial = create_trial(run)
    assert sorted(trial.tensor_names(collection="ordinary")) == ["ab_ab_ab", "conv", "x123"]
    assert trial.collection("ordinary").refused_regex == []


def test_the_patterns_of_one_file_share_a_bound(tmp_path, monkeypatch, caplog):
    """Each pattern just under the bound, many of them: every pattern stays compiled while the run is read,
    so the patterns of one file are bounded in all; those beyond are set aside with one warning."""
    monkeypatch.setattr(run_regex, "MAX_UNROLLED_PER_SOURCE", 50_000)
    patterns = [f"^w{i}a{{9000}}" for i in range(12)]
    run = _bomb_run(tmp_path, ["^w$", *patterns])
    with caplog.at_level("WARNING", logger="smdebug"):
        trial = create_trial(run)
        assert trial.tensor_names(collection="bomb") == ["w"]
    refused = trial.collection("bomb").refused_regex
    assert 0 < len(refused) < len(patterns) and set(refused) <= set(patterns)
    assert caplog.text.count("is not used") == 1 and "in all" in caplog.text


def test_smdebug_ls_reads_the_run_and_notes_the_pattern(tmp_path):
    run = _bomb_run(tmp_path, ["a{4294967294}", "^w$"])
    out = run_smdebug("ls", run)
    assert out.returncode == 0, out.stderr
    assert "a{4294967294}" in out.stdout  # (the note on patterns not used)
    assert "Traceback" not in out.stderr
    assert (out.stdout + out.stderr).count("is not used") == 1, out.stdout + out.stderr  # (one warning)
    listed = json.loads(run_smdebug("ls", run, "--json").stdout)
    bomb = next(c for c in listed["collections"] if c["name"] == "bomb")
    assert bomb["refused_regex"] == ["a{4294967294}"] and bomb["tensors"] == 1


@pytest.mark.parametrize("pattern", ["(?:(?:a{1000}){1000}){100}", "a{4294967294}"])
def test_smdebug_ls_regex_refuses_a_bomb_in_one_line(tmp_path, pattern):
    run = write_simple_run(tmp_path / "run")
    started = time.monotonic()
    out = run_smdebug("ls", run, "--regex", pattern)
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0 and pattern in out.stderr and "unroll" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
    assert time.monotonic() - started < 60


def test_a_bomb_in_the_hook_configuration_does_not_stop_training(tmp_path, monkeypatch):
    from _support import NumpyHook

    bomb = "(?:(?:a{1000}){100}){10}"  # (10^6 items: 260 MB if it were compiled, not enough to harm a test run)
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"LocalPath": str(tmp_path / "run"), "CollectionConfigurations": [
        {"CollectionName": "evil", "CollectionParameters": {"include_regex": f"{bomb},^keep", "save_interval": "1"}}]}))
    monkeypatch.setenv("SMDEBUG_CONFIG_FILE_PATH", str(config))
    hook = NumpyHook.create_from_json_file()
    for step in range(2):
        hook.begin_step()
        hook.record("keep_me", np.ones(2, np.float32))
        hook.end_step()
    hook.close()
    assert hook.get_collection("evil").refused_regex == [bomb]
    trial = create_trial(str(tmp_path / "run"))
    assert trial.steps() == [0, 1] and trial.tensor_names(collection="evil") == ["keep_me"]


def test_patterns_of_the_runs_meta_records_are_bounded_too():
    """The records of a run's ``_meta`` (activation layers, losses) name their tensors by regex, read from
    the collections file like an ``include_regex``: a backtracking one is given up within the match timeout,
    a costly one is not compiled (both match nothing)."""
    import time

    from smdebug.core.activations import matching_names

    started = time.monotonic()
    assert matching_names(r"^(a|a)+$", ["a" * 40 + "b", "relu_output"]) == []
    assert matching_names(r"(?:(?:a{1000}){1000}){100}", ["a" * 10]) == []
    assert time.monotonic() - started < 10
    assert matching_names(r"relu_output", ["x_relu_output_0", "y"]) == ["x_relu_output_0"]


def test_a_collections_file_of_a_hundred_thousand_cheap_patterns_costs_seconds(tmp_path, monkeypatch, caplog):
    """(eighth pass) 300,000 patterns like ``w123`` in one collection: `smdebug ls` ran for more than two
    minutes (each pattern was looked up in a list of those kept, and compiled twice, none of it counted
    against SMDEBUG_RUN_REGEX_TOTAL) and printed them all on one 3 MB note line. Compiling now counts
    towards the file's budget: once it is spent the rest are set aside uncompiled, with one warning."""
    monkeypatch.setenv("SMDEBUG_RUN_REGEX_TOTAL", "1")
    root = write_simple_run(str(tmp_path / "run"), names=("w1", "loss"))
    add_collection(root, "many", [f"w{i}" for i in range(150_000)])
    add_collection(root, "few", ["loss"])
    started = time.monotonic()
    trial = create_trial(root)
    many = trial.tensor_names(collection="many")
    elapsed = time.monotonic() - started
    assert elapsed < 30, elapsed
    assert len(trial.collection("many").include_regex) == 150_000  # (kept as written, set aside)
    assert many in ([], ["w1"])  # (w1 matches if it was matched before the budget ran out)
    assert len([r for r in caplog.records if "SMDEBUG_RUN_REGEX_TOTAL" in r.getMessage()]) == 1
    out = run_smdebug("ls", root, timeout=120)
    assert out.returncode == 0, out.stderr
    note = next(line for line in out.stdout.splitlines() if "note: many:" in line)
    assert "more not used" in note and len(note) < 500, note[:500]


def test_a_records_kept_answer_is_for_exactly_the_names_it_was_asked_of():
    # (kept so rules do not search a run's 100,000 names at every step; keyed by count, first and last name, one
    # run's answer was given for another's names, which differ in between -- a Keras run's labels_0 read as
    # labels/cls)
    from smdebug.core.activations import matching_names

    first = ["a_loss", "labels/cls", "z_weights"]
    second = ["a_loss", "labels_0", "z_weights"]
    assert matching_names(r"^labels", first) == ["labels/cls"]
    assert matching_names(r"^labels", second) == ["labels_0"]
    assert matching_names(r"^labels", first + ["labels_9"]) == ["labels/cls", "labels_9"]
