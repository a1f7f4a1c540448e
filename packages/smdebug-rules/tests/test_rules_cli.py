"""``smdebug rules`` as a command-line tool: a verdict and an exit status for every outcome, results on
stdout and the rest on stderr, quiet when asked, progress bars only on a terminal, typos answered with the
close names, s3:// everywhere a path goes, and no traceback when the reader of its output goes away."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import shutil
import struct
import subprocess
import sys
import termios
import time

import numpy as np
import pytest

from smdebug.rules.results import (
    ERROR,
    EXIT_CODES,
    IN_PROGRESS,
    ISSUES,
    NO_ISSUES,
    NOT_APPLICABLE,
    NOT_EVALUATED,
    TRAINING_FAILED,
    RuleResult,
    RunResult,
)

from _hooks import write_run

CLI = [sys.executable, "-m", "smdebug.cli.main"]


def smdebug(*args, env=None, timeout=120, **kwargs):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})}, **kwargs)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli-runs")
    healthy = write_run(root / "healthy", [1e-3] * 4)
    vanishing = write_run(root / "vanishing", [1e-3, 1e-9, 1e-3])
    missing = shutil.copytree(healthy, root / "missing")
    shutil.rmtree(missing / "events")
    unfinished = write_run(root / "unfinished", [1e-3] * 3, close=False)
    return {"healthy": healthy, "vanishing": vanishing, "missing": str(missing), "unfinished": unfinished}


# --- verdicts and exit statuses ----------------------------------------------------------------------------
@pytest.mark.parametrize("statuses, expected", [
    ((NO_ISSUES,), NO_ISSUES),
    ((IN_PROGRESS, NO_ISSUES), IN_PROGRESS),
    ((NOT_EVALUATED, IN_PROGRESS, NO_ISSUES), NOT_EVALUATED),
    ((ISSUES, NOT_EVALUATED, IN_PROGRESS), ISSUES),
    ((NO_ISSUES, ISSUES, ERROR, NOT_EVALUATED), ERROR),
    ((NOT_APPLICABLE, NO_ISSUES), NO_ISSUES),  # "not applicable" is an answer about the run, not a judgement
    ((NOT_APPLICABLE, NOT_APPLICABLE), NOT_EVALUATED),  # ... but no rule judged anything
    ((NOT_APPLICABLE, NOT_EVALUATED, NO_ISSUES), NOT_EVALUATED),
])
def test_the_run_status_is_the_first_of_error_issues_not_evaluated_in_progress(statuses, expected):
    result = RunResult(trial="t", rules=[RuleResult(name=s, requested_as=s, status=s) for s in statuses])
    assert result.status == expected and result.exit_code == EXIT_CODES[expected]
    # InProgress is not 0: a verdict that is not final must not pass a script's gate as a judged run
    assert EXIT_CODES == {NO_ISSUES: 0, IN_PROGRESS: 4, ISSUES: 1, ERROR: 2, NOT_EVALUATED: 3, NOT_APPLICABLE: 3,
                          TRAINING_FAILED: 5}


def test_a_crashed_runs_missing_event_file_is_an_error_at_once(tmp_path):
    # (no end marker, the last step's event file gone: judged once, the run was waited on for 200 s in silence
    # before the error, as if it might still be written; --follow still waits for it -- probe 17b F3)
    run = write_run(tmp_path / "run", [1e-3] * 4, close=False, delay=0.01)  # (flushed: its files are there)
    events = [os.path.join(d, f) for d, _, files in os.walk(os.path.join(run, "events")) for f in files]
    os.unlink(max(events))
    started = time.monotonic()
    proc = smdebug("rules", "run", run, "--rule", "vanishing_gradient", "--json", timeout=60)
    assert time.monotonic() - started < 30
    assert proc.returncode == 2 and "MissingEventFile" in proc.stdout, (proc.stdout[-2000:], proc.stderr[-2000:])


@pytest.mark.parametrize("run, rules, code, status", [
    ("healthy", ["vanishing_gradient"], 0, NO_ISSUES),
    ("vanishing", ["vanishing_gradient", "dead_relu"], 1, ISSUES),  # IssuesFound before NotEvaluated
    ("healthy", ["vanishing_gradient", "dead_relu"], 3, NOT_EVALUATED),
    ("missing", ["vanishing_gradient", "dead_relu"], 2, ERROR),  # Error before NotEvaluated
    ("unfinished", ["vanishing_gradient", "dead_relu"], 4, IN_PROGRESS),  # not final
])
def test_each_outcome_has_its_verdict_and_exit_status(runs, run, rules, code, status):
    args = [a for rule in rules for a in ("--rule", rule)]
    proc = smdebug("rules", "run", runs[run], *args, "--json")
    assert proc.returncode == code, proc.stderr
    document = json.loads(proc.stdout)
    assert document["status"] == status and document["exit_code"] == code
    by_name = {r["name"]: r for r in document["rules"]}
    if "DeadRelu" in by_name:  # a run with no ReLU output saved
        relu = by_name["DeadRelu"]
        if run == "unfinished":
            assert relu["status"] == IN_PROGRESS and relu["detail"].startswith("nothing evaluated yet: looked for")
            assert document["not_final"].startswith("the run has not ended (no training_job_end.ts yet")
        else:
            assert relu["status"] == NOT_EVALUATED and relu["steps_evaluated"] == 0
            assert relu["detail"].startswith("looked for collection 'relu_activations' -> none; tensors matching "
                                             "'.*relu_output' -> none; the run has ")
    if run == "missing":
        vg = by_name["VanishingGradient"]
        assert vg["error_file"].startswith(os.path.join(runs["missing"], "events")) and vg["error_step"] == 0


def test_the_verdict_table_goes_to_stdout_the_rest_to_stderr(runs):
    proc = smdebug("rules", "run", runs["vanishing"], "--rule", "vanishing_gradient", "--rule", "dead_relu")
    assert proc.returncode == 1
    out, err = proc.stdout, proc.stderr
    assert out.splitlines()[-1] == "result: IssuesFound (exit status 1)"
    table = "\n".join(out.splitlines()[1:-1])
    assert "VanishingGradient  IssuesFound" in table and "first at step 1: gradient/w: mean |gradient| 1e-09" in table
    assert "DeadRelu           NotEvaluated" in table and "tensors matching '.*relu_output' -> none" in table
    # what the run has is said once, under the table, not at the end of every row that judged nothing
    assert out.count("the run has ") == 1 and out.splitlines()[-2].startswith("the run has 3 steps 0-2")
    assert "[VanishingGradient] issue at step 1 (GLOBAL 1)" in err and "evaluating" in err
    assert "[VanishingGradient]" not in out and "\r" not in err  # no counter running into other output


def test_quiet_prints_nothing_but_json_when_asked(runs):
    proc = smdebug("rules", "run", runs["vanishing"], "--rule", "vanishing_gradient", "-q")
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", "")
    proc = smdebug("rules", "run", runs["vanishing"], "--rule", "vanishing_gradient", "-q", "--json")
    assert proc.returncode == 1 and proc.stderr == "" and json.loads(proc.stdout)["status"] == ISSUES
    proc = smdebug("rules", "run", runs["missing"], "--rule", "vanishing_gradient", "-q")
    assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", "")


def test_a_misspelt_rule_is_an_error_with_the_close_names(runs):
    proc = smdebug("rules", "run", runs["healthy"], "--rule", "exploding_tensor", "--rule", "vanishing_gradiant")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == ("smdebug rules run: unknown rule 'vanishing_gradiant'; did you mean "
                                   "VanishingGradient? (`smdebug rules list` shows every rule)")
    proc = smdebug("rules", "show", "dead_relus")
    assert proc.returncode == 2 and "did you mean DeadRelu?" in proc.stderr


def test_a_missing_run_directory_is_a_message(tmp_path):
    proc = smdebug("rules", "run", str(tmp_path / "nope"), "--rule", "vanishing_gradient")
    assert proc.returncode == 2 and proc.stderr.strip() == f"smdebug rules run: {tmp_path / 'nope'}: no such directory"


def test_help_explains_verdicts_examples_and_exit_codes():
    proc = smdebug("rules", "run", "--help")
    assert proc.returncode == 0
    for text in ("NotEvaluated (the run has nothing the rule can evaluate", "examples:",
                 "smdebug rules run /tmp/run --rule vanishing_gradient", "exit status:", "0  no issues found",
                 "1  issues found", "2  error", "3  not evaluated", "s3://"):
        assert text in proc.stdout, text


# --- a reader that goes away ---------------------------------------------------------------------------------
@pytest.mark.parametrize("args", [("rules", "show", "dead_relu"), ("rules", "list"), ("rules", "list", "--json")])
def test_a_closed_pipe_is_no_traceback(args):
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before anything is written: every write fails with EPIPE
    try:
        proc = subprocess.run([*CLI, *args], stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write_end)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    # and the shell's way: `smdebug rules show dead_relu | head -1`
    command = " ".join([*(f"'{a}'" for a in CLI), *args]) + " | head -1; exit ${PIPESTATUS[0]}"
    shell = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=120)
    assert shell.returncode == 0 and shell.stderr == "" and len(shell.stdout.splitlines()) == 1, shell.stderr


# --- progress bars -------------------------------------------------------------------------------------------
def _run_with_stderr_on_a_terminal(args, timeout=120):
    """Run the command with stderr on a pseudo-terminal (stdout piped); returns (code, stdout, terminal text)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a terminal has a size
    proc = subprocess.Popen([*CLI, *args], stdout=subprocess.PIPE, stderr=slave, text=True)
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the terminal closed with the process
                break
            if not chunk:
                break
            seen += chunk
        elif proc.poll() is not None:
            break
    out = proc.communicate(timeout=timeout)[0]
    os.close(master)
    return proc.returncode, out, seen.decode("utf-8", "replace")


