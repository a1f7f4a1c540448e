"""The rule runner: Python API and ``smdebug rules`` command, finished and live runs, rule packs."""

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from smdebug.exceptions import SMDebugValueError
from smdebug.rules import find_rule, list_rules, run_rules
from smdebug.rules.results import ERROR, ISSUES, NO_ISSUES
from smdebug.trials import create_trial

from _hooks import write_run

SCRIPTS = Path(__file__).parent / "scripts"


def smdebug_cli(*args, timeout=120):
    proc = subprocess.run([sys.executable, "-m", "smdebug.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout)
    return proc.returncode, proc.stdout, proc.stderr


# --- Python API ----------------------------------------------------------------------------------------
def test_run_rules_reports_status_findings_and_reasons(tmp_path):
    path = write_run(tmp_path, [1e-3, 1e-3, 1e-9, 1e-3, np.nan, 1e-9])
    result = run_rules(path, ["vanishing_gradient", ("ExplodingTensor", {"only_nan": "true"}),
                              ("unchanged_tensor", {"collection_names": "losses"})])
    by_name = {r.name: r for r in result.rules}
    assert [f.step for f in by_name["VanishingGradient"].findings] == [2, 5]
    assert "gradient/w: mean |gradient| 1e-09 < threshold 1e-07" == by_name["VanishingGradient"].findings[0].reason
    assert [f.step for f in by_name["ExplodingTensor"].findings] == [4]
    assert by_name["UnchangedTensor"].status == NO_ISSUES
    assert by_name["ExplodingTensor"].params == {"only_nan": "true"}
    assert result.status == ISSUES and result.exit_code == 1
    assert result.training_ended and result.steps_evaluated == 6 and result.last_step == 5
    document = json.loads(result.to_json())
    assert document["status"] == "IssuesFound"
    assert document["rules"][0]["findings"][0]["mode"] == "GLOBAL"


def test_step_range_and_max_findings(tmp_path):
    path = write_run(tmp_path, [1e-9] * 10)
    result = run_rules(path, ["vanishing_gradient"], start_step=3, end_step=8, max_findings=2)
    rule = result.rules[0]
    assert [f.step for f in rule.findings] == [3, 4] and rule.findings_total == 5
    assert result.steps_evaluated == 5


def test_configuration_errors_are_reported_per_rule(tmp_path):
    path = write_run(tmp_path, [1.0, 1.0])
    result = run_rules(path, [("vanishing_gradient", {"treshold": "1"}),
                              ("vanishing_gradient", {"threshold": "small"}), "all_zero", "exploding_tensor"])
    errors = [r.error for r in result.rules[:3]]
    assert "unknown parameter(s) treshold; it accepts: threshold" in errors[0]
    assert "threshold must be a number, got 'small'" in errors[1]
    assert "give collection_names or tensor_regex" in errors[2]
    assert result.rules[3].status == NO_ISSUES  # the good rule still ran
    assert result.status == ERROR and result.exit_code == 2


def test_an_unknown_rule_name_is_refused_before_anything_is_read(tmp_path):
    with pytest.raises(SMDebugValueError, match=r"unknown rule 'vanishing_gradiant'; did you mean VanishingGradient\?"):
        run_rules(str(tmp_path / "does-not-exist"), ["exploding_tensor", "vanishing_gradiant"])
    with pytest.raises(SMDebugValueError, match="unknown rule 'no_such_rule'; registered rules: AllZero, "):
        run_rules(str(tmp_path / "does-not-exist"), ["no_such_rule"])


def test_a_rule_that_crashes_is_an_error_and_the_others_go_on(tmp_path):
    from smdebug.rules.rule import Rule

    class Broken(Rule):
        def invoke_at_step(self, step):
            if step == 1:
                raise ZeroDivisionError("bug in the rule")
            return False

    path = write_run(tmp_path, [1.0, 1e-9, 1e-9])
    result = run_rules(create_trial(path), [Broken, "vanishing_gradient"])
    assert result.rules[0].status == ERROR and "ZeroDivisionError at step 1: bug in the rule" in result.rules[0].error
    assert [f.step for f in result.rules[1].findings] == [1, 2]


def test_names_resolve_in_any_spelling():
    assert find_rule("vanishing_gradient").name == "VanishingGradient"
    assert find_rule("VANISHING-GRADIENT").name == "VanishingGradient"
    assert find_rule("stalled_training").name == "StalledTrainingRule"
    assert len({i.name for i in list_rules()} & {"VanishingGradient", "LossAboveThreshold"}) == 2


def test_third_party_rule_pack_runs_by_name(tmp_path):
    assert find_rule("loss_above_threshold").pack == "example"
    path = write_run(tmp_path, [1.0] * 12)  # loss 2.0, 1.9, ... 0.9
    result = run_rules(path, [("loss_above_threshold", {"threshold": "1.5"})])
    assert [f.step for f in result.rules[0].findings] == [0, 1, 2, 3, 4]
    assert result.rules[0].findings[0].reason == "loss = 2 > 1.5"


# --- following a live run ------------------------------------------------------------------------------
def test_follow_gives_a_verdict_while_the_run_is_written(tmp_path, monkeypatch):
    monkeypatch.setenv("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")
    path = tmp_path / "live"
    means = [1e-3] * 10 + [1e-9] + [1e-3] * 10
    writer = threading.Thread(target=write_run, args=(path, means), kwargs={"delay": 0.15})
    writer.start()
    while not (path / "collections").exists():
        time.sleep(0.05)
    seen = []
    result = run_rules(str(path), ["vanishing_gradient"], follow=True, poll_interval=0.1, timeout=60,
                       on_event=lambda ev, rule, f: seen.append((ev, f and f.step, time.time())))
    writer.join()
    assert [f.step for f in result.rules[0].findings] == [10] and result.training_ended
    assert result.steps_evaluated == 21
    finding_time = next(t for ev, step, t in seen if ev == "finding")
    index_written = (path / "index" / "000000000" / "000000000010_worker_0.json").stat().st_mtime
    assert finding_time - index_written < 2.0  # near real time


def test_follow_with_timeout_reports_in_progress(tmp_path):
    path = write_run(tmp_path / "unfinished", [1e-3, 1e-3], close=False)
    result = run_rules(path, ["vanishing_gradient"], follow=True, timeout=1.0, poll_interval=0.1)
    assert result.rules[0].status == "InProgress" and not result.training_ended
    assert result.exit_code == 4 and "--timeout reached" in result.not_final


def test_follow_ends_when_the_run_folder_is_removed(tmp_path):
    """Nothing more can come once the folder is gone: every rule still following fails, saying so (it used to
    poll an empty listing until the timeout, or for ever without one)."""
    import shutil

    path = write_run(tmp_path / "unfinished", [1e-3, 1e-3], close=False)
    remover = threading.Timer(1.0, shutil.rmtree, args=(path,))
    remover.start()
    started = time.monotonic()
    result = run_rules(path, ["vanishing_gradient"], follow=True, poll_interval=0.1)
    remover.join()
    assert time.monotonic() - started < 30
    rule = result.rules[0]
    assert rule.status == "Error" and "the run folder was removed while its run was being followed" in rule.error
    assert result.exit_code == 2


@pytest.mark.parametrize("change", ["folder swapped for a link", "index removed"])
def test_follow_ends_when_the_run_folder_is_swapped_or_its_index_removed(tmp_path, change):
    # (both went unnoticed: the rules stayed InProgress until the timeout -- probe 17b F9)
    import os
    import shutil

    path = write_run(tmp_path / "unfinished", [1e-3, 1e-3], close=False)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    def swap():
        if change == "index removed":
            shutil.rmtree(os.path.join(path, "index"))
        else:
            os.rename(path, str(tmp_path / "moved"))
            os.symlink(elsewhere, path)

    changer = threading.Timer(1.0, swap)
    changer.start()
    started = time.monotonic()
    result = run_rules(path, ["vanishing_gradient"], follow=True, poll_interval=0.1, timeout=60)
    changer.join()
    assert time.monotonic() - started < 30
    rule = result.rules[0]
    said = "index folder was removed" if change == "index removed" else "was replaced by another folder"
    assert rule.status == "Error" and said in rule.error, rule
    assert result.exit_code == 2


def test_runner_stops_a_live_pytorch_training_when_exploding_tensor_fires(tmp_path):
    out = tmp_path / "torch-run"
    env = {**os.environ, "SMDEBUG_STOP_CHECK_INTERVAL": "0.1"}
    training = subprocess.Popen([sys.executable, str(SCRIPTS / "train_until_stopped.py"), str(out),
                                 "--steps", "3000", "--blow-up-at", "20"], stdout=subprocess.PIPE, text=True,
                                env=env)
    try:
        code, stdout, stderr = smdebug_cli("rules", "run", str(out), "--rule", "exploding_tensor", "--follow",
                                           "--stop-training", "--poll-interval", "0.1", "--timeout", "120",
                                           "--json", timeout=180)
        report = json.loads(training.communicate(timeout=60)[0].strip().splitlines()[-1])
    finally:
        training.kill()
    assert training.returncode == 0, report
    result = json.loads(stdout)
    assert code == 1 and result["status"] == "IssuesFound", stderr
    fired_at = result["rules"][0]["findings"][0]["step"]
    assert 20 <= fired_at <= 25
    assert report["ended"].startswith("stopped: ExplodingTensor asked to stop training")
    assert fired_at < report["last_step"] < fired_at + 150  # stopped early (3000 steps planned)
    trial = create_trial(str(out))
    assert trial.loaded_all_steps  # closed cleanly: end marker written
    steps = trial.steps()
    assert steps == list(range(len(steps))) and steps[-1] >= fired_at
    for name in trial.tensor_names():  # everything saved is readable
        for step in trial.tensor(name).steps():
            trial.tensor(name).value(step)
    values = [trial.tensor(n).value(fired_at) for n in trial.tensor_names(step=fired_at)]
    assert any(not np.isfinite(v).all() for v in values)  # the finding is in the saved data
    # judged again once it has ended, the run says it was cut short by the rule, and is no pass even under a
    # rule that finds nothing in what was saved
    stopped = f"training was stopped on request by rule ExplodingTensor (its finding at step {fired_at})"
    assert trial.stopped_on_request().startswith(stopped)
    code, stdout, stderr = smdebug_cli("rules", "run", str(out), "--rule", "AllZero", "--param",
                                       "collection_names=weights")
    assert code == 1 and "training stopped on request)" in stdout.splitlines()[0], stdout + stderr
    assert "AllZero  NoIssuesFound" in stdout, stdout
    assert f"stopped: {stopped}, at step {steps[-1]}: the verdicts judge the run up to there; no rule " \
           "finds the issue again" in stdout and "result: IssuesFound (exit status 1)" in stdout, stdout


# --- command line --------------------------------------------------------------------------------------
def test_cli_exit_codes_and_json(tmp_path):
    healthy = write_run(tmp_path / "healthy", [1e-3] * 4)
    broken = write_run(tmp_path / "broken", [1e-3, 1e-9, 1e-3])
    code, out, err = smdebug_cli("rules", "run", healthy, "--rule", "vanishing_gradient", "--json")
    assert code == 0 and json.loads(out)["status"] == "NoIssuesFound", err
    output = tmp_path / "result.json"
    code, out, err = smdebug_cli("rules", "run", broken, "--rule", "vanishing_gradient", "--param",
                                 "threshold=1e-6", "--rule", "exploding_tensor", "-o", str(output))
    assert code == 1, err
    assert "[VanishingGradient] issue at step 1 (GLOBAL 1): gradient/w: mean |gradient| 1e-09" in err
    assert "result: IssuesFound (exit status 1)" in out and "result:" not in err
    saved = json.loads(output.read_text())
    assert saved["rules"][0]["params"] == {"threshold": "1e-6"} and saved["rules"][1]["status"] == "NoIssuesFound"
    code, out, err = smdebug_cli("rules", "run", healthy, "--rule", "vanishing_gradient", "--param", "x=1")
    assert code == 2 and "unknown parameter(s) x" in err


def test_cli_usage_errors(tmp_path):
    code, out, err = smdebug_cli("rules", "run", str(tmp_path), "--param", "a=1", "--rule", "x")
    assert code == 2 and "give --rule NAME before its parameters" in err
    code, out, err = smdebug_cli("rules", "run", str(tmp_path), "--rule", "x", "--param", "novalue")
    assert code == 2 and "use KEY=VALUE" in err


def test_cli_list_and_show():
    code, out, _ = smdebug_cli("rules", "list", "--json")
    names = {r["name"]: r["pack"] for r in json.loads(out)}
    assert code == 0 and names["VanishingGradient"] == "builtin" and names["LossAboveThreshold"] == "example"
    from smdebug.rules.plugin import RULES

    assert len([n for n, pack in names.items() if pack == "builtin"]) == len(RULES) == 26
    code, out, _ = smdebug_cli("rules", "show", "unchanged_tensor", "--json")
    assert code == 0 and "num_steps" in json.loads(out)["parameters"]
    code, _, err = smdebug_cli("rules", "show", "nope")
    assert code == 2 and "unknown rule 'nope'" in err
