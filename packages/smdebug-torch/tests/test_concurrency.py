"""Concurrency with PyTorch: real training fed by a DataLoader with forked worker processes, a model
called from two threads within one optimizer step, and an evaluation thread calling the model while
it trains. The runs must read back exact and complete, and training must neither crash nor hang.

Thread switches are made very frequent (``sys.setswitchinterval``) so that races in the hook's
bookkeeping show within a test rather than once in a long run.
"""

import os
import sys
import threading
from collections import Counter

import numpy as np
import pytest
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

import smdebug.pytorch as smd
from models import MLP

JOIN_S = 300  # hang guard for joins, never an assertion on speed
PARAMS = ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]


@pytest.fixture(autouse=True)
def _busy_scheduler():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


class Samples(Dataset):
    """Each sample is a pure function of its index, so batches are the same whichever worker made them."""

    def __len__(self):
        return 96

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(1000 + i)
        x = torch.randn(10, generator=g)
        return x, int(x[0] > 0) + int(x[1] > 0)


def _hook(out_dir, collections=("weights", "biases", "gradients", "losses")):
    return smd.Hook(out_dir=out_dir, save_config=smd.SaveConfig(save_interval=1),
                    include_collections=list(collections))


def _params(model):
    return {f"MLP_{n}": p.detach().clone().numpy() for n, p in model.named_parameters()}


def _join_all(threads):
    for t in threads:
        t.join(JOIN_S)
        assert not t.is_alive(), f"{t.name} hung"


def _values_in_step(trial, step, prefix):
    """Values of the tensors named ``<prefix><i>`` at ``step`` (the index says in which order the
    threads got there, which is not ours to predict)."""
    names = [n for n in trial.tensor_names(step=step) if n.startswith(prefix)]
    assert sorted(names) == [f"{prefix}{i}" for i in range(len(names))], names
    return [trial.tensor(n).value(step) for n in names]


def _same_arrays(got, want):
    """Same multiset of arrays, in any order."""
    assert len(got) == len(want)
    remaining = list(want)
    for g in got:
        match = next((i for i, w in enumerate(remaining) if w.shape == g.shape and np.array_equal(w, g)), None)
        assert match is not None, f"unexpected value {g}"
        remaining.pop(match)


def test_training_fed_by_dataloader_worker_processes(tmp_path):
    """Batches come from 2 forked worker processes (re-forked every epoch, while the hook's writer
    thread is running); every step reads back exactly what training computed, and the workers leave
    nothing in the run."""
    out = str(tmp_path / "run")
    torch.manual_seed(0)
    model, loss_fn = MLP(), nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    hook = _hook(out)
    hook.register_module(model)
    hook.register_loss(loss_fn)
    hook.set_mode(smd.modes.TRAIN)
    loader = DataLoader(Samples(), batch_size=8, shuffle=True, num_workers=2,
                        multiprocessing_context="fork", generator=torch.Generator().manual_seed(0))
    expected = []
    for _epoch in range(3):
        for x, y in loader:
            weights = _params(model)
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            grads = {f"gradient/MLP_{n}": p.grad.clone().numpy() for n, p in model.named_parameters()}
            opt.step()
            expected.append((weights, grads, loss.detach().numpy().copy()))
    hook.close()
    assert not hook.disabled

    trial = smd.create_trial(out)
    assert trial.steps() == list(range(len(expected))) and len(expected) == 36
    assert trial.workers() == ["worker_0"]
    for step, (weights, grads, loss) in enumerate(expected):
        for name, value in {**weights, **grads}.items():
            np.testing.assert_array_equal(trial.tensor(name).value(step), value, err_msg=f"{name} at {step}")
        np.testing.assert_array_equal(trial.tensor("CrossEntropyLoss_output_0").value(step).reshape(()), loss)
    # Files of this process only: a forked worker that saved, or closed the inherited hook, would show.
    names = sorted(os.listdir(out))
    assert names == ["collections", "events", "index", "training_job_end.ts"], names
    assert os.listdir(os.path.join(out, "collections", "000000000")) == ["worker_0_collections.json"]


def test_model_called_from_two_threads_in_one_optimizer_step(tmp_path):
    """With register_optimizer, a step is an optimizer step: two threads each run forward and backward
    on half of the batch at the same time, then the main thread steps the optimizer. Each step holds
    both threads' inputs, outputs and losses exactly once, and the gradients they accumulated."""
    out = str(tmp_path / "run")
    torch.manual_seed(0)
    model, loss_fn = MLP(), nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    hook = _hook(out, ("weights", "biases", "gradients", "losses", "layers"))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    hook.register_optimizer(opt)
    hook.set_mode(smd.modes.TRAIN)
    n_steps = 40
    data = [next(iter(DataLoader(Samples(), batch_size=16, shuffle=True,
                                 generator=torch.Generator().manual_seed(s)))) for s in range(n_steps)]
    start, done = threading.Barrier(3), threading.Barrier(3)
    results, errors = {}, []

    def half(i):
        try:
            for step in range(n_steps):
                start.wait(JOIN_S)
                x, y = data[step]
                xs, ys = x[i::2], y[i::2]
                out_ = model(xs)
                loss = loss_fn(out_, ys)
                loss.backward()
                results[(step, i)] = (xs.numpy().copy(), out_.detach().numpy().copy(), loss.detach().numpy().copy())
                done.wait(JOIN_S)
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)
            start.abort()
            done.abort()

    threads = [threading.Thread(target=half, args=(i,), name=f"half-{i}") for i in range(2)]
    for t in threads:
        t.start()
    expected = []
    try:
        for step in range(n_steps):
            weights = _params(model)
            opt.zero_grad()
            start.wait(JOIN_S)
            done.wait(JOIN_S)
            grads = {f"gradient/MLP_{n}": p.grad.clone().numpy() for n, p in model.named_parameters()}
            opt.step()
            expected.append((weights, grads))
    except threading.BrokenBarrierError:
        pass  # a thread failed: reported below
    _join_all(threads)
    hook.close()
    assert not errors and not hook.disabled, (errors, hook._failure)

    trial = smd.create_trial(out)
    assert trial.steps() == list(range(n_steps))
    for step, (weights, grads) in enumerate(expected):
        for name, value in {**weights, **grads}.items():
            np.testing.assert_array_equal(trial.tensor(name).value(step), value, err_msg=f"{name} at {step}")
        halves = [results[(step, i)] for i in range(2)]
        _same_arrays(_values_in_step(trial, step, "MLP_input_"), [h[0] for h in halves])
        _same_arrays(_values_in_step(trial, step, "MLP_output_"), [h[1] for h in halves])
        _same_arrays([v.reshape(()) for v in _values_in_step(trial, step, "CrossEntropyLoss_output_")],
                     [h[2] for h in halves])
        assert len(_values_in_step(trial, step, "fc1_output_")) == 2