def test_a_progress_bar_is_drawn_only_when_stderr_is_a_terminal(runs):
    args = ["rules", "run", runs["vanishing"], "--rule", "vanishing_gradient", "--follow", "--timeout", "30"]
    code, out, terminal = _run_with_stderr_on_a_terminal(args)
    assert code == 1 and out.splitlines()[-1] == "result: IssuesFound (exit status 1)"
    assert "evaluating: " in terminal and "step/s" in terminal and "\r" in terminal, terminal  # tqdm's bar
    assert "[VanishingGradient] issue at step 1" in terminal
    piped = smdebug(*args)
    assert piped.returncode == 1 and "evaluating: " not in piped.stderr and "\r" not in piped.stderr
    code, out, terminal = _run_with_stderr_on_a_terminal([*args, "--no-progress"])
    assert code == 1 and "evaluating: " not in terminal
    code, out, terminal = _run_with_stderr_on_a_terminal([*args, "-q"])
    assert code == 1 and terminal == "" and out == ""
    forced = smdebug(*args, "--progress")
    assert forced.returncode == 1 and "evaluating: " in forced.stderr


# --- s3:// paths -----------------------------------------------------------------------------------------------
def _upload(local: str, bucket: str, prefix: str) -> None:
    import boto3

    s3 = boto3.client("s3")
    for folder, _, files in os.walk(local):
        for name in files:
            path = os.path.join(folder, name)
            s3.upload_file(path, bucket, f"{prefix}/{os.path.relpath(path, local)}")


