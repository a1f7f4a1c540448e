"""The Hugging Face Trainer callback (smdebug.pytorch.transformers) with the real Trainer on CPU: a tiny
GPT-2 built from a config (nothing downloaded), gradient accumulation, train/evaluate/predict modes,
losses, the learning rate, gradients per optimizer step."""

import numpy as np
import pytest

transformers = pytest.importorskip("transformers")

import torch  # noqa: E402

import smdebug.pytorch as smd  # noqa: E402

TRAIN, EVAL, PREDICT = smd.modes.TRAIN, smd.modes.EVAL, smd.modes.PREDICT
MAX_STEPS, ACCUMULATE, BATCH, SEQ, LR = 3, 2, 4, 8, 0.05


class Tokens(torch.utils.data.Dataset):
    """Random token sequences; the labels are the inputs (causal language modelling)."""

    def __init__(self, n, seed):
        self.ids = torch.randint(0, 64, (n, SEQ), generator=torch.Generator().manual_seed(seed))

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def tiny_gpt2():
    config = transformers.GPT2Config(vocab_size=64, n_positions=SEQ, n_embd=16, n_layer=2, n_head=2)
    torch.manual_seed(0)
    return transformers.GPT2LMHeadModel(config)


def make_trainer(out_dir, callback, model, **kw):
    args = transformers.TrainingArguments(
        output_dir=out_dir, max_steps=MAX_STEPS, per_device_train_batch_size=BATCH, per_device_eval_batch_size=BATCH,
        gradient_accumulation_steps=ACCUMULATE, learning_rate=LR, optim="sgd", lr_scheduler_type="linear",
        max_grad_norm=0.0, logging_steps=1, save_strategy="no", eval_strategy="no", report_to="none", use_cpu=True,
        disable_tqdm=True, dataloader_num_workers=0, seed=0, data_seed=0, **kw)
    return transformers.Trainer(model=model, args=args, train_dataset=Tokens(BATCH * ACCUMULATE * MAX_STEPS, 0),
                                callbacks=[callback])


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from smdebug.pytorch.transformers import SmdebugCallback

    base = tmp_path_factory.mktemp("hf")
    out = str(base / "run")
    model = tiny_gpt2()
    initial = {n: p.detach().clone() for n, p in model.named_parameters()}
    cb = SmdebugCallback(out_dir=out, save_config=smd.SaveConfig(save_interval=1),
                         include_collections=["weights", "gradients", "losses", "metrics"])
    trainer = make_trainer(str(base / "trainer"), cb, model)
    trainer.train()
    trainer.evaluate(Tokens(2 * BATCH, 1))
    trainer.predict(Tokens(BATCH, 2))
    cb.hook.close()
    assert not cb.hook.disabled
    return smd.create_trial(out), trainer, model, initial


def test_modes_and_optimizer_steps(run):
    trial, trainer, _, _ = run
    assert trainer.state.global_step == MAX_STEPS
    assert trial.steps(mode=TRAIN) == list(range(MAX_STEPS))  # one step per optimizer step
    assert trial.steps(mode=EVAL) == [0, 1]  # 2 evaluation batches
    assert trial.steps(mode=PREDICT) == [0]


def test_losses_per_micro_batch_and_as_logged(run):
    trial, trainer, _, _ = run
    # the loss the model returned for each micro-batch of an accumulated step
    for name in ("loss_output_0", "loss_output_1"):
        assert trial.tensor(name).steps(mode=TRAIN) == list(range(MAX_STEPS)), name
    assert "loss_output_2" not in trial.tensor_names()
    assert trial.tensor("loss_output_0").steps(mode=EVAL) == [0, 1]
    # what the Trainer logged for each step (logging_steps=1): its loss of the optimizer step
    logged = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    assert [trial.tensor("loss").value(s, mode=TRAIN).item() for s in range(MAX_STEPS)] == pytest.approx(logged)
    assert "loss" in trial.tensor_names(collection="losses") and "grad_norm" in trial.tensor_names(collection="metrics")
    # evaluate()'s own metrics go into its last step
    eval_loss = next(h["eval_loss"] for h in trainer.state.log_history if "eval_loss" in h)
    assert trial.tensor("eval_loss").steps(mode=EVAL) == [1]
    assert trial.tensor("eval_loss").value(1, mode=EVAL).item() == pytest.approx(eval_loss)


def test_learning_rate_and_gradients_follow_the_optimizer(run):
    """SGD: each step's saved weights minus the learning rate it applied times the gradient saved at it
    give the next step's weights, so both are what the optimizer used (the accumulated gradient)."""
    trial, _, model, initial = run
    lrs = [trial.tensor("learning_rate").value(s, mode=TRAIN).item() for s in range(MAX_STEPS)]
    assert lrs == pytest.approx([LR * (1 - s / MAX_STEPS) for s in range(MAX_STEPS)])  # the linear schedule
    name = "transformer.h.0.mlp.c_fc.weight"
    w, g = trial.tensor(f"GPT2LMHeadModel_{name}"), trial.tensor(f"gradient/GPT2LMHeadModel_{name}")
    assert w.steps(mode=TRAIN) == g.steps(mode=TRAIN) == list(range(MAX_STEPS))
    np.testing.assert_array_equal(w.value(0, mode=TRAIN), initial[name].numpy())
    final = dict(model.named_parameters())[name].detach().numpy()
    for s in range(MAX_STEPS):
        following = w.value(s + 1, mode=TRAIN) if s + 1 < MAX_STEPS else final
        np.testing.assert_allclose(following, w.value(s, mode=TRAIN) - lrs[s] * g.value(s, mode=TRAIN),
                                   rtol=1e-5, atol=1e-7)
        assert np.abs(g.value(s, mode=TRAIN)).sum() > 0
