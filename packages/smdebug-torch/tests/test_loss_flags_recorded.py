"""The hook records, with a loss's type, the flag that says what its inputs are: PoissonNLLLoss takes log-rates
or rates (``log_input``), KLDivLoss's targets are probabilities or their log (``log_target``). Without it
ImproperOutput could not tell a Softplus rate fed as a log-rate (probe 14a x F2)."""

import torch.nn as nn

import smdebug.pytorch as smd
from smdebug.core.loss_inputs import LOG_PROBABILITIES, OTHER, recorded_losses


def test_loss_flags_are_recorded_with_the_type(tmp_path):
    hook = smd.Hook(out_dir=str(tmp_path))
    for loss in (nn.PoissonNLLLoss(), nn.PoissonNLLLoss(log_input=False), nn.KLDivLoss(log_target=True),
                 nn.MSELoss()):
        hook.register_loss(loss)
    recorded = {(loss.type, loss.expects) for loss in recorded_losses(hook.collection_manager)}
    hook.close()
    assert recorded == {("PoissonNLLLoss(log_input=True)", OTHER), ("PoissonNLLLoss(log_input=False)", OTHER),
                        ("KLDivLoss(log_target=True)", LOG_PROBABILITIES), ("MSELoss", "regression")}
