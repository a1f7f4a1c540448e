"""The Lightning callback keeps the record of parameters no optimizer step moved (``_meta.untrained_parameters``,
which WeightUpdateRatio names), as the plain hook does from its optimizer hook: Lightning hands the callback the
optimizer about to step. A head left out of ``configure_optimizers`` is recorded; a model whose every parameter
trains records nothing."""

import pytest

L = pytest.importorskip("lightning")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import smdebug.pytorch as smd  # noqa: E402
from smdebug.core.run_info import untrained_parameters  # noqa: E402
from models import mlp_data  # noqa: E402


class Net(L.LightningModule):
    def __init__(self, head_left_out: bool):
        super().__init__()
        self.head_left_out = head_left_out
        self.body = nn.Linear(10, 16)
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        return self.head(torch.relu(self.body(x)))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.cross_entropy(self(x), y)

    def configure_optimizers(self):
        params = self.body.parameters() if self.head_left_out else self.parameters()
        return torch.optim.SGD(params, lr=0.1)


@pytest.mark.parametrize("head_left_out", [True, False])
def test_a_head_left_out_of_configure_optimizers_is_recorded(tmp_path, head_left_out):
    from smdebug.pytorch.lightning import SmdebugCallback

    torch.manual_seed(0)
    x, y = mlp_data(n=64, seed=0)
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=8)
    cb = SmdebugCallback(out_dir=str(tmp_path / "run"), save_config=smd.SaveConfig(save_interval=1),
                         include_collections=["weights", "gradients", "losses"])
    trainer = L.Trainer(accelerator="cpu", max_epochs=1, limit_val_batches=0, callbacks=[cb], logger=False,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(Net(head_left_out), data)
    cb.hook.close()
    record = untrained_parameters(smd.create_trial(str(tmp_path / "run")))
    assert record is not None and record["steps"] >= 3, record
    assert record["not_stepped"] == (["Net_head.bias", "Net_head.weight"] if head_left_out else []), record
    assert record["no_gradient"] == []
