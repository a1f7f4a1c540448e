"""Hostile and damaged run folders, second round (RELIABILITY.md, "attack catalogue"): link loops, folders
nested thousands deep, files and folders the reader may not read, files far larger than their reader
accepts (sparse: terabytes cost nothing to make), numbers beyond int64, file and tensor names that are not
text, files vanishing while a run is opened, names that would drive the terminal. Each case: the
documented exception naming the file (or a warning and the rest of the run), no hang, no traceback, and
memory bounded by what the reader accepts."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

from _hostile import (
    collections_path,
    edit_index,
    event_path,
    index_path,
    nest_folders,
    remove_nested,
    public_tmp_dir,
    run_smdebug,
    unprivileged,
    vandalise_and_read,
    write_simple_run,
)
from smdebug.exceptions import (
    CollectionFileCorrupted,
    IndexReaderException,
    MissingCollectionFiles,
    MissingEventFile,
    NoSmdebugRun,
)
from smdebug.trials import create_trial

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file-system objects")


@pytest.fixture(autouse=True)
def _quick_end(monkeypatch):
    monkeypatch.setenv("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")


def _no_traceback(proc, code=2):
    text = proc.stdout + proc.stderr
    assert proc.returncode == code and "Traceback" not in text, text[-3000:]
    return text


# --- link loops and deep folders -------------------------------------------------------------------------
def test_a_run_folder_that_is_a_link_loop_is_no_run(tmp_path):
    loop = tmp_path / "loop"
    os.symlink(loop, loop)
    with pytest.raises(NoSmdebugRun, match="cannot be opened"):
        create_trial(str(loop))
    _no_traceback(run_smdebug("ls", loop), 2)
    text = _no_traceback(run_smdebug("rules", "run", loop, "--rule", "all_zero"), 2)
    assert "no such directory" not in text  # (it is there: a link loop, and the message says so)


def test_a_folder_link_loop_inside_the_run_is_not_entered(tmp_path, caplog):
    out = write_simple_run(tmp_path / "run")
    shutil.copytree(os.path.join(out, "index"), tmp_path / "kept")
    folder = os.path.dirname(index_path(out, 1))
    shutil.rmtree(folder)
    os.symlink(os.path.basename(folder), folder)  # index/000000000 -> itself
    with caplog.at_level("WARNING", logger="smdebug"):
        assert create_trial(out).steps() == []
    assert "symbolic link to a folder" in caplog.text
    _no_traceback(run_smdebug("ls", out), 0)


def test_folders_nested_thousands_deep_are_not_entered(tmp_path, caplog):
    out = write_simple_run(tmp_path / "run")
    folders = [os.path.join(out, f) for f in ("index", "collections/000000000", "events")]
    try:
        for folder in folders:
            nest_folders(folder, 1500)  # (a recursive walk met RecursionError here: deeper than Python's limit)
        with caplog.at_level("WARNING", logger="smdebug"):
            trial = create_trial(out)
            assert trial.steps() == [0, 1, 2] and trial.tensor("w").value(2).tolist() == [2.0] * 3
        assert "folders deep" in caplog.text
        for args in (("ls", out), ("show", out, "w", "--step", "1"), ("export", "tensorboard", out, tmp_path / "tb")):
            _no_traceback(run_smdebug(*args), 0)
    finally:
        for folder in folders:
            remove_nested(folder)


# --- files and folders the reader may not read -------------------------------------------------------------
_PROBE = r"""
import json, sys
from smdebug.trials import create_trial
from smdebug.exceptions import SMDebugError
out = {}
def attempt(what, fn):
    try:
        fn(); out[what] = "ok"
    except SMDebugError as e:
        out[what] = "%s: %s" % (type(e).__name__, e)
    except Exception as e:
        out[what] = "RAW %s: %s" % (type(e).__name__, e)
def values(skip):
    t = create_trial(sys.argv[1], skip_damaged=skip)
    for n in t.tensor_names():
        for s in t.tensor(n).steps():
            t.tensor(n).value(s)
    out["steps(skip=%s)" % skip] = t.steps()
    if skip:
        t.to_dataframe()