def test_every_path_option_takes_s3(runs, aws):
    pytest.importorskip("smdebug.core.storage.s3")
    import boto3

    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="rules")
    _upload(runs["vanishing"], "rules", "runs/vanishing")
    _upload(runs["healthy"], "rules", "runs/healthy")
    proc = smdebug("rules", "run", "s3://rules/runs/vanishing", "--rule", "vanishing_gradient",
                   "--rule", "similar_across_runs", "--param", "collection_names=gradients",
                   "--other-trials", "s3://rules/runs/healthy", "-o", "s3://rules/runs/vanishing/rule_results.json",
                   env=aws.env)
    assert proc.returncode == 1, proc.stderr
    assert not os.path.exists("s3:") and not os.path.exists(os.path.join(os.getcwd(), "s3:"))
    saved = json.loads(s3.get_object(Bucket="rules", Key="runs/vanishing/rule_results.json")["Body"].read())
    assert saved["status"] == ISSUES and saved["trial"] == "s3://rules/runs/vanishing/"
    by_name = {r["name"]: r for r in saved["rules"]}
    assert [f["step"] for f in by_name["VanishingGradient"]["findings"]] == [1]
    assert [f["step"] for f in by_name["SimilarAcrossRuns"]["findings"]] == [1]  # 1e-9 here, 1e-3 there
    proc = smdebug("rules", "run", runs["healthy"], "--rule", "vanishing_gradient", "-o", "s3://no-such-bucket/x.json",
                   env=aws.env)
    assert proc.returncode == 2 and "cannot write s3://no-such-bucket/x.json" in proc.stderr


