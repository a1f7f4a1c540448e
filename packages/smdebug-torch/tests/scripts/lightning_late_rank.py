"""lightning_train.py's DDP job (two processes on CPU) in which rank 1 ends later than rank 0: after the fit it
stays argv[1] seconds (a slow teardown: a checkpoint written, a log uploaded) before exiting. Lightning's
launcher starts rank 1 as rank 0's child and does not wait for it, so rank 0's process (the one `smdebug run`
started) ends first. Each rank writes its line when it is about to exit."""

import sys
import time

import lightning as L
import torch

from lightning_train import Net, loader  # (the script's folder is on sys.path: the same job)

if __name__ == "__main__":
    linger = float(sys.argv[1])
    torch.manual_seed(0)
    trainer = L.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_epochs=1, limit_train_batches=4,
                        limit_val_batches=2, num_sanity_val_steps=0, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(Net(), loader(0), loader(1))
    if trainer.global_rank == 1:
        time.sleep(linger)
    sys.stdout.write(f"rank {trainer.global_rank} exiting\n")  # (one write: see lightning_train.py)
    sys.stdout.flush()
