"""PyTorch held-out runs (scenarios ``hh_``/``bh_``): written apart from torch_runs.py, which the rules were
designed against, and the way other people's training scripts look.

Other architectures (a transformer encoder, 1-D convolutions, an autoencoder, a deep residual MLP with
LayerNorm and GELU, multi-task heads, a vanilla RNN), other losses (multi-label BCE, label smoothing, Huber,
L1, NLL, KL divergence), other optimisers and schedules (OneCycle, cosine with warm restarts,
ReduceLROnPlateau, warmup then linear decay, gradient clipping, weight decay), an epoch loop over a shuffled
index with validation once per epoch (or never), gradient accumulation counted by ``hook.register_optimizer``,
bf16 autocast, and lengths from 15 to 2000 steps. ``spec["hook"]`` says how the run is recorded
(hooks.HELDOUT_HOOKS; ``Hook.recommended(out_dir)`` unless told otherwise). ``spec["bug"]`` is the mistake,
each one acting where a script makes it (the loop says where).
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from . import heldout_data
from .hooks import heldout_torch_hook

_ACT = {"relu": nn.ReLU, "tanh": nn.Tanh, "sigmoid": nn.Sigmoid, "gelu": nn.GELU, "silu": nn.SiLU}


# ----------------------------------------------------------------------------------------------- models
class FeedForward(nn.Module):
    """Linear layers with an activation module after each, optional LayerNorm and dropout, an optional
    output activation module (``softmax``, ``sigmoid``, ``log_softmax``)."""

    def __init__(self, inputs, outputs, hidden, activation="relu", dropout=0.0, layernorm=False,
                 output_activation=None):
        super().__init__()
        layers: List[nn.Module] = []
        width = inputs
        for h in hidden:
            layers.append(nn.Linear(width, h))
            if layernorm:
                layers.append(nn.LayerNorm(h))
            layers.append(_ACT[activation]())
            if dropout:
                layers.append(nn.Dropout(dropout))
            width = h
        layers.append(nn.Linear(width, outputs))
        if output_activation == "softmax":
            layers.append(nn.Softmax(dim=-1))
        elif output_activation == "sigmoid":
            layers.append(nn.Sigmoid())
        elif output_activation == "log_softmax":
            layers.append(nn.LogSoftmax(dim=-1))
        self.layers = nn.Sequential(*layers)

    def forward(self, x):
        return self.layers(x.flatten(1))


class TokenTransformer(nn.Module):
    """Token embeddings + learned positions, a small transformer encoder (GELU, dropout; pre-norm unless
    ``norm_first`` is False: the original post-norm layout, which needs a warmup), mean pooling over the
    non-padding tokens, a linear classifier."""

    def __init__(self, vocab=200, length=24, dim=32, heads=4, layers=2, classes=3, dropout=0.1, norm_first=True):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim, padding_idx=0)
        self.position = nn.Parameter(torch.zeros(1, length, dim))
        layer = nn.TransformerEncoderLayer(dim, heads, dim_feedforward=2 * dim, dropout=dropout, activation="gelu",
                                           batch_first=True, norm_first=norm_first)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, tokens):
        pad = tokens == 0
        h = self.encoder(self.embed(tokens) + self.position[:, :tokens.shape[1]], src_key_padding_mask=pad)
        keep = (~pad).float().unsqueeze(-1)
        return self.head(self.norm((h * keep).sum(1) / keep.sum(1).clamp(min=1)))


class Conv1dNet(nn.Module):
    """Two 1-D convolutions over time (BatchNorm, SiLU or ReLU modules), global average pooling, a head.
    Takes (batch, time, features) as the data comes and transposes it."""

    def __init__(self, features, classes, channels=16, activation="silu"):
        super().__init__()
        self.conv1 = nn.Conv1d(features, channels, 5, padding=2)
        self.bn1 = nn.BatchNorm1d(channels)
        self.act1 = _ACT[activation]()
        self.conv2 = nn.Conv1d(channels, 2 * channels, 5, padding=2)
        self.bn2 = nn.BatchNorm1d(2 * channels)
        self.act2 = _ACT[activation]()
        self.head = nn.Linear(2 * channels, classes)

    def forward(self, x):
        x = x.transpose(1, 2)
        x = self.act1(self.bn1(self.conv1(x)))
        x = self.act2(self.bn2(self.conv2(x)))
        return self.head(x.mean(-1))


class AutoEncoder(nn.Module):
    def __init__(self, inputs, code=8, hidden=32, activation="relu"):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(inputs, hidden), _ACT[activation](), nn.Linear(hidden, code),
                                     _ACT[activation]())
        self.decoder = nn.Sequential(nn.Linear(code, hidden), _ACT[activation](), nn.Linear(hidden, inputs))

    def forward(self, x):
        return self.decoder(self.encoder(x.flatten(1)))


class ResidualBlock(nn.Module):
    def __init__(self, dim, dropout):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 2 * dim)
        self.act = nn.GELU()
        self.drop = nn.Dropout(dropout)
        self.fc2 = nn.Linear(2 * dim, dim)

    def forward(self, x):
        return x + self.fc2(self.drop(self.act(self.fc1(self.norm(x)))))


class ResidualMLP(nn.Module):
    """A stem, ``blocks`` pre-norm residual blocks (LayerNorm, GELU, dropout), a final LayerNorm and head."""

    def __init__(self, inputs, outputs, dim=32, blocks=8, dropout=0.0):
        super().__init__()
        self.stem = nn.Linear(inputs, dim)
        self.blocks = nn.Sequential(*(ResidualBlock(dim, dropout) for _ in range(blocks)))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, outputs)

    def forward(self, x):
        return self.head(self.norm(self.blocks(self.stem(x.flatten(1)))))


class MultiTask(nn.Module):
    """A shared ReLU trunk with two heads: class scores and one regression output (returned as a pair)."""

    def __init__(self, inputs, classes, hidden=64):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(inputs, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.classify = nn.Linear(hidden, classes)
        self.regress = nn.Linear(hidden, 1)

    def forward(self, x):
        h = self.trunk(x.flatten(1))
        return self.classify(h), self.regress(h).squeeze(-1)


class Recurrent(nn.Module):
    """``nn.RNN`` (tanh), GRU or LSTM, a head on the last state, optionally ``LogSoftmax`` (for NLLLoss)."""

    def __init__(self, features, classes, hidden=32, cell="rnn", layers=1, log_softmax=False):
        super().__init__()
        self.rnn = {"rnn": nn.RNN, "gru": nn.GRU, "lstm": nn.LSTM}[cell](features, hidden, num_layers=layers,
                                                                        batch_first=True)
        self.head = nn.Linear(hidden, classes)
        self.out = nn.LogSoftmax(dim=-1) if log_softmax else nn.Identity()

    def forward(self, x):
        h, _ = self.rnn(x)
        return self.out(self.head(h[:, -1]))


class SmallCNN(nn.Module):
    """Convolutions on 8x8 images: ``blocks`` residual conv blocks (BatchNorm, ReLU modules) after a stem."""

    def __init__(self, classes, channels=16, blocks=0):
        super().__init__()
        self.stem = nn.Conv2d(1, channels, 3, padding=1)
        self.stem_act = nn.ReLU()
        self.blocks = nn.ModuleList()
        for _ in range(blocks):
            self.blocks.append(nn.ModuleDict({"conv": nn.Conv2d(channels, channels, 3, padding=1, bias=False),
                                              "bn": nn.BatchNorm2d(channels), "act": nn.ReLU()}))
        self.head = nn.Linear(channels, classes)

    def forward(self, x):
        x = self.stem_act(self.stem(x))
        for b in self.blocks:
            x = b["act"](b["bn"](b["conv"](x)) + x)
        return self.head(x.mean(dim=(2, 3)))


def build(spec: dict, x: np.ndarray, outputs: int) -> nn.Module:
    args = dict(spec)
    arch = args.pop("arch")
    flat = int(np.prod(x.shape[1:]))
    if arch == "mlp":
        return FeedForward(flat, outputs, **args)
    if arch == "transformer":
        return TokenTransformer(length=x.shape[1], classes=outputs, **args)
    if arch == "conv1d":
        return Conv1dNet(x.shape[-1], outputs, **args)
    if arch == "autoencoder":
        return AutoEncoder(flat, **args)
    if arch == "resmlp":
        return ResidualMLP(flat, outputs, **args)
    if arch == "multitask":
        return MultiTask(flat, outputs, **args)
    if arch == "recurrent":
        return Recurrent(x.shape[-1], outputs, **args)
    if arch == "cnn":
        return SmallCNN(outputs, **args)
    raise ValueError(f"unknown arch {arch!r}")


def _init(model: nn.Module, init: Optional[dict]) -> None:
    if not init:
        return
    for m in model.modules():
        if isinstance(m, (nn.Linear, nn.Conv1d, nn.Conv2d)):
            if "std" in init:
                nn.init.normal_(m.weight, 0.0, init["std"])
            if "bias" in init and m.bias is not None:
                nn.init.constant_(m.bias, init["bias"])
        if isinstance(m, nn.RNN) and "recurrent_std" in init:
            for name, p in m.named_parameters():
                if name.startswith("weight_hh"):
                    nn.init.normal_(p, 0.0, init["recurrent_std"])


# ------------------------------------------------------------------------------------- losses, optimisers
def _loss_modules(kind: str) -> List[nn.Module]:
    return {
        "ce": [nn.CrossEntropyLoss()], "ce_smooth": [nn.CrossEntropyLoss(label_smoothing=0.1)],
        "bce": [nn.BCEWithLogitsLoss()], "huber": [nn.HuberLoss(delta=1.0)], "l1": [nn.L1Loss()],
        "nll": [nn.NLLLoss()], "kldiv": [nn.KLDivLoss(reduction="batchmean")], "mse": [nn.MSELoss()],
        "mse_recon": [nn.MSELoss()], "multitask": [nn.CrossEntropyLoss(), nn.SmoothL1Loss()],
        "mse_labels": [nn.MSELoss()],
    }[kind]


def _outputs(kind: str, y: np.ndarray) -> int:
    if kind in ("huber", "l1", "mse", "mse_labels"):
        return 1
    if kind == "bce":
        return y.shape[1] if y.ndim == 2 else 1
    return int(y.max()) + 1


def _optimizer(spec: dict, params):
    args = dict(spec)
    name = args.pop("name")
    cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW,
           "rmsprop": torch.optim.RMSprop, "adagrad": torch.optim.Adagrad, "nadam": torch.optim.NAdam}[name]
    return cls(params, **args)


def _schedule(spec: Optional[dict], opt, total: int):
    """(scheduler, when it steps: "step" or "epoch" (ReduceLROnPlateau: on the validation loss))."""
    if not spec:
        return None, None
    kind = spec["name"]
    sched = torch.optim.lr_scheduler
    if kind == "onecycle":
        return sched.OneCycleLR(opt, max_lr=spec["max_lr"], total_steps=total), "step"
    if kind == "cosine_restarts":
        return sched.CosineAnnealingWarmRestarts(opt, T_0=spec["period"], T_mult=spec.get("mult", 1)), "step"
    if kind == "plateau":
        return sched.ReduceLROnPlateau(opt, factor=spec.get("factor", 0.5), patience=spec.get("patience", 2)), "epoch"
    if kind == "warmup_linear":  # linear warmup to the base rate, then linear decay to 0
        warm = spec["warmup"]
        return sched.LambdaLR(opt, lambda s: (s + 1) / warm if s < warm else max(0.0, (total - s) / max(1, total - warm))), "step"
    if kind == "exponential":
        return sched.ExponentialLR(opt, gamma=spec["gamma"]), "step"
    raise ValueError(f"unknown schedule {kind!r}")


# ----------------------------------------------------------------------------------------------- training
def _data(spec: dict, seed: int, bug: dict):
    x_train, y_train, x_valid, y_valid = heldout_data.load({**spec["data"], "seed": seed})
    if bug.get("constant_feature_zero_std"):
        # a feature that is constant in this data set, standardised with no epsilon: 0 / 0 = NaN in every row
        x_train, x_valid = (np.column_stack([a, np.full(len(a), 3.0, np.float32)]) for a in (x_train, x_valid))
        mean, std = x_train.mean(0), x_train.std(0)
        with np.errstate(all="ignore"):
            x_train, x_valid = ((a - mean) / std for a in (x_train, x_valid))
    if bug.get("mean_only_images"):
        # 8-bit pixels with the mean subtracted but never divided by the standard deviation
        x_train, x_valid = (np.round(a * 255 / 16) - 127.5 for a in (x_train, x_valid))
    if bug.get("labels_shifted"):
        # an index off by one when the labels were joined to the rows: row i gets row i+1's label
        y_train = np.roll(y_train, -1, axis=0)
    if bug.get("sorted_by_label"):
        order = np.argsort(y_train if y_train.ndim == 1 else y_train[:, 0], kind="stable")
        x_train, y_train = x_train[order], y_train[order]
    return (x_train.astype(np.float32) if x_train.dtype.kind == "f" else x_train, y_train,
            x_valid.astype(np.float32) if x_valid.dtype.kind == "f" else x_valid, y_valid)


def _teacher_probs(x: np.ndarray, y: np.ndarray, classes: int, seed: int) -> np.ndarray:
    """Soft targets for distillation: a teacher's softened class probabilities (here: the true class with
    70%, the rest spread by a fixed random similarity between classes)."""
    rng = np.random.default_rng(seed + 5)
    sim = rng.random((classes, classes))
    np.fill_diagonal(sim, 0)
    sim = 0.3 * sim / sim.sum(1, keepdims=True)
    probs = sim[y]
    probs[np.arange(len(y)), y] = 0.7
    return probs.astype(np.float32)


def _pretrain_and_freeze(model: nn.Module, spec: dict, x: np.ndarray, y: np.ndarray, seed: int) -> None:
    """Transfer learning as done in practice: the model is trained first (here, before the hook exists, on
    the same data), then every layer but the head is frozen (``requires_grad = False``) and the head is
    re-initialised for the new training."""
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(seed + 9)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    for _ in range(spec["pretrain_then_freeze"]["epochs"]):
        order = torch.randperm(len(xt), generator=g)
        for start in range(0, len(order) - 31, 32):
            idx = order[start:start + 32]
            opt.zero_grad()
            loss_fn(model(xt[idx]), yt[idx]).backward()
            opt.step()
    head = model.layers[-1]
    for p in model.parameters():
        p.requires_grad = False
    head.reset_parameters()
    for p in head.parameters():
        p.requires_grad = True


def train(spec: dict, out_dir: str) -> dict:
    torch.set_num_threads(1)
    seed = spec.get("seed", 0)
    torch.manual_seed(seed)
    bug = spec.get("bug", {})
    x_train, y_train, x_valid, y_valid = _data(spec, seed, bug)
    loss_kind = spec.get("loss", "ce")
    outputs = _outputs(loss_kind, y_train)
    model = build(spec["model"], x_train, outputs)
    _init(model, spec.get("init"))
    if spec.get("pretrain_then_freeze"):
        _pretrain_and_freeze(model, spec, x_train, y_train, seed)
    opt = _optimizer(spec["optimizer"], [p for p in model.parameters() if p.requires_grad])
    losses = _loss_modules(loss_kind)
    bs = spec.get("batch_size", 32)
    accumulate = spec.get("accumulate", 1)
    per_epoch = max(1, len(x_train) // (bs * accumulate))
    total = spec.get("steps") or spec.get("epochs", 10) * per_epoch
    sched, sched_when = _schedule(spec.get("schedule"), opt, total)
    if loss_kind == "kldiv":
        soft_train = _teacher_probs(x_train, y_train, outputs, seed)
        soft_valid = _teacher_probs(x_valid, y_valid, outputs, seed)

    hook = heldout_torch_hook(out_dir, spec.get("hook", "recommended"))
    hook.register_module(model)
    for loss_fn in losses:
        hook.register_loss(loss_fn)
    if accumulate > 1:
        hook.register_optimizer(opt)  # one step per optimizer step, gradients as the optimizer sees them
    import smdebug.pytorch as smd

    def targets(y_np, idx, soft=None):
        if loss_kind == "kldiv":
            return torch.from_numpy(soft[idx])
        y = torch.from_numpy(y_np[idx])
        if loss_kind in ("huber", "l1", "mse"):
            return y.float().unsqueeze(1)
        if loss_kind == "mse_labels":
            return y.float().unsqueeze(1)
        if loss_kind == "bce":
            return y.float() if y.ndim == 2 else y.float().unsqueeze(1)
        return y

    def compute_loss(out, x_b, y_np, idx, soft=None):
        if loss_kind == "mse_recon":
            return losses[0](out, x_b.flatten(1))
        if loss_kind == "multitask":
            scores, value = out
            aux = torch.from_numpy(np.asarray(x_b.flatten(1)[:, 0].numpy() ** 2, dtype=np.float32))
            return losses[0](scores, torch.from_numpy(y_np[idx])) + 0.5 * losses[1](value, aux)
        if loss_kind == "kldiv":
            return losses[0](F.log_softmax(out, dim=-1), targets(y_np, idx, soft))
        return losses[0](out, targets(y_np, idx, soft))

    autocast = spec.get("autocast")
    clip = spec.get("clip")
    validate = spec.get("validate", "epoch")  # "epoch", "none", or every N optimizer steps
    g = torch.Generator().manual_seed(seed)
    xt = torch.from_numpy(x_train)
    xv = torch.from_numpy(x_valid)
    step = 0
    epoch = 0

    def run_validation():
        hook.set_mode(smd.modes.EVAL)
        model.eval()
        total_loss, batches = 0.0, 0
        with torch.no_grad():
            for start in range(0, min(len(xv), 512), 128):
                idx = np.arange(start, min(start + 128, len(xv)))
                out = model(xv[idx])
                total_loss += float(compute_loss(out, xv[idx], y_valid, idx, soft_valid if loss_kind == "kldiv" else None))
                batches += 1
        return total_loss / max(1, batches)

    while step < total:
        if bug.get("sorted_by_label") or bug.get("no_shuffle"):
            order = np.arange(len(xt))  # the loader was built with shuffle=False
        else:
            order = torch.randperm(len(xt), generator=g).numpy()
        micro = 0
        for start in range(0, len(order) - bs + 1, bs):
            if step >= total:
                break
            idx = order[start:start + bs]
            hook.set_mode(smd.modes.TRAIN)
            model.train()
            if micro == 0 and not bug.get("no_zero_grad"):
                opt.zero_grad()
            if bug.get("step_before_backward"):
                opt.step()  # the bug: the step comes before backward(), right after zero_grad() cleared everything
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bool(autocast)):
                out = model(xt[idx])
                loss = compute_loss(out, xt[idx], y_train, idx, soft_train if loss_kind == "kldiv" else None)
            (loss / accumulate).backward()
            micro += 1
            if micro < accumulate:
                continue
            micro = 0
            if clip:
                nn.utils.clip_grad_norm_(model.parameters(), clip)
            if not bug.get("step_before_backward"):
                opt.step()
            step += 1
            if sched is not None and sched_when == "step":
                sched.step()
            if isinstance(validate, int) and step % validate == 0:
                run_validation()
        epoch += 1
        if validate == "epoch":
            val = run_validation()
            if sched is not None and sched_when == "epoch":
                sched.step(val)
        elif sched is not None and sched_when == "epoch":
            sched.step(float(loss))
    hook.close()
    facts = _facts(model, losses, total)
    facts["loss_expects"] = {"ce": "logits", "ce_smooth": "logits", "bce": "logits", "nll": "log_probs",
                             "kldiv": "log_probs"}.get(loss_kind, "values")
    facts["targets_are_classes"] = loss_kind == "mse_labels"
    return facts


def _facts(model: nn.Module, losses: List[nn.Module], steps: int) -> dict:
    """Which saved tensors are which layers, by module type (as properties.py reads them)."""
    prefix = type(model).__name__
    inputs: Dict[str, List[str]] = {}
    outputs: Dict[str, List[str]] = {}
    for name, module in model.named_modules():
        for kind in ("relu", "tanh", "sigmoid"):
            if type(module) is _ACT[kind] and name:
                inputs.setdefault(kind, []).append(f"^{re.escape(name)}_input_\\d+$")
                outputs.setdefault(kind, []).append(f"^{re.escape(name)}_output_\\d+$")
    weights = [f"{prefix}_{name}" for name, p in model.named_parameters() if p.dim() >= 2 and name != "position"]
    loss = type(losses[0]).__name__
    return {"framework": "torch", "model_input": f"^{prefix}_input_0$", "activation_inputs": inputs,
            "activation_outputs": outputs, "weights": weights, "gradient_prefix": "gradient/",
            "loss": f"^{loss}_output_0$", "predictions": f"^{loss}_input_0$", "labels": f"^{loss}_input_1$",
            "train_steps": steps}
