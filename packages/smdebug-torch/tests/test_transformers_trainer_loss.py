"""The Hugging Face Trainer computing the loss itself, outside the model: ``label_smoothing_factor > 0`` (the
Trainer pops ``labels`` and applies its LabelSmoother), ``Trainer(compute_loss_func=...)``, and a subclass
overriding ``compute_loss`` (the usual recipe for a class-weighted loss). The model then gets no labels and
returns no loss; the callback still saves the loss the Trainer trained on, and the logits and labels it got,
under the names a model's own loss has, so the rules judge these runs as they judge the others. Real tiny
models built from configs (nothing downloaded), the real Trainer on CPU."""

import os
import subprocess
import sys

import numpy as np
import pytest

transformers = pytest.importorskip("transformers")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import smdebug.pytorch as smd  # noqa: E402
from smdebug.core import loss_inputs  # noqa: E402

TRAIN, EVAL = smd.modes.TRAIN, smd.modes.EVAL
BATCH, SEQ, STEPS, EVAL_BATCHES = 16, 8, 8, 2  # (ImproperOutput judges from 256 logits on)
SMOOTHING = 0.1
CLASS_WEIGHTS = torch.tensor([1.0, 3.0])
COLLECTIONS = ["losses", "loss_inputs", "predictions", "labels", "metrics"]


class Tokens(torch.utils.data.Dataset):
    """Random token sequences; the class (of 2) is the parity of the first token, or (``lm``) the labels are
    the tokens themselves."""

    def __init__(self, n, seed, lm=False):
        self.ids = torch.randint(0, 32, (n, SEQ), generator=torch.Generator().manual_seed(seed))
        self.lm = lm

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i] if self.lm else self.ids[i, 0] % 2}


def tiny_bert():
    torch.manual_seed(0)
    return transformers.BertForSequenceClassification(transformers.BertConfig(
        vocab_size=32, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
        max_position_embeddings=SEQ, num_labels=2))


def tiny_gpt2():
    torch.manual_seed(0)
    return transformers.GPT2LMHeadModel(transformers.GPT2Config(vocab_size=32, n_positions=SEQ, n_embd=16,
                                                                n_layer=1, n_head=2))


def weighted_cross_entropy(logits, labels):
    return F.cross_entropy(logits, labels, weight=CLASS_WEIGHTS.to(logits.device))


class WeightedLossTrainer(transformers.Trainer):
    """The usual Hugging Face recipe for a class-weighted (or focal) loss: pop the labels, call the model
    without them, compute the loss here."""

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        loss = weighted_cross_entropy(outputs.logits, labels)
        return (loss, outputs) if return_outputs else loss


def compute_loss_func(outputs, labels, num_items_in_batch=None):
    # (the Trainer does not divide a compute_loss_func's loss by the accumulation steps: none here)
    return weighted_cross_entropy(outputs.logits, labels)


def train_and_evaluate(tmp_path, trainer_class=transformers.Trainer, model=None, lm=False, save_config=None,
                       **kwargs):
    from smdebug.pytorch.transformers import SmdebugCallback

    out = str(tmp_path / "run")
    callback = SmdebugCallback(out_dir=out, save_config=save_config or smd.SaveConfig(save_interval=1),
                               include_collections=COLLECTIONS)
    trainer_kwargs = {k: kwargs.pop(k) for k in ("compute_loss_func",) if k in kwargs}
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "trainer"), max_steps=STEPS, per_device_train_batch_size=BATCH,
        per_device_eval_batch_size=BATCH, learning_rate=1e-3, logging_steps=1, save_strategy="no",
        eval_strategy="no", report_to="none", use_cpu=True, disable_tqdm=True, dataloader_num_workers=0, seed=0,
        **kwargs)
    trainer = trainer_class(model=model or tiny_bert(), args=args, train_dataset=Tokens(BATCH * STEPS, 0, lm),
                            callbacks=[callback], **trainer_kwargs)
    trainer.train()
    trainer.evaluate(Tokens(BATCH * EVAL_BATCHES, 1, lm))
    callback.hook.close()
    assert not callback.hook.disabled
    return smd.create_trial(out), trainer


def saved(trial, name, mode):
    return [np.array(trial.tensor(name).value(s, mode=mode)) for s in trial.tensor(name).steps(mode=mode)]


def check_saved_loss(trial, trainer, recompute):
    """Each step's saved loss is the one the Trainer trained on (what it logged) and evaluated on (the mean of
    the evaluation batches' losses is eval_loss), and ``recompute`` of the saved logits and labels gives it:
    they are what the loss got."""
    [record] = loss_inputs.recorded_losses(trial)
    assert (record.name, record.expects) == ("loss", loss_inputs.LOGITS)
    for mode, steps in ((TRAIN, STEPS), (EVAL, EVAL_BATCHES)):
        losses, logits, labels = (saved(trial, n, mode) for n in ("loss_output_0", "loss_input_0", "loss_input_1"))
        assert len(losses) == len(logits) == len(labels) == steps, mode
        for loss, x, y in zip(losses, logits, labels):
            assert x.shape[0] == y.shape[0] == BATCH and y.dtype.kind == "i"
            assert recompute(torch.from_numpy(x), torch.from_numpy(y)).item() == pytest.approx(float(loss), rel=1e-5)
    # (the model was called without labels: no other loss was saved beside the Trainer's)
    assert "loss_output_1" not in trial.tensor_names()
    logged = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    assert [float(v) for v in saved(trial, "loss_output_0", TRAIN)] == pytest.approx(logged, rel=1e-5)
    eval_loss = next(h["eval_loss"] for h in trainer.state.log_history if "eval_loss" in h)
    assert np.mean([float(v) for v in saved(trial, "loss_output_0", EVAL)]) == pytest.approx(eval_loss, rel=1e-5)
    # the classifier's logits and labels are what the class rules read
    assert trial.tensor_names(collection="predictions") == ["loss_input_0"]
    assert trial.tensor_names(collection="labels") == ["loss_input_1"]


