"""A new user's typing mistakes get an answer from the command they typed: an unknown option is reported by
that command's parser (its usage, its name), and a misspelt command, subcommand or option names the close
match, as git, cargo and pytest do."""

from __future__ import annotations

import numpy as np

from _support import NumpyHook
from smdebug.core.save_config import SaveConfig


def _run(out) -> str:
    hook = NumpyHook(out_dir=str(out), save_config=SaveConfig(save_interval=1), include_collections=["weights"])
    for step in range(2):
        hook.begin_step()
        hook.record("weights/w", np.arange(4, dtype=np.float32) + step)
        hook.end_step()
    hook.close()
    return str(out)


def test_an_unknown_option_is_reported_by_the_command_given(tmp_path, smdebug_cli):
    run = _run(tmp_path / "run")
    for args, prog in ((["ls", run, "--bogus"], "smdebug ls"), (["show", run, "weights/w", "--bogus"], "smdebug show"),
                       (["plugins", "--bogus"], "smdebug plugins"),
                       (["rules", "run", run, "--bogus"], "smdebug rules run")):
        out = smdebug_cli(*args)
        assert out.returncode == 2, (args, out)
        assert out.stdout == "", (args, out.stdout)
        assert f"{prog}: error: unrecognized arguments: --bogus" in out.stderr, (args, out.stderr)
        assert f"usage: {prog} " in out.stderr, (args, out.stderr)
        assert "did you mean" not in out.stderr, (args, out.stderr)  # --bogus is like none of them


def test_an_option_after_the_double_dash_is_told_to_go_before_it(tmp_path, smdebug_cli):
    # (after --, every argument is a path: the hint suggested the very option typed, "did you mean --json?")
    run = _run(tmp_path / "run")
    for option in ("--json", "--wait=3"):
        out = smdebug_cli("ls", "--", run, option)
        flag = option.split("=")[0]
        assert out.returncode == 2 and f"({flag} is an option: put it before --)" in out.stderr, out.stderr
    assert smdebug_cli("ls", "--json", "--", run).returncode == 0


def test_a_misspelt_option_names_the_close_one(tmp_path, smdebug_cli):
    run = _run(tmp_path / "run")
    out = smdebug_cli("show", run, "weights/w", "--stpe", "1")
    assert out.returncode == 2 and out.stdout == ""
    assert "unrecognized arguments: --stpe 1 (did you mean --step?)" in out.stderr, out.stderr
    out = smdebug_cli("run", "--outdir", str(tmp_path / "x"), "--", "python", "train.py")
    assert out.returncode == 2 and "(did you mean --out-dir?)" in out.stderr, out.stderr
    out = smdebug_cli("ls", run, "--jsn")
    assert "(did you mean --json?)" in out.stderr, out.stderr
    out = smdebug_cli("ls", run, "--zzzzzz")  # nothing close: no guess
    assert "did you mean" not in out.stderr and "unrecognized arguments: --zzzzzz" in out.stderr, out.stderr


def test_a_misspelt_command_names_the_close_one(smdebug_cli):
    out = smdebug_cli("lss", "/tmp/run")
    assert out.returncode == 2 and out.stdout == ""
    assert "invalid choice: 'lss'" in out.stderr and "did you mean 'ls'?" in out.stderr, out.stderr
    out = smdebug_cli("rules", "lst")
    assert out.returncode == 2 and "did you mean 'list'?" in out.stderr, out.stderr
    out = smdebug_cli("export", "tensorbord", "/tmp/run", "/tmp/tb")
    assert out.returncode == 2 and "did you mean 'tensorboard'?" in out.stderr, out.stderr


def test_a_word_of_a_tensor_name_names_the_tensors_holding_it(tmp_path, smdebug_cli):
    """``smdebug plot RUN loss`` on a PyTorch run, whose loss is ``CrossEntropyLoss_output_0``: names are
    matched whole, and no name is close to 'loss' by spelling; the tensors that contain the word are named."""
    run = tmp_path / "run"
    hook = NumpyHook(out_dir=str(run), save_config=SaveConfig(save_interval=1), include_collections=["losses"])
    hook.get_collection("losses").include("Loss_output")  # (this test hook's own losses regex is 'loss')
    for step in range(3):
        hook.begin_step()
        hook.record("CrossEntropyLoss_output_0", np.array(1.0 / (step + 1), np.float32))
        hook.record("scalar/val_loss", np.array(2.0 / (step + 1), np.float32))
        hook.end_step()
    hook.close()
    out = smdebug_cli("plot", str(run), "loss", "-o", str(tmp_path / "loss.png"))
    assert out.returncode == 1 and out.stdout == "", out
    assert "no tensor matches 'loss' (did you mean 'scalar/val_loss' or 'CrossEntropyLoss_output_0'?)" in out.stderr, \
        out.stderr
    out = smdebug_cli("show", str(run), "LOSS")
    assert out.returncode == 1 and "did you mean 'scalar/val_loss' or 'CrossEntropyLoss_output_0'?" in out.stderr, \
        out.stderr
    out = smdebug_cli("show", str(run), "accuracy")  # in no name: no guess
    assert out.returncode == 1 and "did you mean" not in out.stderr, out.stderr


def test_a_missing_argument_message_names_only_the_required_ones(smdebug_cli):
    """TENSOR of export and plot is optional ([TENSOR ...]); argparse listed it among the required."""
    out = smdebug_cli("export", "tensorboard")
    assert out.returncode == 2 and out.stdout == ""
    assert "the following arguments are required: TRIAL, DIR\n" in out.stderr, out.stderr
    out = smdebug_cli("plot")
    assert out.returncode == 2 and "the following arguments are required: TRIAL, -o/--output\n" in out.stderr, \
        out.stderr
