"""A Lightning script that knows nothing of smdebug and runs a module before ``trainer.fit`` (zero-code-change
test): argv[1] "shape" calls the model on two rows (a shape check), "teacher" has another network label the
data first. Lightning's sanity check runs (two validation batches), then 4 training batches, 2 validation
batches, and ``trainer.validate()`` after fit."""

import sys

import lightning as L
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from lightning_train import Net  # (this folder is the script's: on sys.path)


def loader(x, y):
    return DataLoader(TensorDataset(x, y), batch_size=8)


if __name__ == "__main__":
    torch.manual_seed(0)
    x = torch.randn(128, 10)
    model = Net()
    if sys.argv[1] == "teacher":
        teacher = nn.Sequential(nn.Linear(10, 12), nn.Tanh(), nn.Linear(12, 3))
        with torch.no_grad():
            y = teacher(x).argmax(1)
    else:
        y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()
        print("shape check", tuple(model(x[:2]).shape))
    trainer = L.Trainer(accelerator="cpu", devices=1, max_epochs=1, limit_train_batches=4, limit_val_batches=2,
                        num_sanity_val_steps=2, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False)
    trainer.fit(model, loader(x[:64], y[:64]), loader(x[64:], y[64:]))
    trainer.validate(model, loader(x[64:], y[64:]), verbose=False)
    print(f"global_step {trainer.global_step}")
