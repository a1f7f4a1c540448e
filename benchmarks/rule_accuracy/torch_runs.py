"""PyTorch runs: small models written the way people write them, one training loop, and the bugs.

A run is described by a plain dict (the scenario's ``train``): the data, the model, the loss, the optimiser
and its schedule, the step budget, how often to evaluate, and ``bug`` — the mistake injected, each one a
mistake seen in real code (the loop below says where it acts). The loop is an ordinary one: shuffled
minibatches, ``model.train()``/``model.eval()``, an evaluation pass over the validation set (up to 4 batches) every
``eval_every`` steps under ``torch.no_grad()``, the hook recording everything (hooks.torch_hook).

Models name their submodules in the styles found in the wild: ``nn.Sequential`` indices (``net.1``),
attributes named after the layer (``relu1``, ``fc2``), one activation module reused, and functional
activations (``F.relu``: no module, nothing a hook can capture by module).
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from . import data as datasets
from .hooks import torch_hook

_ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh, "sigmoid": nn.Sigmoid, "leaky_relu": nn.LeakyReLU,
                "gelu": nn.GELU, "elu": nn.ELU}


def _init(module: nn.Module, init: Optional[dict]) -> None:
    """Initialise weights the way a (possibly mistaken) script does: ``{"std": s}`` N(0, s) for every
    weight matrix/kernel, ``{"zeros": True}`` all zeros, ``{"bias": b}`` a constant bias. None: PyTorch's
    defaults."""
    if not init:
        return
    for m in module.modules():
        if isinstance(m, (nn.Linear, nn.Conv2d)):
            if "std" in init:
                nn.init.normal_(m.weight, 0.0, init["std"])
            if init.get("zeros"):
                nn.init.zeros_(m.weight)
            if "bias" in init and m.bias is not None:
                nn.init.constant_(m.bias, init["bias"])


class MLP(nn.Module):
    """Linear layers with an activation between them, in ``nn.Sequential`` style (``net.0``, ``net.1``...)
    or attribute style (``fc1``, ``relu1``, ...), optional BatchNorm/dropout, optional output activation."""

    def __init__(self, inputs: int, outputs: int, hidden: List[int], activation: str = "relu",
                 style: str = "sequential", batchnorm: bool = False, dropout: float = 0.0,
                 output_activation: Optional[str] = None):
        super().__init__()
        layers = []
        width = inputs
        for h in hidden:
            layers.append(("fc", nn.Linear(width, h)))
            if batchnorm:
                layers.append(("bn", nn.BatchNorm1d(h)))
            layers.append((activation, _ACTIVATIONS[activation]()))
            if dropout:
                layers.append(("dropout", nn.Dropout(dropout)))
            width = h
        layers.append(("fc", nn.Linear(width, outputs)))
        if output_activation == "softmax":
            layers.append(("softmax", nn.Softmax(dim=1)))
        elif output_activation == "sigmoid":
            layers.append(("sigmoid", nn.Sigmoid()))
        elif output_activation == "log_softmax":
            layers.append(("log_softmax", nn.LogSoftmax(dim=1)))
        if style == "sequential":
            self.net = nn.Sequential(*(m for _, m in layers))
        else:
            counts: Dict[str, int] = {}
            named = []
            for kind, m in layers:
                counts[kind] = counts.get(kind, 0) + 1
                named.append((f"{kind}{counts[kind]}", m))
            self.net = None
            for name, m in named:
                self.add_module(name, m)
            self._order = [name for name, _ in named]

    def forward(self, x):
        if self.net is not None:
            return self.net(x)
        for name in self._order:
            x = getattr(self, name)(x)
        return x


class ConvNet(nn.Module):
    """Two 3x3 convolutions (optionally BatchNorm) on 8x8 images, one ReLU module reused, max-pooling, a
    linear classifier; ``functional`` uses ``F.relu`` instead of a module."""

    def __init__(self, channels: int = 16, classes: int = 10, batchnorm: bool = False, functional: bool = False,
                 output_activation: Optional[str] = None):
        super().__init__()
        self.conv1 = nn.Conv2d(1, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(channels, 2 * channels, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(channels) if batchnorm else nn.Identity()
        self.bn2 = nn.BatchNorm2d(2 * channels) if batchnorm else nn.Identity()
        self.relu = None if functional else nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(2 * channels * 4 * 4, classes)
        self.out_act = nn.Softmax(dim=1) if output_activation == "softmax" else None

    def _act(self, x):
        return F.relu(x) if self.relu is None else self.relu(x)

    def forward(self, x):
        x = self._act(self.bn1(self.conv1(x)))
        x = self.pool(self._act(self.bn2(self.conv2(x))))
        x = self.fc(x.flatten(1))
        return x if self.out_act is None else self.out_act(x)


class ResidualBlock(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.relu = nn.ReLU()

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(out)) + x)


class ResNet(nn.Module):
    """A stem convolution, ``blocks`` residual blocks with BatchNorm, global average pooling."""

    def __init__(self, channels: int = 16, blocks: int = 2, classes: int = 10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, channels, 3, padding=1, bias=False), nn.BatchNorm2d(channels),
                                  nn.ReLU())
        self.layers = nn.Sequential(*(ResidualBlock(channels) for _ in range(blocks)))
        self.head = nn.Linear(channels, classes)

    def forward(self, x):
        return self.head(self.layers(self.stem(x)).mean(dim=(2, 3)))


class RecurrentNet(nn.Module):
    """GRU or LSTM over the sequence, a linear classifier on the last hidden state."""

    def __init__(self, inputs: int, hidden: int = 32, classes: int = 2, cell: str = "gru", layers: int = 1):
        super().__init__()
        self.rnn = (nn.GRU if cell == "gru" else nn.LSTM)(inputs, hidden, num_layers=layers, batch_first=True)
        self.classifier = nn.Linear(hidden, classes)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.classifier(out[:, -1])


class BagOfWords(nn.Module):
    """Token embeddings averaged over the non-padding tokens, a hidden layer, a classifier."""

    def __init__(self, vocab: int = 200, dim: int = 32, hidden: int = 32, classes: int = 3):
        super().__init__()
        self.embedding = nn.Embedding(vocab, dim, padding_idx=0)
        self.hidden = nn.Linear(dim, hidden)
        self.act = nn.ReLU()
        self.classifier = nn.Linear(hidden, classes)

    def forward(self, tokens):
        mask = (tokens != 0).float().unsqueeze(-1)
        pooled = (self.embedding(tokens) * mask).sum(1) / mask.sum(1).clamp(min=1)
        return self.classifier(self.act(self.hidden(pooled)))


class LogisticRegression(nn.Module):
    def __init__(self, inputs: int, outputs: int):
        super().__init__()
        self.linear = nn.Linear(inputs, outputs)

    def forward(self, x):
        return self.linear(x)


def build_model(spec: dict, x: np.ndarray, outputs: int) -> nn.Module:
    args = dict(spec)
    arch = args.pop("arch")
    if arch == "mlp":
        return MLP(int(np.prod(x.shape[1:])), outputs, **args)
    if arch == "cnn":
        return ConvNet(classes=outputs, **args)
    if arch == "resnet":
        return ResNet(classes=outputs, **args)
    if arch == "rnn":
        return RecurrentNet(x.shape[-1], classes=outputs, **args)
    if arch == "bow":
        return BagOfWords(classes=outputs, **args)
    if arch == "logreg":
        return LogisticRegression(x.shape[1], outputs)
    raise ValueError(f"unknown arch {arch!r}")


class ManualCrossEntropyLoss(nn.Module):
    """``-log(softmax(logits)[label])`` written out by hand, as in scripts that compute the probabilities
    first: once a probability underflows to 0 the loss is infinite and its gradient NaN."""

    def forward(self, logits, target):
        probs = torch.softmax(logits, dim=1)
        return -torch.log(probs[torch.arange(len(target)), target]).mean()


def _loss(kind: str):
    """(loss module, output units for ``classes``, how targets are given to it)."""
    return {
        "ce": nn.CrossEntropyLoss(), "nll": nn.NLLLoss(), "mse": nn.MSELoss(), "bce": nn.BCEWithLogitsLoss(),
        "manual_ce": ManualCrossEntropyLoss(),
        # MSE between one output unit and the class index as a number: a classification trained as regression
        "mse_labels": nn.MSELoss(),
    }[kind]


def _optimizer(spec: dict, params, maximize: bool):
    args = dict(spec)
    name = args.pop("name")
    cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW,
           "rmsprop": torch.optim.RMSprop, "adagrad": torch.optim.Adagrad}[name]
    return cls(params, maximize=maximize, **args)


def _schedule(spec: Optional[dict], opt, steps: int):
    if not spec:
        return None
    kind = spec["name"]
    if kind == "step":
        return torch.optim.lr_scheduler.StepLR(opt, step_size=spec["step_size"], gamma=spec["gamma"])
    if kind == "cosine":
        return torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    if kind == "warmup":
        warm = spec["steps"]
        return torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm))
    if kind == "warmup_cosine":  # linear warmup, then cosine decay to 0 at the end of the run
        warm = spec["steps"]
        return torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: (s + 1) / warm if s < warm else 0.5 * (1 + np.cos(np.pi * (s - warm) / max(1, steps - warm))))
    if kind == "decay_per_epoch_int":
        # the bug: a decay factor written with integer division, 0 from the first step
        every = spec.get("every", 1000)
        return torch.optim.lr_scheduler.LambdaLR(opt, lambda s: (every - 1) // every)
    raise ValueError(f"unknown schedule {kind!r}")


def _outputs(loss: str, y: np.ndarray) -> int:
    if loss in ("mse", "bce", "mse_labels"):
        return 1
    return int(y.max()) + 1


def _targets(loss: str, y: torch.Tensor) -> torch.Tensor:
    return y.float().unsqueeze(1) if loss in ("mse", "bce", "mse_labels") else y


def train(spec: dict, out_dir: str) -> dict:
    """Train the run ``spec`` describes with the hook writing to ``out_dir``; return facts about the model the
    label checks need (which saved tensors are which layers)."""
    torch.set_num_threads(1)
    seed = spec.get("seed", 0)
    torch.manual_seed(seed)
    bug = spec.get("bug", {})
    x_train, y_train, x_valid, y_valid = datasets.load({**spec["data"], "seed": seed})
    if bug.get("shuffle_labels"):
        # the labels were shuffled on their own (a data-loading bug): nothing links them to the inputs
        y_train = np.random.default_rng(seed + 7).permutation(y_train)
    if bug.get("nan_rows"):
        # missing values read as NaN in a share of the rows, never imputed
        rows = np.random.default_rng(seed + 3).random(len(x_train)) < bug["nan_rows"]
        x_train = x_train.copy()
        x_train[rows, 0] = np.nan
    loss_kind = spec.get("loss", "ce")
    outputs = _outputs(loss_kind, y_train)
    model = build_model(spec["model"], x_train, outputs)
    _init(model, spec.get("init"))
    maximize = bool(bug.get("gradient_ascent"))
    opt = _optimizer(spec["optimizer"], model.parameters(), maximize)
    if bug.get("stale_optimizer"):
        # the model is rebuilt (e.g. to move it or reload a config) after the optimiser was made: the
        # optimiser updates the old parameters, the trained model never changes
        model = build_model(spec["model"], x_train, outputs)
        _init(model, spec.get("init"))
    steps = spec.get("steps", 300)
    sched = _schedule(spec.get("schedule"), opt, steps)
    loss_fn = _loss(loss_kind)
    hook = torch_hook(out_dir)
    hook.register_module(model)
    hook.register_loss(loss_fn)
    import smdebug.pytorch as smd

    xt, yt = torch.from_numpy(x_train), torch.from_numpy(y_train)
    xv, yv = torch.from_numpy(x_valid), torch.from_numpy(y_valid)
    bs, eval_every = spec.get("batch_size", 32), spec.get("eval_every", 25)
    eval_batches = spec.get("eval_batches", min(4, -(-len(xv) // 128)))  # the whole validation set, up to 512 rows
    clip = spec.get("clip")
    g = torch.Generator().manual_seed(seed)
    order, pos = torch.randperm(len(xt), generator=g), 0
    for step in range(steps):
        if pos + bs > len(xt):
            order, pos = torch.randperm(len(xt), generator=g), 0
        idx = order[pos:pos + bs]
        pos += bs
        hook.set_mode(smd.modes.TRAIN)
        model.train()
        out = model(xt[idx])
        loss = loss_fn(out.squeeze(1) if loss_kind == "mse_labels" else out,
                       yt[idx].float() if loss_kind == "mse_labels" else _targets(loss_kind, yt[idx]))
        opt.zero_grad()
        loss.backward()
        if bug.get("zero_grad_after_backward"):
            opt.zero_grad()  # the bug: clears the gradients it just computed, so step() has nothing to apply
        if clip:
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        if sched is not None:
            sched.step()
        if (step + 1) % eval_every == 0:
            hook.set_mode(smd.modes.EVAL)
            model.eval()
            with torch.no_grad():
                for b in range(eval_batches):
                    start = (b * 128) % len(xv)
                    sl = slice(start, start + 128)
                    out = model(xv[sl])
                    loss_fn(out.squeeze(1) if loss_kind == "mse_labels" else out,
                            yv[sl].float() if loss_kind == "mse_labels" else _targets(loss_kind, yv[sl]))
    hook.close()
    facts = _model_facts(model, loss_fn, steps)
    facts["loss_expects"] = {"ce": "logits", "bce": "logits", "manual_ce": "logits", "nll": "log_probs"}.get(
        loss_kind, "values")
    facts["targets_are_classes"] = loss_kind == "mse_labels"
    return facts


def _model_facts(model: nn.Module, loss_fn: nn.Module, steps: int) -> dict:
    """Which saved tensors are which layers (regexes over the names the hook gives), by module type."""
    prefix = type(model).__name__
    inputs: Dict[str, List[str]] = {}
    outputs: Dict[str, List[str]] = {}
    for name, module in model.named_modules():
        for kind, cls in _ACTIVATIONS.items():
            if type(module) is cls and name:
                inputs.setdefault(kind, []).append(f"^{re.escape(name)}_input_\\d+$")
                outputs.setdefault(kind, []).append(f"^{re.escape(name)}_output_\\d+$")
    weights = [f"{prefix}_{name}" for name, p in model.named_parameters() if p.dim() >= 2 and p.requires_grad]
    loss = type(loss_fn).__name__
    return {"framework": "torch", "model_input": f"^{prefix}_input_0$", "activation_inputs": inputs,
            "activation_outputs": outputs, "weights": weights, "gradient_prefix": "gradient/",
            "loss": f"^{loss}_output_0$", "predictions": f"^{loss}_input_0$", "labels": f"^{loss}_input_1$",
            "train_steps": steps}
