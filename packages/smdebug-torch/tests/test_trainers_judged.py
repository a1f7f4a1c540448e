"""What a Hugging Face Trainer run and a Lightning run save for the rules that judge a model's inputs and the
loss's inputs: the Trainer calls ``model(**batch)`` and the model computes its own loss; a LightningModule keeps
its loss module as an attribute. Real tiny models (configs, nothing downloaded), real trainers on CPU."""

import pytest

transformers = pytest.importorskip("transformers")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

import smdebug.pytorch as smd  # noqa: E402
from smdebug.core import loss_inputs  # noqa: E402

BATCH, SEQ = 4, 8
COLLECTIONS = ["inputs", "loss_inputs", "losses"]


class Tokens(torch.utils.data.Dataset):
    def __init__(self, n, lm, num_labels=2):
        g = torch.Generator().manual_seed(0)
        self.ids = torch.randint(0, 32, (n, SEQ), generator=g)
        if num_labels == 1:
            self.y = torch.randn(n, generator=g)
        else:
            self.y = torch.randint(0, num_labels, (n,), generator=g)
        self.lm = lm

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "attention_mask": torch.ones(SEQ, dtype=torch.long),
                "labels": self.ids[i] if self.lm else self.y[i]}


def train(tmp_path, model, lm, num_labels=2):
    from smdebug.pytorch.transformers import SmdebugCallback

    out = str(tmp_path / "run")
    cb = SmdebugCallback(out_dir=out, save_config=smd.SaveConfig(save_interval=1), include_collections=COLLECTIONS)
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "trainer"), max_steps=2, per_device_train_batch_size=BATCH, learning_rate=1e-3,
        logging_steps=1, save_strategy="no", eval_strategy="no", report_to="none", use_cpu=True, disable_tqdm=True,
        dataloader_num_workers=0, seed=0)
    transformers.Trainer(model=model, args=args, train_dataset=Tokens(2 * BATCH, lm, num_labels),
                         callbacks=[cb]).train()
    cb.hook.close()
    assert not cb.hook.disabled
    return smd.create_trial(out), model


def tiny_bert(num_labels):
    torch.manual_seed(0)
    return transformers.BertForSequenceClassification(transformers.BertConfig(
        vocab_size=32, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
        max_position_embeddings=SEQ, num_labels=num_labels))


def test_hf_sequence_classification_saves_keyword_inputs_and_the_models_own_loss_inputs(tmp_path):
    trial, model = train(tmp_path, tiny_bert(2), lm=False)
    name = type(model).__name__
    # the keyword inputs are the model's inputs; the labels are the loss's targets, not an input
    assert sorted(trial.tensor_names(collection="inputs")) == [f"{name}_input_attention_mask",
                                                               f"{name}_input_input_ids"]
    ids = trial.tensor(f"{name}_input_input_ids").value(0)
    assert ids.shape == (BATCH, SEQ) and ids.dtype.kind == "i"
    [record] = loss_inputs.recorded_losses(trial)
    assert (record.name, record.expects) == ("loss", loss_inputs.LOGITS)
    assert sorted(trial.tensor_names(collection="loss_inputs")) == ["loss_input_0", "loss_input_1"]
    assert trial.tensor("loss_input_0").value(0).shape == (BATCH, 2)  # the logits
    assert trial.tensor("loss_input_1").value(0).shape == (BATCH,)  # the labels
    # a classifier's: its logits and labels are the predictions and labels the class rules read
    assert trial.tensor_names(collection="predictions") == ["loss_input_0"]
    assert trial.tensor_names(collection="labels") == ["loss_input_1"]


def test_hf_regression_head_saves_what_its_mse_gets(tmp_path):
    trial, _ = train(tmp_path, tiny_bert(1), lm=False, num_labels=1)
    [record] = loss_inputs.recorded_losses(trial)
    assert (record.type, record.expects) == ("MSELoss", loss_inputs.REGRESSION)
    assert trial.tensor_names(collection="predictions") == []  # (a regression: no classes)
    # the head squeezes (N, 1) logits before the MSE: saved as the loss got them, not as a broadcast
    assert trial.tensor("loss_input_0").value(0).shape == (BATCH,)
    assert trial.tensor("loss_input_1").value(0).shape == (BATCH,)


def test_hf_causal_lm_records_a_cross_entropy_on_logits(tmp_path):
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(vocab_size=32, n_positions=SEQ, n_embd=16,
                                                                 n_layer=1, n_head=2))
    trial, _ = train(tmp_path, model, lm=True)
    [record] = loss_inputs.recorded_losses(trial)
    assert (record.type, record.expects) == ("CrossEntropyLoss", loss_inputs.LOGITS)
    assert trial.tensor("loss_input_0").value(0).shape == (BATCH, SEQ, 32)
    assert trial.tensor("loss_input_1").value(0).shape == (BATCH, SEQ)


def test_lightning_loss_attribute_is_registered_as_a_loss(tmp_path):
    L = pytest.importorskip("lightning.pytorch")
    from smdebug.pytorch.lightning import SmdebugCallback

    class Net(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 3))
            self.loss_fn = nn.CrossEntropyLoss()

        def forward(self, x):
            return self.net(x)

        def training_step(self, batch, i):
            x, y = batch
            return self.loss_fn(self(x), y)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    torch.manual_seed(0)
    x, y = torch.randn(32, 10), torch.randint(0, 3, (32,))
    out = str(tmp_path / "run")
    cb = SmdebugCallback(out_dir=out, save_config=smd.SaveConfig(save_interval=1), include_collections=COLLECTIONS)
    t = L.Trainer(accelerator="cpu", max_epochs=1, callbacks=[cb], logger=False, enable_checkpointing=False,
                  enable_progress_bar=False, enable_model_summary=False)
    t.fit(Net(), torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=8))
    cb.hook.close()
    trial = smd.create_trial(out)
    assert [r.name for r in loss_inputs.recorded_losses(trial)] == ["CrossEntropyLoss"]
    # (loss_output_0: what training_step returned, saved by the callback)
    assert sorted(trial.tensor_names(collection="losses")) == ["CrossEntropyLoss_output_0", "loss_output_0"]
    assert sorted(trial.tensor_names(collection="loss_inputs")) == ["CrossEntropyLoss_input_0",
                                                                    "CrossEntropyLoss_input_1"]
    assert len(trial.tensor("CrossEntropyLoss_output_0").steps()) == 4