def test_output_to_a_local_file_is_written_atomically(runs, tmp_path):
    target = tmp_path / "deep" / "rule_results.json"
    proc = smdebug("rules", "run", runs["healthy"], "--rule", "dead_relu", "-o", str(target), "-q")
    assert proc.returncode == 3 and json.loads(target.read_text())["rules"][0]["status"] == NOT_EVALUATED
    assert os.listdir(target.parent) == ["rule_results.json"]


def test_an_empty_output_path_is_refused_not_ignored(runs, tmp_path):
    """``-o "$OUT"`` with OUT unset (eighth red-team pass): the rules ran, exit 0, and nothing was saved,
    without a word."""
    for output in ("", "  "):
        proc = smdebug("rules", "run", runs["healthy"], "--rule", "dead_relu", "-o", output, "-q", cwd=tmp_path)
        assert proc.returncode == 2 and "the output path is empty" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr and os.listdir(tmp_path) == []


# --- the report shows what was not evaluated, and errors, as such --------------------------------------------
def test_the_report_does_not_show_not_evaluated_or_errors_as_a_pass(runs, tmp_path):
    pytest.importorskip("bokeh")
    results = tmp_path / "results.json"
    smdebug("rules", "run", runs["missing"], "--rule", "vanishing_gradient", "--rule", "dead_relu", "-o",
            str(results), "-q")
    html = tmp_path / "report.html"
    proc = smdebug("report", runs["healthy"], "--rules", str(results), "-o", str(html))
    assert proc.returncode == 0, proc.stderr
    text = html.read_text()
    # both shown as what they are, neither as a pass
    assert re.search(r'<span class="badge skip"[^>]*>NotEvaluated</span>', text)
    assert re.search(r'<span class="badge err"[^>]*>Error</span>', text)
    assert "tensors matching &#x27;.*relu_output&#x27; -&gt; none" in text
    assert "MissingEventFile" in text and 'class="badge ok"' not in text


def test_a_rule_that_keeps_firing_prints_its_first_findings_then_counts(tmp_path):
    run = write_run(tmp_path / "vanishing_throughout", [1e-9] * 8)
    proc = smdebug("rules", "run", run, "--rule", "vanishing_gradient")
    assert proc.returncode == 1, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("[VanishingGradient]")]
    assert [line.split(":")[0] for line in lines] == [
        "[VanishingGradient] issue at step 0 (GLOBAL 0)", "[VanishingGradient] issue at step 1 (GLOBAL 1)",
        "[VanishingGradient] issue at step 2 (GLOBAL 2)",
        "[VanishingGradient] issue at step 3 (GLOBAL 3) and maybe later"]
    assert "counted, not printed" in lines[-1] and "-v prints every one" in lines[-1]
    assert "(+7 more)" in proc.stdout  # the table still counts every one
    verbose = smdebug("rules", "run", run, "--rule", "vanishing_gradient", "-v")
    assert len([line for line in verbose.stderr.splitlines() if line.startswith("[VanishingGradient] issue at")]) == 8