def _train_epochs(model, loss_fn, epochs=4):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _epoch in range(epochs):
        for x, y in DataLoader(Samples(), batch_size=12, shuffle=False):
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
    return losses


def test_evaluation_thread_calls_the_model_while_it_trains(tmp_path):
    """An evaluation thread runs forward passes (no_grad) on the registered model while the training
    thread trains it. Every forward begins a step, so steps interleave; training must still be exactly
    what it is without the hook and the thread, and the run must read back whole: every loss the
    training saved is one it computed, none twice."""
    torch.manual_seed(0)
    reference = MLP()
    initial = {k: v.clone() for k, v in reference.state_dict().items()}
    ref_losses = _train_epochs(reference, nn.CrossEntropyLoss())

    out = str(tmp_path / "run")
    model, loss_fn = MLP(), nn.CrossEntropyLoss()
    model.load_state_dict(initial)
    hook = _hook(out, ("weights", "biases", "gradients", "losses", "layers"))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    hook.set_mode(smd.modes.TRAIN)
    training_done, errors, evals = threading.Event(), [], [0]
    x_eval = torch.randn(32, 10, generator=torch.Generator().manual_seed(7))

    def evaluate():
        try:
            while not training_done.is_set():
                with torch.no_grad():
                    model(x_eval)
                evals[0] += 1
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    evaluator = threading.Thread(target=evaluate, name="evaluator")
    evaluator.start()
    try:
        losses = _train_epochs(model, loss_fn)
    finally:
        training_done.set()
        _join_all([evaluator])
    hook.close()
    assert not errors and not hook.disabled, (errors, hook._failure)
    assert evals[0] > 0

    # The hook and the evaluation thread changed nothing in training.
    assert losses == ref_losses
    for k, v in reference.state_dict().items():
        torch.testing.assert_close(model.state_dict()[k], v, rtol=0, atol=0)

    trial = smd.create_trial(out)
    steps = trial.steps()
    assert steps == list(range(len(steps))) and len(steps) >= len(losses)
    saved_losses = []
    for step in steps:
        for name in trial.tensor_names(step=step):
            value = trial.tensor(name).value(step)  # every tensor of every step reads back whole
            assert np.isfinite(value).all(), (name, step)
            if name.startswith("CrossEntropyLoss_output_"):
                saved_losses.append(float(value.reshape(())))
            elif name.startswith("MLP_fc"):
                assert value.shape == model.state_dict()[name[len("MLP_"):]].shape, (name, step)
    assert saved_losses, "no loss was saved"
    # Every saved loss is one training computed, and none was saved more often than computed.
    assert not Counter(saved_losses) - Counter(np.float32(v).item() for v in losses), saved_losses


def test_threads_calling_the_model_in_quiet_steps_count_each_call_once(tmp_path):
    """Most steps save nothing, and the thread that began them counts them without the step lock. Once
    more threads call the model, every call must still be one step, none lost or counted twice, and the
    steps saved must be exactly the scheduled ones."""
    out = str(tmp_path / "run")
    torch.manual_seed(0)
    model = nn.Linear(2, 2)  # (a tiny forward: the threads spend their time beginning steps)
    hook = smd.Hook(out_dir=out, save_config=smd.SaveConfig(save_interval=25), include_collections=["weights"])
    hook.register_module(model)
    x = torch.randn(1, 2)
    with torch.no_grad():
        for _ in range(30):  # the main thread begins the quiet stretches alone first
            model(x)
    calls, errors = 3000, []

    def call_the_model():
        try:
            with torch.no_grad():
                for _ in range(calls):
                    model(x)
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=call_the_model, name=f"caller-{i}") for i in range(2)]
    for t in threads:
        t.start()
    call_the_model()  # (the main thread goes on too)
    _join_all(threads)
    total = 30 + 3 * calls
    assert not errors and not hook.disabled, (errors, hook._failure)
    assert hook.step == total - 1
    hook.close()
    trial = smd.create_trial(out)
    assert trial.steps() == list(range(0, total, 25))
    assert all(trial.tensor_names(step=s) == trial.tensor_names(step=0) for s in trial.steps())
