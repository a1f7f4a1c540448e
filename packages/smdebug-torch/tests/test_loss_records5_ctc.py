"""What the hook records a CTCLoss to expect: log-probabilities ``(T, N, C)`` from ``log_softmax``, as NLLLoss."""

import torch

import smdebug.pytorch as smd
from smdebug.core import loss_inputs
from smdebug.pytorch.layers import describe_loss, is_classification_loss, loss_expects


def test_ctc_loss_expects_log_probabilities():
    loss = torch.nn.CTCLoss()
    assert loss_expects(loss) == loss_inputs.LOG_PROBABILITIES == loss_expects(torch.nn.NLLLoss())
    # its inputs are no (batch, classes) scores and class ids: not a classification loss for the rules
    assert not is_classification_loss(loss)
    record = describe_loss(loss, "CTCLoss")
    assert (record.type, record.expects) == ("CTCLoss", loss_inputs.LOG_PROBABILITIES)


def test_a_ctc_run_records_log_probabilities(tmp_path):
    torch.manual_seed(0)
    model, loss_fn = torch.nn.Linear(6, 5), torch.nn.CTCLoss()
    hook = smd.Hook.recommended(str(tmp_path))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    x = torch.randn(12, 4, 6)
    loss_fn(model(x).log_softmax(-1), torch.randint(1, 5, (4, 3)), torch.full((4,), 12),
            torch.full((4,), 3)).backward()
    hook.close()
    from smdebug.trials import create_trial

    recorded = loss_inputs.recorded_losses(create_trial(str(tmp_path)))
    assert [(r.type, r.expects) for r in recorded] == [("CTCLoss", loss_inputs.LOG_PROBABILITIES)]
