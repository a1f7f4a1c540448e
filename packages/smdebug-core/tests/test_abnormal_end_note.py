"""A training process that dies of an exception nobody caught, or of SIGTERM, still has its run closed and
marked ended (nothing more will come), but says in the run that training did not end normally: the end
marker alone made a job that died at step 3 read "training ended" and be judged as a finished training.

Each case runs a real child process with a numpy training loop (smdebug-core's own test hook) and reads the
run back with ``create_trial`` and ``smdebug ls``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest
from smdebug.trials import create_trial

from _fault_check import child_env

LOOP = textwrap.dedent("""
    import sys, numpy as np
    from smdebug import SaveConfig
    from _support import NumpyHook

    hook = NumpyHook(out_dir=sys.argv[1], save_config=SaveConfig(save_interval=1), include_collections=["losses"])
    for step in range(5):
        hook.begin_step()
        hook.record("loss", np.array([1.0 / (step + 1)]))
        hook.end_step()
        if step == 3:
            {at_step_3}
    {after}
""")


def _run(tmp_path, at_step_3="pass", after="", prelude=""):
    out = str(tmp_path / "run")
    script = tmp_path / "train.py"
    script.write_text(prelude + LOOP.format(at_step_3=at_step_3, after=after))
    proc = subprocess.run([sys.executable, str(script), out], capture_output=True, text=True, env=child_env(),
                          timeout=120)
    assert os.path.exists(os.path.join(out, "training_job_end.ts")), proc.stderr
    return out, proc


def test_an_unhandled_exception_is_said_in_the_run(tmp_path, smdebug_cli):
    out, proc = _run(tmp_path, at_step_3='raise RuntimeError("CUDA out of memory\\n(tried 2 GiB)")')
    assert proc.returncode == 1 and "RuntimeError" in proc.stderr  # (the user's traceback is printed as ever)
    trial = create_trial(out)
    assert trial.steps() == [0, 1, 2, 3]  # (everything saved before it died is kept)
    ends = trial.abnormal_ends()
    assert len(ends) == 1, ends
    assert ends[0] == ("worker_0: training did not end normally: at step 3 the process raised an unhandled "
                       "RuntimeError: CUDA out of memory (tried 2 GiB)"), ends
    assert trial.hook_failures() == ends
    shown = smdebug_cli("ls", out)
    assert "warning: worker_0: training did not end normally" in shown.stdout + shown.stderr, shown.stdout


def test_ctrl_c_is_said_as_an_interruption(tmp_path):
    out, proc = _run(tmp_path, at_step_3="raise KeyboardInterrupt")
    ends = create_trial(out).abnormal_ends()
    assert ends == ["worker_0: training did not end normally: at step 3 the process was interrupted "
                    "(KeyboardInterrupt)"], ends


@pytest.mark.parametrize("ending", [
    "",  # the script returns without closing the hook: the at-exit close
    "hook.close()",
    "sys.exit(0)",
    # an exception the script caught and went on from is no abnormal end
    "try:\n    raise ValueError('handled')\nexcept ValueError:\n    pass",
])
def test_a_normal_end_leaves_no_note(tmp_path, ending):
    out, proc = _run(tmp_path, after=ending)
    assert proc.returncode == 0, proc.stderr
    assert not os.path.exists(os.path.join(out, "hook_failures"))
    trial = create_trial(out)
    assert trial.abnormal_ends() == [] and trial.hook_failures() == []


def test_an_excepthook_the_program_set_still_runs(tmp_path):
    """The hook chains sys.excepthook; a program's own hook (set before it) still reports the error."""
    prelude = textwrap.dedent("""
        import sys
        def mine(t, e, tb):
            print("MINE:", t.__name__, file=sys.stderr)
        sys.excepthook = mine
    """)
    out, proc = _run(tmp_path, at_step_3="raise ValueError('x')", prelude=prelude)
    assert "MINE: ValueError" in proc.stderr, proc.stderr
    assert "raised an unhandled ValueError: x" in create_trial(out).abnormal_ends()[0]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigterm_is_said_in_the_run(tmp_path):
    out, proc = _run(tmp_path, at_step_3="import os, signal; os.kill(os.getpid(), signal.SIGTERM)")
    assert proc.returncode == -signal.SIGTERM, proc.stderr
    ends = create_trial(out).abnormal_ends()
    assert len(ends) == 1 and "at step 3 the process was stopped by SIGTERM" in ends[0], ends
