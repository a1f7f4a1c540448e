"""A Hugging Face Trainer script that knows nothing of smdebug and calls the model once before training (a
shape check on two rows; zero-code-change test): a tiny GPT-2 built from a config, random tokens, 3
optimizer steps, then ``evaluate()``; argv[1] is the Trainer's output folder."""

import sys

import torch
import transformers

from transformers_train import BATCH, SEQ, Tokens  # (this folder is the script's: on sys.path)

MAX_STEPS = 3


if __name__ == "__main__":
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(vocab_size=64, n_positions=SEQ, n_embd=16,
                                                                 n_layer=2, n_head=2))
    check = Tokens(2, 2).ids
    print("shape check", tuple(model(input_ids=check, labels=check).logits.shape))
    args = transformers.TrainingArguments(
        output_dir=sys.argv[1], max_steps=MAX_STEPS, per_device_train_batch_size=BATCH,
        per_device_eval_batch_size=BATCH, learning_rate=0.05, optim="sgd", logging_steps=1, save_strategy="no",
        eval_strategy="no", report_to="none", use_cpu=True, disable_tqdm=True, dataloader_num_workers=0, seed=0)
    trainer = transformers.Trainer(model=model, args=args, train_dataset=Tokens(BATCH * MAX_STEPS, 0))
    trainer.train()
    trainer.evaluate(Tokens(2 * BATCH, 1))
    print(f"done: global_step={trainer.state.global_step}")