attempt("values", lambda: values(False))
attempt("values(skip_damaged)", lambda: values(True))
print(json.dumps(out))
"""

#: what is made unreadable -> (the exception a reader gets, the steps a skip_damaged reader sees)
UNREADABLE = {
    "index file": (lambda run: index_path(run, 1), "IndexReaderException", [0, 2]),
    "index folder": (lambda run: os.path.dirname(index_path(run, 1)), "IndexReaderException", []),
    "event file": (lambda run: event_path(run, 1), "EventFileCorrupted", None),
    "events step folder": (lambda run: os.path.dirname(event_path(run, 1)), "EventFileCorrupted", None),
    "collections file": (lambda run: collections_path(run), "CollectionFileCorrupted", [0, 1, 2]),
    "collections folder": (lambda run: os.path.dirname(collections_path(run)), "CollectionFileCorrupted", [0, 1, 2]),
    "run folder": (lambda run: run, "NoSmdebugRun", None),
}


@pytest.mark.timeout(600)
@pytest.mark.parametrize("place", list(UNREADABLE))
def test_files_and_folders_the_reader_may_not_read(place):
    """Mode 000 (read by an unprivileged child when the tests run as root): the documented exception,
    naming the file by its full path, never a PermissionError naming only its last component."""
    base = public_tmp_dir()
    try:
        run = write_simple_run(os.path.join(base, "run"))
        for root, dirs, files in os.walk(base):  # (readable by the unprivileged child but for the target)
            for name in dirs:
                os.chmod(os.path.join(root, name), 0o755)
            for name in files:
                os.chmod(os.path.join(root, name), 0o644)
        where, expected, skipped_steps = UNREADABLE[place]
        target = where(run)
        os.chmod(target, 0)
        env = dict(os.environ, SMDEBUG_TRAINING_END_DELAY_REFRESH="0")
        proc = subprocess.run(unprivileged([sys.executable, "-c", _PROBE, run]), capture_output=True, text=True,
                              timeout=300, env=env, cwd=base)
        assert proc.returncode == 0, proc.stderr[-3000:]
        got = json.loads(proc.stdout.strip().splitlines()[-1])
        assert not any(v.startswith("RAW") for v in got.values() if isinstance(v, str)), got
        assert got["values"].startswith(expected) and target in got["values"], got
        if skipped_steps is not None and expected != "EventFileCorrupted":
            assert got["steps(skip=True)"] == skipped_steps, got
        cli = subprocess.run(unprivileged([sys.executable, "-m", "smdebug.cli", "show", run, "w", "--step", "1"]),
                             capture_output=True, text=True, timeout=300, env=env, cwd=base)
        assert cli.returncode in (1, 2) and "Traceback" not in cli.stderr and target in cli.stderr, cli.stderr
    finally:
        for root, dirs, _files in os.walk(base):
            for name in dirs:
                os.chmod(os.path.join(root, name), 0o755)
        os.chmod(base, 0o755)
        shutil.rmtree(base, ignore_errors=True)


# --- files far larger than their reader accepts --------------------------------------------------------------
_BOUNDED = r"""
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))  # 1 GiB: reading a 3 GiB file would fail
from smdebug.trials import create_trial
from smdebug.exceptions import SMDebugError
for skip in (False, True):
    try:
        t = create_trial(sys.argv[1], skip_damaged=skip)
        print("steps", t.steps())
    except SMDebugError as e:
        print(type(e).__name__, e)
