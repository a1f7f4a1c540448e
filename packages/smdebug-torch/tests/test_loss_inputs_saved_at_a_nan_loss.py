"""A registered loss whose value comes out NaN at a step its inputs are not due: the hook saves its class-index
targets there too.

The recommended hook saves a loss at every step but its inputs (``loss_inputs``, ``labels``, ``predictions``) at a
few steps only. A NaN loss at any other step left the rules nothing to tell a batch whose targets the loss all
ignored (``ignore_index``: a mean over no element, a healthy run) from a loss that blew up (probe 15b F6). The
loss's integer targets are now saved at such a step, in the collections that save them at the others; its scores
are not (as large as the model's output, they would be saved at every step of a run that blew up), and at steps
whose loss is finite nothing more is saved."""

import torch
import torch.nn as nn

import smdebug.pytorch as smd
from smdebug.trials import create_trial


def test_the_inputs_of_a_nan_loss_are_saved_at_its_step(out_dir):
    torch.manual_seed(0)
    x = torch.randn(64, 4)
    y = (x[:, 0] > 0).long()
    y[52:56] = -100  # the batch of step 13 (4 rows a step): every target ignored, the mean loss 0/0 = NaN
    model = nn.Linear(4, 2)
    loss_fn = nn.CrossEntropyLoss()
    hook = smd.Hook.recommended(out_dir)
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    nan_steps = []
    for step in range(16):
        opt.zero_grad()
        loss = loss_fn(model(x[4 * step:4 * step + 4]), y[4 * step:4 * step + 4])
        loss.backward()
        opt.step()
        if loss.item() != loss.item():
            nan_steps.append(step)
    hook.close()
    assert nan_steps == [13]
    trial = create_trial(out_dir)
    assert 13 in trial.tensor("CrossEntropyLoss_output_0").steps()
    steps = trial.tensor("CrossEntropyLoss_input_1").steps()
    assert 13 in steps and 11 not in steps and 12 not in steps and 14 not in steps, steps  # (not due, loss finite)
    assert 13 not in trial.tensor("CrossEntropyLoss_input_0").steps()
    assert (trial.tensor("CrossEntropyLoss_input_1").value(13) == -100).all()
    assert "CrossEntropyLoss_input_1" in trial.tensor_names(collection="loss_inputs")
