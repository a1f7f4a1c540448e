"""A Lightning training script that knows nothing of smdebug (zero-code-change test): argv[1] devices
(2: Lightning's DDP strategy, two processes on CPU)."""

import sys

import lightning as L
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Net(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", F.cross_entropy(self(x), y))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def loader(seed, n=64):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 10, generator=g)
    return DataLoader(TensorDataset(x, (x[:, 0] > 0).long() + (x[:, 1] > 0).long()), batch_size=8)


if __name__ == "__main__":
    devices = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    torch.manual_seed(0)
    trainer = L.Trainer(accelerator="cpu", devices=devices, strategy="ddp" if devices > 1 else "auto", max_epochs=1,
                        limit_train_batches=4, limit_val_batches=2, num_sanity_val_steps=0, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(Net(), loader(0), loader(1))
    # One write of the whole line: under DDP both ranks share the caller's stdout, and print() with several
    # arguments writes each piece on its own when stdout is unbuffered (PYTHONUNBUFFERED=1, as in CI), so the
    # two ranks' lines came out spliced ("rankrank 1 global_step 4\n 0 global_step 4"). A single write of
    # less than PIPE_BUF bytes to a pipe is never interleaved with another process's.
    sys.stdout.write(f"rank {trainer.global_rank} global_step {trainer.global_step}\n")
    sys.stdout.flush()