"""


@pytest.mark.timeout(600)
@pytest.mark.parametrize("which", ["index", "collections"])
def test_files_of_gigabytes_are_refused_before_they_are_read(tmp_path, which):
    """A sparse file of 3 GiB costs its maker nothing; read whole before its size was checked (the index
    file) or with no cap at all (the collections file), it took 6 GB of memory."""
    out = write_simple_run(tmp_path / "run")
    target = index_path(out, 1) if which == "index" else collections_path(out)
    os.truncate(target, 3 << 30)
    proc = subprocess.run([sys.executable, "-c", _BOUNDED, out], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [line for line in proc.stdout.strip().splitlines() if not line.startswith("[")]  # (not the logs)
    expected = "IndexReaderException" if which == "index" else "CollectionFileCorrupted"
    assert lines[0].startswith(expected) and "3221225472 bytes" in lines[0] and target in lines[0], lines
    assert lines[1] == ("steps [0, 2]" if which == "index" else "steps [0, 1, 2]"), lines


def test_an_s3_index_object_too_large_is_refused_without_downloading_it(s3_run, monkeypatch):
    """The listing says how large each object is: one beyond the limit is refused unread."""
    from _support import write_run

    import smdebug.trials.trial as trial_module

    write_run(s3_run, range(3))
    key = "index/000000000/000000000001_worker_0.json"
    s3_run.write(key, s3_run.read(key) + b" " * 200_000)
    monkeypatch.setattr(trial_module, "MAX_INDEX_FILE_BYTES", 100_000)
    with pytest.raises(IndexReaderException, match="more than the 100000 bytes") as info:
        create_trial(s3_run.path)
    assert info.value.step == 1
    trial = create_trial(s3_run.path, skip_damaged=True)
    assert trial.steps() == [0, 2] and trial.storage.bytes_downloaded < 100_000


# --- numbers beyond int64, names that are not text -----------------------------------------------------------
@pytest.mark.parametrize("damage", ["mode_step", "file_step", "shape", "tensor_name"])
def test_numbers_beyond_int64_and_names_that_are_not_text_are_refused(tmp_path, damage):
    """Before: OverflowError from to_dataframe and report, ValueError from export; UnicodeEncodeError from
    report and TypeError from plot for a name holding a lone surrogate."""
    out = write_simple_run(tmp_path / "run")
    if damage == "mode_step":
        edit_index(out, 1, lambda d: d["meta"].update(mode_step=10 ** 30))
    elif damage == "file_step":
        os.rename(index_path(out, 1), os.path.join(os.path.dirname(index_path(out, 1)), "9" * 23 + "_worker_0.json"))
    elif damage == "shape":
        edit_index(out, 1, lambda d: d.update(shape_payload=[{"tensorname": "w", "originalname": "w",
                                                                "shape": [10 ** 30]}]))
    else:
        edit_index(out, 1, lambda d: d["tensor_payload"][0].update(tensorname="w\udcff"))
    with pytest.raises(IndexReaderException):
        trial = create_trial(out)
        trial.tensor_names()
    trial = create_trial(out, skip_damaged=True)
    assert trial.tensor_names() == ["w"] and trial.to_dataframe()["step"].tolist() == [0, 2]
    for args in (("report", out, "-o", tmp_path / "r.html"), ("export", "tensorboard", out, tmp_path / "tb"),
                 ("plot", out, "w", "-o", tmp_path / "p.png")):
        _no_traceback(run_smdebug(*args), 2)


@pytest.mark.parametrize("worker", [b"w\xff", b"w\x1b]0;x\x07"], ids=["not-utf8", "escape"])
def test_file_names_that_are_not_text_are_not_a_worker(tmp_path, worker):
    """A file name holding bytes that are not UTF-8 (a lone surrogate to Python) or control characters
    names no worker the hook would write: an invalid file name, skipped under skip_damaged."""
    out = write_simple_run(tmp_path / "run")
    folder = os.fsencode(os.path.dirname(index_path(out, 1)))
    shutil.copy(index_path(out, 1), folder + b"/000000000004_" + worker + b".json")
    shutil.copy(collections_path(out), os.fsencode(os.path.dirname(collections_path(out))) + b"/" + worker
                + b"_collections.json")
    with pytest.raises(IndexReaderException, match="not UTF-8"):
        create_trial(out)
    trial = create_trial(out, skip_damaged=True)
    assert trial.steps() == [0, 1, 2] and trial.workers() == ["worker_0"]
    _no_traceback(run_smdebug("ls", out), 2)


# --- a run changing while it is read --------------------------------------------------------------------------
@pytest.mark.timeout(600)
def test_files_vanishing_while_trials_read_raise_only_documented_errors(tmp_path):
    """A vandal thread removes, truncates and swaps files and folders while trials open and read the run:
    every failure is one of the documented exceptions (before: FileNotFoundError naming '000000000004_
    worker_0.json' or 'index', raised from deep inside the storage). The slow suite runs 150 rounds."""
    raw, documented = vandalise_and_read(tmp_path, rounds=12, seed=1234)
    assert not raw, raw
    print(f"\nvandalised runs: 24 opens, {documented} documented errors, no other")


def test_removed_event_files_of_a_live_run_cost_one_wait_not_one_per_value(tmp_path):
    """A live run (no end marker) whose event files are gone: the trial waits for the first (they may
    still come), not for each of them (100 x 2 s per value before)."""
    out = write_simple_run(tmp_path / "run", steps=range(6))
    os.unlink(os.path.join(out, "training_job_end.ts"))
    for step in range(6):
        os.unlink(event_path(out, step))
    trial = create_trial(out)
    trial.poll_interval, trial.missing_event_retry_limit = 0.1, 10
    started = time.monotonic()
    for step in range(6):
        with pytest.raises(MissingEventFile):
            trial.tensor("w").value(step)
    assert time.monotonic() - started < 1.0 + 3.0  # one allowance of 10 x 0.1 s, then none


def test_a_crashed_runs_missing_event_file_is_said_at_once_by_commands_and_announced_by_the_api(tmp_path,
                                                                                               smdebug_log):
    """A run whose job died (no end marker) and whose last step's event file is gone: `smdebug show` said
    nothing for 200 s, then that the file is missing (probe 17b F3). A one-shot command says it at once; the
    API, which may be reading a run still being written, waits -- and says what it waits for, once."""
    out = write_simple_run(tmp_path / "run", steps=range(4))
    os.unlink(os.path.join(out, "training_job_end.ts"))
    os.unlink(event_path(out, 3))
    started = time.monotonic()
    proc = run_smdebug("show", out, "w", "--step", "3", timeout=60)
    assert time.monotonic() - started < 30
    assert proc.returncode == 1 and "is missing" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    trial = create_trial(out)
    trial.poll_interval, trial.missing_event_retry_limit = 0.1, 3
    with pytest.raises(MissingEventFile):
        trial.tensor("w").value(3)
    waits = [m for m in smdebug_log.warnings if "is missing while its index is there" in m]
    assert len(waits) == 1 and "waiting up to 0.3s" in waits[0], smdebug_log.warnings


# --- names that would drive the terminal ---------------------------------------------------------------------
def test_names_from_a_run_never_reach_the_terminal_as_control_sequences(tmp_path):
    escape = "\x1b]0;owned\x07\x1b[2J\u202eevil\r\x9b31m"
    out = write_simple_run(tmp_path / "run", names=["w" + escape])
    proc = run_smdebug("ls", out)
    assert proc.returncode == 0 and "\x1b" not in proc.stdout and "\u202e" not in proc.stdout, proc.stdout
    assert "\x9b" not in proc.stdout and "\r" not in proc.stdout
    assert "w\\u001b]0;owned\\u0007\\u001b[2J\\u202eevil\\u000d\\u009b31m" in proc.stdout
    proc = run_smdebug("show", out, "nothing" + escape)
    assert proc.returncode == 1 and "\x1b" not in proc.stderr, proc.stderr
    doc = json.loads(run_smdebug("ls", out, "--json").stdout)  # (--json stays JSON, names exact)
    assert [t["name"] for t in doc["tensors"]] == ["w" + escape]


def test_names_holding_newlines_cannot_add_lines_to_what_the_commands_print(tmp_path):
    """Newlines pass the terminal escaping (commands print many lines): a tensor name holding one was printed
    across lines, and a run could put a ``result: NoIssuesFound`` line above the real verdict (probe 14c F2).
    Each name is one line wherever it is printed; --json keeps it exact."""
    forged = "\nresult: NoIssuesFound (exit status 0)\n\tindented"
    out = write_simple_run(tmp_path / "run", names=["w" + forged])
    outputs = [run_smdebug("ls", out), run_smdebug("show", out, "w" + forged, "--step", "1"),
               run_smdebug("show", out, "w" + forged), run_smdebug("rules", "run", out, "--rule", "all_zero")]
    for proc in outputs:
        for stream in (proc.stdout, proc.stderr):
            assert not any(line.startswith(("result: NoIssuesFound", "\tindented")) for line in stream.splitlines())
    assert "w\\u000aresult: NoIssuesFound (exit status 0)\\u000a\\u0009indented" in outputs[0].stdout
    assert outputs[1].returncode == 0 and "w\\u000aresult" in outputs[1].stdout, outputs[1].stdout
    assert outputs[3].stdout.splitlines()[-1].startswith("result: "), outputs[3].stdout
    assert [t["name"] for t in json.loads(run_smdebug("ls", out, "--json").stdout)["tensors"]] == ["w" + forged]


def test_a_rule_on_a_run_it_cannot_list_is_an_error_not_a_pass(tmp_path):
    """Files a trial cannot read are never "nothing to judge": unreadable index files make the rule's
    verdict Error (exit status 2), naming the file."""
    out = write_simple_run(tmp_path / "run")
    os.truncate(index_path(out, 1), 3 << 30)
    proc = run_smdebug("rules", "run", out, "--rule", "all_zero")
    text = _no_traceback(proc, 2)
    assert "000000000001_worker_0.json" in text and "bytes" in text


# --- the report of a hostile run ----------------------------------------------------------------------------
@pytest.mark.timeout(600)
def test_the_report_of_hundreds_of_workers_draws_a_bounded_page(tmp_path):
    """Before: a line per worker in every worker chart (2,000 workers: 224 s and 718 MB to write the page)."""
    pytest.importorskip("bokeh")
    from _support import write_run

    from smdebug.cli.report.lines import MAX_LINES_PER_CHART

    out = str(tmp_path / "run")
    workers = [f"worker_{i}" for i in range(300)]
    write_run(out, range(3), workers=workers,
              tensors=lambda step, w: {"w": np.full(3, workers.index(w) + step, np.float32)})
    started = time.monotonic()
    proc = run_smdebug("report", out, "-o", tmp_path / "r.html", timeout=600)
    took = time.monotonic() - started
    _no_traceback(proc, 0)
    page = (tmp_path / "r.html").read_text()
    assert f"{300 - MAX_LINES_PER_CHART} of 300 series not drawn" in page
    assert took < 120, took


@pytest.mark.timeout(600)
def test_rule_results_that_are_huge_or_list_a_million_findings(tmp_path):
    """A rule_results.json in the run is anyone's file: one of 3 GiB (sparse) is refused by its size, and
    the page says so; 5,000 findings of one rule show 1,000 (before: 1,000,000 findings made a 380 MB
    page, 73 s and 2.9 GB of memory)."""
    pytest.importorskip("bokeh")
    out = write_simple_run(tmp_path / "run", names=["loss"], steps=range(5))
    results = os.path.join(out, "rule_results.json")
    with open(results, "w"):
        pass
    os.truncate(results, 3 << 30)
    _no_traceback(run_smdebug("report", out, "-o", tmp_path / "a.html"), 0)
    assert "more than the 67108864 bytes accepted" in (tmp_path / "a.html").read_text()
    os.unlink(results)
    findings = [{"step": i % 5, "reason": "<script>alert(1)</script>", "tensor": "loss"} for i in range(5000)]
    with open(results, "w") as f:
        json.dump({"rules": [{"name": "R", "status": "IssuesFound", "findings": findings}]}, f)
    _no_traceback(run_smdebug("report", out, "-o", tmp_path / "b.html"), 0)
    page = (tmp_path / "b.html").read_text()
    assert "5000 findings listed: only the first 1000 are shown" in page and "<script>alert(1)" not in page


# --- bad arguments to the reader ------------------------------------------------------------------------------
@pytest.mark.timeout(60)
def test_bad_arguments_to_the_reader_are_clear_errors_not_hangs(tmp_path):
    """Before: wait_for_collections=NaN waited for ever; a step given as a string or None, and a regex that
    does not compile, raised bare TypeError / re.error from inside; a path with NUL, ValueError."""
    from smdebug.exceptions import SMDebugTypeError, SMDebugValueError

    out = write_simple_run(tmp_path / "run")
    with pytest.raises(SMDebugValueError, match="NaN"):
        create_trial(str(tmp_path / "nothing"), wait_for_collections=float("nan"))
    with pytest.raises(SMDebugTypeError):
        create_trial(str(tmp_path / "nothing"), wait_for_collections="10")
    with pytest.raises(SMDebugValueError, match="NUL"):
        create_trial(out + "\x00x")
    trial = create_trial(out)
    for step in ("1", None, 1.5, True):
        with pytest.raises(SMDebugTypeError, match="a step must be an integer"):
            trial.tensor("w").value(step)
    with pytest.raises(SMDebugTypeError):
        trial.wait_for_steps(["a"], timeout=1)
    with pytest.raises(SMDebugValueError, match="not a regular expression"):
        trial.tensor_names(regex="(")
    assert trial.tensor("w").value(np.int64(1)).tolist() == [1.0] * 3  # (numpy integers are steps)


@pytest.mark.timeout(600)
def test_a_run_folder_named_with_bytes_that_are_not_utf8(tmp_path):
    """A run folder whose name is not UTF-8 (Python spells it with lone surrogates): the hook writes it and
    every command reads it (before: `smdebug report` raised UnicodeEncodeError writing the page, `smdebug
    plot` a TypeError from matplotlib drawing the title)."""
    pytest.importorskip("bokeh")
    pytest.importorskip("matplotlib")
    from _support import NumpyHook, train_logistic_regression

    from smdebug import SaveConfig

    out = os.fsdecode(os.fsencode(str(tmp_path)) + b"/run\xff\xfe")
    hook = NumpyHook(out_dir=out, save_config=SaveConfig(save_interval=1), include_collections=["losses"])
    train_logistic_regression(hook, steps=4)
    hook.close()
    assert not hook.disabled and create_trial(out).tensor("loss").steps() == [0, 1, 2, 3]
    for args in (("ls", out), ("show", out, "loss"), ("report", out, "-o", tmp_path / "r.html"),
                 ("plot", out, "loss", "-o", tmp_path / "p.png"), ("export", "tensorboard", out, tmp_path / "tb")):
        _no_traceback(run_smdebug(*args), 0)
    assert "run\\udcff\\udcfe" in (tmp_path / "r.html").read_text()


@pytest.mark.timeout(120)
def test_a_run_whose_collections_and_end_marker_were_removed_is_not_waited_for_ever(tmp_path, monkeypatch, caplog):
    """Index files but neither a collections file nor the end marker: a hook exports its collections
    before its first step's index, so they were removed; create_trial waited for them for ever (found by
    the vandal test). Now it waits SMDEBUG_MISSING_WORKERS_WAIT (30 s) and reads the run as one worker's."""
    out = write_simple_run(tmp_path / "run")
    os.unlink(collections_path(out))
    os.unlink(os.path.join(out, "training_job_end.ts"))
    monkeypatch.setenv("SMDEBUG_MISSING_WORKERS_WAIT", "1")
    started = time.monotonic()
    with caplog.at_level("WARNING", logger="smdebug"):
        trial = create_trial(out)
    assert time.monotonic() - started < 30
    assert trial.steps() == [0, 1, 2] and "continuing with what is there" in caplog.text


@pytest.mark.timeout(120)
def test_a_collections_file_or_index_replaced_by_a_link_to_a_folder_is_an_error_not_a_wait(tmp_path):
    """The collections file (and the index) gone, a link to a folder in the collections file's place, no end
    marker: the listing leaves the link out, so the run looked as if its hook had not exported its
    collections yet, and create_trial waited for ever (the slow vandal test, 150 rounds). Now the link is
    named in a MissingCollectionFiles at once."""
    out = write_simple_run(tmp_path / "run")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.unlink(collections_path(out))
    os.unlink(os.path.join(out, "training_job_end.ts"))
    shutil.rmtree(os.path.join(out, "index"))
    os.symlink(elsewhere, os.path.join(os.path.dirname(collections_path(out)), "000000000"))
    started = time.monotonic()
    with pytest.raises(MissingCollectionFiles, match="no readable collection file; collections/000000000"):
        create_trial(out)
    assert time.monotonic() - started < 10
    # the same with the index folder a link to a folder (the collections file removed, no end marker)
    out = write_simple_run(tmp_path / "run2")
    os.unlink(collections_path(out))
    os.unlink(os.path.join(out, "training_job_end.ts"))
    shutil.rmtree(os.path.join(out, "index"))
    os.symlink(elsewhere, os.path.join(out, "index"))
    started = time.monotonic()
    with pytest.raises(MissingCollectionFiles, match="no readable collection file; index is not"):
        create_trial(out)
    assert time.monotonic() - started < 10


def test_tensor_names_that_are_not_strings_make_the_collections_file_corrupted(tmp_path):
    """`"tensor_names": [null, false]` loaded, then failed the next write of the collections (a TypeError
    from sorting them; found by the slow hypothesis fuzzer)."""
    out = write_simple_run(tmp_path / "run")
    doc = json.loads(open(collections_path(out)).read())
    next(iter(doc["collections"].values()))["tensor_names"] = [None, False]
    with open(collections_path(out), "w") as f:
        json.dump(doc, f)
    with pytest.raises(CollectionFileCorrupted, match="tensor_names must be a list of strings"):
        create_trial(out)


# --- outputs the user names ---------------------------------------------------------------------------------
@pytest.mark.timeout(600)
@pytest.mark.parametrize("kind", ["fifo", "chardev", "link-to-chardev", "folder"])
def test_outputs_that_are_devices_fifos_or_folders_are_refused_not_replaced(tmp_path, kind):
    """`-o /dev/null` as root replaced the device with an ordinary file: every output is written under a
    new name and renamed into place. Now a device, FIFO, socket or folder (or a link to one) at the output
    is refused at once, before the run is read. (The test plants its own device node: never /dev/null.)"""
    import stat as stat_module

    pytest.importorskip("bokeh")
    pytest.importorskip("matplotlib")
    out = write_simple_run(tmp_path / "run", names=["loss"], steps=range(4))
    target = tmp_path / "target"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "folder":
        target.mkdir()
    else:
        try:
            os.mknod(tmp_path / "dev", 0o666 | stat_module.S_IFCHR, os.makedev(1, 3))  # (what /dev/null is)
        except PermissionError:
            pytest.skip("making a device node needs CAP_MKNOD")
        if kind == "chardev":
            os.rename(tmp_path / "dev", target)
        else:
            os.symlink(tmp_path / "dev", target)
    before = os.lstat(target)
    for args in (("report", out, "-o", target), ("plot", out, "loss", "-o", target),
                 ("rules", "run", out, "--rule", "all_zero", "--param", "collection_names=losses", "-o", target)):
        proc = run_smdebug(*args)
        _no_traceback(proc, 2)
        assert "not a file smdebug may replace" in proc.stderr, proc.stderr
    after = os.lstat(target)
    assert (after.st_mode, after.st_ino) == (before.st_mode, before.st_ino)
    (tmp_path / "file").write_text("x")  # (export writes a folder: a file there is refused, not a traceback)
    _no_traceback(run_smdebug("export", "tensorboard", out, tmp_path / "file"), 2)


def test_plot_sizes_and_formats_no_one_can_draw_are_refused_at_once(tmp_path):
    """Before: --dpi 100000 died of MemoryError, --size 100000x100000 and -o x.exe raised from matplotlib."""
    pytest.importorskip("matplotlib")
    out = write_simple_run(tmp_path / "run", names=["loss"], steps=range(4))
    for extra in (("--dpi", "100000"), ("--size", "100000x100000")):
        proc = run_smdebug("plot", out, "loss", "-o", tmp_path / "p.png", *extra)
        assert "at most 32768 on a side" in _no_traceback(proc, 2)
    assert "not an image format" in _no_traceback(run_smdebug("plot", out, "loss", "-o", tmp_path / "p.exe"), 2)
    # each side within the limit, 1 GB of canvas in all (took 4.3 GB and 71 s); a canvas under a pixel, and a
    # size that is not a number (nan passed every comparison)
    proc = run_smdebug("plot", out, "loss", "-o", tmp_path / "p.png", "--size", "327x327")
    assert "100,000,000 in all" in _no_traceback(proc, 2)
    for extra in (("--size", "1e-9x1e-9"), ("--size", "1x1", "--dpi", "1")):
        proc = run_smdebug("plot", out, "loss", "-o", tmp_path / "p.png", *extra)
        assert "at least 16 on a side" in _no_traceback(proc, 2)
    for size in ("nanxnan", "infx1"):
        proc = run_smdebug("plot", out, "loss", "-o", tmp_path / "p.png", "--size", size)
        assert "invalid size" in _no_traceback(proc, 2)
    assert not (tmp_path / "p.png").exists()