def test_a_rule_that_fails_on_the_data_says_so_in_one_line(tmp_path):
    """Gradients saved as strings (valid records): VanishingGradient's verdict is an Error naming the failure;
    the terminal gets no traceback unless asked for one (-v)."""
    from test_data_rules import write

    write(tmp_path / "run", [{"gradient/w": np.array([["a", "b"], ["c", "d"]])}] * 2)
    proc = smdebug("rules", "run", str(tmp_path / "run"), "--rule", "VanishingGradient")
    assert proc.returncode == 2, proc.stderr
    assert "VanishingGradient" in proc.stdout and "Error" in proc.stdout and "could not convert" in proc.stdout
    assert "Traceback" not in proc.stderr + proc.stdout
    verbose = smdebug("-v", "rules", "run", str(tmp_path / "run"), "--rule", "VanishingGradient")
    assert verbose.returncode == 2 and "Traceback" in verbose.stderr


def test_an_action_nested_past_any_parser_is_one_line(runs):
    proc = smdebug("rules", "run", runs["healthy"], "--rule", "VanishingGradient", "--action", "[" * 20000)
    assert proc.returncode == 2 and "action string is not valid JSON" in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout and len(proc.stdout + proc.stderr) < 5000


def test_an_output_that_cannot_be_written_is_said_before_the_rules_run(runs, tmp_path):
    (tmp_path / "a_file").write_text("x")
    for output, why in [(tmp_path / "a_file" / "r.json", f"{tmp_path / 'a_file'} is not a folder"),
                        (tmp_path / ("n" * 300 + ".json"), "File name too long")]:
        proc = smdebug("rules", "run", runs["healthy"], "--rule", "VanishingGradient", "--output", str(output))
        assert proc.returncode == 2 and f"cannot write {output}: {why}" in proc.stderr, proc.stderr
        assert "evaluating" not in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("output, why", [
    ("s3://", "no bucket name"), ("s3:///", "no bucket name"), ("s3:///k.json", "no bucket name"),
    ("s3://bucket", "no object key"), ("s3://bucket/", "no object key"), ("s3://bucket/run/", "no object key"),
])
def test_an_s3_output_naming_no_object_is_refused_before_the_rules_run(runs, tmp_path, output, why):
    """``-o s3://`` was written to a local file named ``s3:`` in the current folder, and the other outputs
    naming no object were refused only once every rule had run (probe 14c F3)."""
    proc = smdebug("rules", "run", runs["healthy"], "--rule", "VanishingGradient", "-o", output, cwd=tmp_path)
    assert proc.returncode == 2 and f"cannot write {output}: {why}" in proc.stderr, proc.stderr
    assert "evaluating" not in proc.stderr and "Traceback" not in proc.stderr
    assert os.listdir(tmp_path) == []


def test_a_run_waiting_for_a_worker_is_not_final_and_says_why(tmp_path):
    """The collections say 2 workers; one process wrote and ended (the other never started, or both ran as
    rank 0). The run is read as ended only SMDEBUG_ENDED_WORKERS_WAIT after its last worker ended: until
    then the verdict is not final. It used to be InProgress with exit status 0 (a CI gate passed) and a
    table saying "training still running", with no word of the worker it waited for."""
    run = tmp_path / "run"
    writer = (f"import sys; sys.path.insert(0, {os.path.dirname(__file__)!r}); import numpy as np; "
              "from _hooks import NumpyHook; from smdebug import SaveConfig; "
              f"hook = NumpyHook(out_dir={str(run)!r}, save_config=SaveConfig(save_interval=1), "
              "include_collections=['gradients'], include_workers='all')\n"
              "for step in range(4):\n"
              "    hook.begin_step(); hook.record('gradient/w', np.full((2, 2), 1e-3, np.float32)); hook.end_step()\n"
              "hook.close()")
    env = {**os.environ, "RANK": "0", "WORLD_SIZE": "2", "SMDEBUG_ENDED_WORKERS_WAIT": "3600"}
    subprocess.run([sys.executable, "-c", writer], check=True, env=env, timeout=120)
    assert os.listdir(run / "workers_ended") == ["worker_0"] and not (run / "training_job_end.ts").exists()
    proc = smdebug("rules", "run", str(run), "--rule", "vanishing_gradient",
                   env={"SMDEBUG_ENDED_WORKERS_WAIT": "3600"})
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "result: InProgress (exit status 4)" in proc.stdout
    assert "training still running" not in proc.stdout
    assert "its workers ended, but not as many as its collections say" in proc.stdout
    not_final = next(line for line in proc.stdout.splitlines() if line.startswith("not final: "))
    assert "the collections say 2 workers" in not_final and "worker_0" in not_final
    assert re.search(r"read as ended in about \d+s", not_final), not_final
    # once the wait is over the run is read as ended, and the verdict is final
    proc = smdebug("rules", "run", str(run), "--rule", "vanishing_gradient", "--json",
                   env={"SMDEBUG_ENDED_WORKERS_WAIT": "0"})
    document = json.loads(proc.stdout)
    assert proc.returncode == 0 and document["status"] == NO_ISSUES and document["not_final"] is None
    assert document["waiting_for_workers"] is False