def check_rules_judge(trial_path):
    from smdebug.rules import run_rules

    result = run_rules(trial_path, ["ImproperOutput", "ClassImbalance"])
    for rule in result.rules:
        assert rule.status in ("NoIssuesFound", "IssuesFound"), (rule.name, rule.status, rule.detail, rule.error)


def test_label_smoothing(tmp_path):
    trial, trainer = train_and_evaluate(tmp_path, label_smoothing_factor=SMOOTHING)
    assert trainer.label_smoother is not None
    check_saved_loss(trial, trainer,
                     lambda x, y: F.cross_entropy(x, y, label_smoothing=SMOOTHING))
    check_rules_judge(str(tmp_path / "run"))


def test_compute_loss_override(tmp_path):
    trial, trainer = train_and_evaluate(tmp_path, trainer_class=WeightedLossTrainer)
    check_saved_loss(trial, trainer, weighted_cross_entropy)
    # the rules' command-line front reads the run alike
    proc = subprocess.run([sys.executable, "-m", "smdebug.cli.main", "rules", "run", str(tmp_path / "run"),
                           "--rule", "ImproperOutput", "--rule", "ClassImbalance"],
                          capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert "NotEvaluated" not in proc.stdout and proc.returncode in (0, 1), (proc.returncode, proc.stdout,
                                                                             proc.stderr)


def test_compute_loss_func(tmp_path):
    trial, trainer = train_and_evaluate(tmp_path, compute_loss_func=compute_loss_func)
    check_saved_loss(trial, trainer, weighted_cross_entropy)
    check_rules_judge(str(tmp_path / "run"))


def test_label_smoothing_causal_lm_with_accumulation(tmp_path):
    """A language model (the Trainer's smoother shifts the labels for it) and two micro-batches per step: each
    micro-batch's loss is saved (``loss_output_0``, ``loss_output_1``), the first one's logits and labels with
    it; together they make what the Trainer logged, and the smoothed loss of an evaluation batch's shifted
    logits and labels is the saved one."""
    trial, trainer = train_and_evaluate(tmp_path, model=tiny_gpt2(), lm=True, label_smoothing_factor=SMOOTHING,
                                        gradient_accumulation_steps=2)
    for name in ("loss_output_0", "loss_output_1"):
        assert trial.tensor(name).steps(mode=TRAIN) == list(range(STEPS)), name
    assert "loss_output_2" not in trial.tensor_names()
    x, y = (torch.from_numpy(saved(trial, n, TRAIN)[0]) for n in ("loss_input_0", "loss_input_1"))
    assert x.shape == (BATCH, SEQ, 32) and y.shape == (BATCH, SEQ)
    # the micro-batches' losses are summed when the Trainer normalised them over the whole step (a model that
    # takes num_items_in_batch), else averaged
    logged = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    pairs = zip(saved(trial, "loss_output_0", TRAIN), saved(trial, "loss_output_1", TRAIN))
    per_step = 1 if trainer.model_accepts_loss_kwargs else 2
    assert [(float(a) + float(b)) / per_step for a, b in pairs] == pytest.approx(logged, rel=1e-5)
    assert len(saved(trial, "loss_output_0", EVAL)) == EVAL_BATCHES
    # evaluation: the Trainer divides the batch's summed smoothed loss by its count of labels (taken before
    # the shift)
    for loss, x, y in zip(*(saved(trial, n, EVAL) for n in ("loss_output_0", "loss_input_0", "loss_input_1"))):
        x, y = torch.from_numpy(x), torch.from_numpy(y)
        summed = F.cross_entropy(x[:, :-1].reshape(-1, 32), y[:, 1:].reshape(-1), label_smoothing=SMOOTHING,
                                 reduction="sum")
        assert (summed / y.numel()).item() == pytest.approx(float(loss), rel=1e-5)


def test_only_due_steps_are_saved_and_no_hook_is_left_on_the_model(tmp_path):
    """The wrapper watches the model's output only during a due step's call, and takes its forward hook off
    again afterwards."""
    model = tiny_bert()
    trial, _ = train_and_evaluate(tmp_path, trainer_class=WeightedLossTrainer, model=model,
                                  save_config=smd.SaveConfig(save_steps=[2]))
    # (the steps due: 2, and 0, which the default save_interval also takes)
    due = trial.tensor("learning_rate").steps(mode=TRAIN)
    assert 2 in due and len(due) < STEPS
    assert trial.tensor("loss_output_0").steps(mode=TRAIN) == trial.tensor("loss_input_0").steps(mode=TRAIN) == due
    left = [f for f in model._forward_hooks.values() if "_TrainerSideLoss" in getattr(f, "__qualname__", "")]
    assert left == []
