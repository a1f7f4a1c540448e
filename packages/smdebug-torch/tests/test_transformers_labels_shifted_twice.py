"""A Hugging Face causal language model given labels already moved one token ahead (``labels[:-1] =
input_ids[1:]``): its head shifts them again, so it learns the token after next while its loss still falls (probe
19a F2). The hook compares the labels with the input_ids at the first calls, says it once and records it;
ImproperOutput reports it. With ``labels = input_ids`` (what the model expects) nothing is said. A real tiny GPT-2
built from a config (nothing downloaded), trained by a real Trainer on CPU, judged by the real rule."""

import logging

import pytest

transformers = pytest.importorskip("transformers")
pytest.importorskip("smdebug.rules")

import torch  # noqa: E402

import smdebug.pytorch as smd  # noqa: E402
from smdebug.core.run_info import labels_shifted_twice  # noqa: E402
from smdebug.rules import run_rules  # noqa: E402
from smdebug.rules.results import ISSUES  # noqa: E402
from smdebug.trials import create_trial  # noqa: E402

VOCABULARY, SEQ = 32, 16


class Sequences(torch.utils.data.Dataset):
    """Counting sequences (each id the previous plus one, from a random start): a language with structure."""

    def __init__(self, n: int, shift_labels: bool):
        g = torch.Generator().manual_seed(0)
        starts = torch.randint(0, VOCABULARY, (n, 1), generator=g)
        self.ids = (starts + torch.arange(SEQ)) % VOCABULARY
        self.labels = self.ids.clone()
        if shift_labels:  # the slip: the model shifts its labels itself
            self.labels = torch.full_like(self.ids, -100)
            self.labels[:, :-1] = self.ids[:, 1:]

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.labels[i]}


def train(tmp_path, shift_labels: bool):
    from smdebug.pytorch.transformers import SmdebugCallback

    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=VOCABULARY, n_positions=SEQ, n_embd=16, n_layer=1, n_head=2))
    out = str(tmp_path / "run")
    callback = SmdebugCallback(hook=smd.Hook.recommended(out))
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "trainer"), max_steps=6, per_device_train_batch_size=16, learning_rate=1e-3,
        logging_steps=1, save_strategy="no", eval_strategy="no", report_to="none", use_cpu=True, disable_tqdm=True,
        dataloader_num_workers=0, seed=0)
    transformers.Trainer(model=model, args=args, train_dataset=Sequences(64, shift_labels),
                         callbacks=[callback]).train()
    callback.hook.close()
    return out


def test_labels_shifted_for_a_model_that_shifts_them_are_said_and_reported(tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        out = train(tmp_path, shift_labels=True)
    said = [r.getMessage() for r in caplog.records if "shifted twice" in r.getMessage()]
    assert len(said) == 1 and "GPT2LMHeadModel" in said[0], said
    record = labels_shifted_twice(create_trial(out))
    assert record is not None and record["share"] == 1.0 and record["positions"] >= 64, record
    result = run_rules(out, rules=["ImproperOutput"]).rules[0]
    assert result.status == ISSUES, result
    reason = result.findings[0].reason
    assert reason.startswith("the labels are shifted twice") and "100.0% of the" in reason, reason


def test_labels_equal_to_the_input_ids_are_let_be(tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        out = train(tmp_path, shift_labels=False)
    assert not [r for r in caplog.records if "shifted twice" in r.getMessage()]
    assert labels_shifted_twice(create_trial(out)) is None
    result = run_rules(out, rules=["ImproperOutput"]).rules[0]
    assert not any("shifted twice" in f.reason for f in result.findings), result


def test_only_causal_heads_shift_their_labels():
    from smdebug.pytorch.transformers import head_loss

    gpt2 = transformers.GPT2LMHeadModel(transformers.GPT2Config(vocab_size=VOCABULARY, n_positions=SEQ, n_embd=16,
                                                                n_layer=1, n_head=2))
    bert = transformers.BertForMaskedLM(transformers.BertConfig(
        vocab_size=VOCABULARY, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
        max_position_embeddings=SEQ))
    assert head_loss(gpt2).shifts and not head_loss(bert).shifts