@pytest.mark.parametrize("args, why", [
    (("--poll-interval", "nan"), "--poll-interval"),
    (("--poll-interval", "-1"), "--poll-interval"),
    (("--poll-interval", "0"), "--poll-interval"),
    (("--poll-interval", "1e400"), "--poll-interval"),
    (("--timeout", "nan"), "--timeout"),
    (("--timeout", "-5"), "--timeout"),
])
def test_following_times_no_one_can_wait_are_refused_in_one_line(runs, args, why):
    """`--poll-interval nan`, `-1` or `1e400` on a run still training died in time.sleep with a traceback;
    `--timeout nan` blamed an argument the user never gave (wait_for_collections); `--timeout -5` was taken."""
    proc = smdebug("rules", "run", runs["unfinished"], "--rule", "vanishing_gradient", "--follow", *args,
                   timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert why in proc.stderr and "wait_for_collections" not in proc.stderr, proc.stderr


def test_a_follow_ends_at_its_timeout_not_a_poll_interval_later(runs):
    """--timeout 1 --poll-interval 30 took 31 s: the last sleep ran its whole interval past the deadline."""
    started = time.monotonic()
    proc = smdebug("rules", "run", runs["unfinished"], "--rule", "vanishing_gradient", "--follow",
                   "--timeout", "1", "--poll-interval", "30", timeout=120)
    assert proc.returncode == 4, proc.stderr
    assert time.monotonic() - started < 20


def test_a_run_whose_hook_lost_a_step_says_so_beside_the_verdicts(tmp_path):
    """A step the hook could not write (a file stands where its folder goes) is said in the run; the verdicts
    are on what the run holds, and the table and the JSON say the run holds less than training saved."""
    from smdebug import SaveConfig
    from smdebug.core.locations import event_file_name

    from _hooks import NumpyHook

    out = tmp_path / "run"
    hook = NumpyHook(out_dir=str(out), save_config=SaveConfig(save_interval=1), include_collections=["losses"])
    for step in range(12):
        if step == 5:
            hook.flush()
            (out / event_file_name(5, "worker_0")).parent.write_text("in the way")
        hook.begin_step()
        hook.record("loss", np.array([1.0 / (step + 1)]))
        hook.end_step()
    hook.close()
    result_path = tmp_path / "result.json"
    proc = smdebug("rules", "run", str(out), "--rule", "LossNotDecreasing", "--output", str(result_path))
    warned = [line for line in proc.stdout.splitlines() if line.startswith("warning: worker_0: steps 5 never")]
    assert len(warned) == 1 and "(the verdicts judge what the run holds)" in warned[0], proc.stdout + proc.stderr
    doc = json.loads(result_path.read_text())
    assert len(doc["hook_failures"]) == 1 and doc["hook_failures"][0].startswith("worker_0: steps 5 never"), doc
