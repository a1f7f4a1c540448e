"""trial.tensor_names(regex=...) over names a run's writer chose: the user's pattern is matched in bounded
time, and one that backtracks catastrophically on a crafted name is a clear error naming both, not a call
that hangs (Python's re cannot be interrupted: '(a|aa)+$' against 40 a's and a '!' ran for minutes).
The run is written by the real writer."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from _hostile import write_simple_run
from smdebug.trials import create_trial

CRAFTED = "a" * 40 + "!"
_CALL = ("import sys\n"
         "from smdebug.trials import create_trial\n"
         "from smdebug.exceptions import SMDebugValueError\n"
         "try:\n"
         "    print('names:', sorted(create_trial(sys.argv[1]).tensor_names(regex=sys.argv[2])))\n"
         "except SMDebugValueError as e:\n"
         "    print('refused:', e)\n")


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.setenv("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")
    return write_simple_run(tmp_path / "run", names=("w", "aaab", CRAFTED, "Bias/x"), steps=range(2))


# (the answer where the regex package's own optimisations see through the pattern; the refusal where not)
@pytest.mark.parametrize("pattern, answer", [("(a|aa)+$", None), ("^(\\w+\\s?)*$", ["aaab", "w"])])
def test_a_pattern_that_backtracks_on_a_runs_name_is_answered_or_refused_in_bounded_time(run, pattern, answer):
    # (in a child: before, the call did not return; the timeout makes that a failure, not a stuck suite)
    done = subprocess.run([sys.executable, "-c", _CALL, run, pattern], capture_output=True, text=True, timeout=60,
                          env={"SMDEBUG_TRAINING_END_DELAY_REFRESH": "0", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    if answer is None:
        assert f"refused: tensor_names(regex=...): the pattern {pattern!r} took more than" in done.stdout
        assert repr(CRAFTED) in done.stdout
    else:
        assert f"names: {answer!r}" in done.stdout, done.stdout


@pytest.mark.parametrize("pattern", ["^w$", "a+b", "(?i)bias", "x$|^w", "[", "|".join(["w"] * 3000)])
def test_ordinary_patterns_give_what_re_gives(run, pattern):
    trial = create_trial(run)
    names = trial.tensor_names()
    try:
        expected = sorted(n for n in names if re.search(pattern, n))
    except re.error:
        with pytest.raises(ValueError, match="not a regular expression"):
            trial.tensor_names(regex=pattern)
        return
    assert sorted(trial.tensor_names(regex=pattern)) == expected


def test_to_dataframe_patterns_are_bounded_too(run):
    call = ("import sys\n"
            "from smdebug.trials import create_trial\n"
            "from smdebug.exceptions import SMDebugValueError\n"
            "t = create_trial(sys.argv[1])\n"
            "print('rows:', sorted(set(t.to_dataframe(tensors='a+b|w')['tensor'])))\n"
            "try:\n"
            "    t.to_dataframe(tensors='(a|aa)+')\n"
            "except SMDebugValueError as e:\n"
            "    print('refused:', e)\n")
    done = subprocess.run([sys.executable, "-c", call, run], capture_output=True, text=True, timeout=60,
                          env={"SMDEBUG_TRAINING_END_DELAY_REFRESH": "0", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert "rows: ['aaab', 'w']" in done.stdout, done.stdout  # (fullmatch: 'aaab' and 'w', whole names)
    assert "refused: to_dataframe(tensors=...): the pattern '(a|aa)+' took more than" in done.stdout


def test_the_hooks_include_regex_is_matched_in_bounded_time(tmp_path, smdebug_log):
    # (a hook configuration file's HookParameters.include_regex and `smdebug run --include-regex` reach the hook
    # as its include_regex; matched with re, '(.*)*x$' on a module's name hung the script before its first step
    # -- probe 17b F1. Refused after the timeout, with a warning naming it; the other names are saved.)
    import numpy as np

    from _support import NumpyHook
    from smdebug import SaveConfig

    hook = NumpyHook(out_dir=str(tmp_path / "run"), save_config=SaveConfig(save_interval=1),
                     include_regex="(a|aa)+$", include_collections=["default", "losses"])
    hook.begin_step()
    for name in (CRAFTED, "loss"):
        hook.record(name, np.zeros(3, np.float32))
    hook.end_step()
    hook.close()
    assert any("'(a|aa)+$'" in m and "took more than" in m for m in smdebug_log.warnings), smdebug_log.warnings
    assert create_trial(str(tmp_path / "run")).tensor_names() == ["loss"]
