"""A Hugging Face causal language model whose labels keep the padding (``labels = input_ids`` with the pad token
set to the end-of-text token, and no -100 at padded positions): the model's own loss then counts every padded
position, and ImproperOutput says so; with the padding masked (-100) it is let be. A real tiny GPT-2 built from
a config (nothing downloaded), trained by a real Trainer on CPU, judged by the real rule."""

import pytest

transformers = pytest.importorskip("transformers")
pytest.importorskip("smdebug.rules")

import torch  # noqa: E402

import smdebug.pytorch as smd  # noqa: E402
from smdebug.rules import run_rules  # noqa: E402
from smdebug.rules.results import ISSUES, NO_ISSUES  # noqa: E402

VOCABULARY, SEQ, END = 32, 16, 31  # (END: the end-of-text id, also the padding, as GPT-2 users often set it)


class PaddedSentences(torch.utils.data.Dataset):
    """Sequences of 4-12 ids below END, then END padding to SEQ; labels the ids, padding masked or not."""

    def __init__(self, n: int, mask_padding: bool):
        g = torch.Generator().manual_seed(0)
        self.ids = torch.full((n, SEQ), END, dtype=torch.long)
        self.attention = torch.zeros((n, SEQ), dtype=torch.long)
        for i in range(n):
            length = int(torch.randint(4, 13, (1,), generator=g))
            self.ids[i, :length] = torch.randint(0, END, (length,), generator=g)
            self.attention[i, :length] = 1
        self.labels = self.ids.clone()
        if mask_padding:
            self.labels[self.attention == 0] = -100

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "attention_mask": self.attention[i], "labels": self.labels[i]}


def train(tmp_path, mask_padding: bool):
    from smdebug.pytorch.transformers import SmdebugCallback

    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=VOCABULARY, n_positions=SEQ, n_embd=16, n_layer=1, n_head=2, eos_token_id=END,
        pad_token_id=END))
    out = str(tmp_path / "run")
    callback = SmdebugCallback(out_dir=out, save_config=smd.SaveConfig(save_interval=1),
                               include_collections=["inputs", "loss_inputs", "losses"])
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "trainer"), max_steps=4, per_device_train_batch_size=16, learning_rate=1e-3,
        logging_steps=1, save_strategy="no", eval_strategy="no", report_to="none", use_cpu=True, disable_tqdm=True,
        dataloader_num_workers=0, seed=0)
    transformers.Trainer(model=model, args=args, train_dataset=PaddedSentences(64, mask_padding),
                         callbacks=[callback]).train()
    callback.hook.close()
    return run_rules(out, rules=["ImproperOutput"], ended=True).rules[0]


def test_labels_that_keep_the_padding_are_found(tmp_path):
    result = train(tmp_path, mask_padding=False)
    assert result.status == ISSUES, result
    reason = result.findings[0].reason
    assert "counts the padding of its targets" in reason and f"id {END}" in reason, reason


def test_labels_with_the_padding_masked_are_let_be(tmp_path):
    assert train(tmp_path, mask_padding=True).status == NO_ISSUES
