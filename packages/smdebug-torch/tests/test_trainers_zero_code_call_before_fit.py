"""`smdebug run` on unmodified Lightning and Hugging Face Trainer scripts that run a module before training (a
shape check ``model(x[:2])``, a teacher network labelling the data): the zero-code attach begins a step at that
first call, and the trainer's callback takes over later. That step is not the trainer's: it is dropped at the
take-over, so the TRAIN steps are numbered by the trainer's global step from 0, and nothing of the call before
training -- nor of Lightning's sanity check, which used to be saved into that still-open step -- is in them.
``trainer.validate()`` after ``fit()`` (the callback registering the same model again) says nothing."""

import pytest

import smdebug.pytorch as smd

from _zero_code_runs import smdebug_run as run_script

TRAIN, EVAL = smd.modes.TRAIN, smd.modes.EVAL


def smdebug_run(tmp_path, script, *script_args, collections):
    """Run ``script`` under ``smdebug run --config`` (every step saved): the trial and the command's output."""
    out, proc = run_script(tmp_path, script, *script_args, collections=collections)
    return smd.create_trial(out), proc


@pytest.mark.parametrize("before_fit", ["shape", "teacher"])
def test_lightning_steps_follow_global_step_after_a_call_before_fit(tmp_path, before_fit):
    pytest.importorskip("lightning")
    trial, proc = smdebug_run(tmp_path, "lightning_call_before_fit.py", before_fit,
                              collections=("weights", "gradients", "losses", "inputs"))
    assert "global_step 4" in proc.stdout
    # TRAIN step N is global step N, each a real optimizer step (its gradients, the loss training_step returned)
    assert trial.steps(mode=TRAIN) == [0, 1, 2, 3]
    assert trial.tensor("gradient/Net_fc1.weight").steps(mode=TRAIN) == [0, 1, 2, 3]
    assert trial.tensor("loss_output_0").steps(mode=TRAIN) == [0, 1, 2, 3]
    assert trial.tensor("train_loss").steps(mode=TRAIN) == [0, 1, 2, 3]
    # the model's input at TRAIN step 0 is the first training batch (8 rows), not the 2-row shape check nor a
    # sanity-check validation batch; no validation metric in a TRAIN step
    assert [trial.tensor("Net_input_0").value(step, mode=TRAIN).shape for step in range(4)] == [(8, 10)] * 4
    assert "Net_input_1" not in trial.tensor_names()
    assert trial.tensor("val_loss").steps(mode=TRAIN) == []
    # the sanity check's 2 batches are not saved: fit's validation (2 batches) and validate()'s (2)
    assert trial.steps(mode=EVAL) == [0, 1, 2, 3]
    # nothing of the teacher network run before fit
    assert not [name for name in trial.tensor_names() if "Sequential" in name or name.startswith(("0_", "1_", "2_"))]
    assert "numbering continues" not in proc.stderr
    assert "already registered" not in proc.stderr  # (validate() after fit registers the same model again)


def test_transformers_steps_follow_global_step_after_a_call_before_train(tmp_path):
    pytest.importorskip("transformers")
    trial, proc = smdebug_run(tmp_path, "transformers_call_before_train.py", str(tmp_path / "trainer"),
                              collections=("weights", "gradients", "losses", "inputs"))
    assert "done: global_step=3" in proc.stdout
    assert trial.steps(mode=TRAIN) == [0, 1, 2]
    assert trial.tensor("gradient/GPT2LMHeadModel_transformer.h.0.mlp.c_fc.weight").steps(mode=TRAIN) == [0, 1, 2]
    assert trial.tensor("loss_output_0").steps(mode=TRAIN) == [0, 1, 2]
    assert "numbering continues" not in proc.stderr
    # the model's inputs at TRAIN step 0 are the first training batch (4 rows), not the 2-row shape check
    inputs = [name for name in trial.tensor_names() if name.startswith("GPT2LMHeadModel_input")]
    assert inputs, trial.tensor_names()
    for name in inputs:
        assert trial.tensor(name).value(0, mode=TRAIN).shape[0] == 4, name
