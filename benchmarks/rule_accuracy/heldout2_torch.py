"""PyTorch runs of the second held-out batch (scenarios ``h2_``/``b2_``): written apart from torch_runs.py and
heldout_torch.py, the way other people's scripts look.

A run is a *task* (what the model computes and how its loss is formed: classification, language modelling,
sequence-to-sequence, regression with a Gaussian likelihood or quantiles, a VAE, metric learning with
triplets, InfoNCE or a siamese contrastive loss) and a loop (epochs over a shuffled index; validation every
epoch, every N steps, once at the end or never; early stopping; gradient accumulation counted by
``hook.register_optimizer``; clipping; bf16 autocast; ``torch.compile``; SWA; mixup; a curriculum that
admits harder rows epoch by epoch; fine-tuning a body trained first in the same script). ``spec["bug"]`` is
the mistake, made where a script makes it; ``spec["hook"]`` says how the run is recorded
(hooks.heldout2_torch_hook). Models and custom losses are in heldout2_torch_models.py.
"""

from __future__ import annotations

import re
from typing import Dict, List

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from . import heldout2_data
from . import heldout2_torch_models as M
from .hooks import heldout2_torch_hook


# ---------------------------------------------------------------------------------------------------- tasks
class Task:
    """What a run computes: its model, its loss modules (registered with the hook, the objective's first),
    and the loss of a batch of row indices."""

    loss_expects = "values"
    targets_are_classes = False
    kind = "classification"

    def __init__(self, spec, data):
        self.spec, self.bug = spec, spec.get("bug", {})
        self.x_train, self.y_train, self.x_valid, self.y_valid = data
        self.losses: List[nn.Module] = []

    def loss(self, model, x, y, training):
        raise NotImplementedError


class Classify(Task):
    """Class scores from any model; cross-entropy (label smoothing, class weights, mixup), NLL, focal, GCE,
    or a hand-written BCE on probabilities."""

    def __init__(self, spec, data):
        super().__init__(spec, data)
        kind = spec.get("loss", "ce")
        self.loss_kind = kind
        y = self.y_train
        self.classes = 1 if kind in ("focal", "bce_handwritten") else int(max(y.max(), self.y_valid.max())) + 1
        if self.bug.get("labels_one_class"):
            self.classes = 2
        weight = None
        if kind == "ce_weighted":
            counts = np.bincount(y, minlength=self.classes).astype(np.float32)
            inv = counts.sum() / (self.classes * np.maximum(counts, 1))
            # the bug: the weights are the class frequencies instead of their inverse
            weight = torch.tensor(1.0 / inv if self.bug.get("weights_inverted") else inv)
        self.losses = [{"ce": lambda: nn.CrossEntropyLoss(), "ce_weighted": lambda: nn.CrossEntropyLoss(weight=weight),
                        "nll": lambda: nn.NLLLoss(), "focal": lambda: M.FocalLoss(), "gce": lambda: M.GCELoss(),
                        "bce_handwritten": lambda: M.HandwrittenBCE()}[kind]()]
        self.loss_expects = {"nll": "log_probs", "bce_handwritten": "probabilities"}.get(kind, "logits")

    def loss(self, model, x, y, training):
        loss_fn = self.losses[0]
        if self.loss_kind in ("focal", "bce_handwritten"):
            out = model(x).squeeze(-1)
            if self.loss_kind == "bce_handwritten":
                out = torch.sigmoid(out)
            return loss_fn(out, y.float())
        if training and self.spec.get("mixup"):
            # mixup (Zhang et al. 2018): convex combinations of two rows and of their one-hot targets
            lam = float(np.random.default_rng(int(y.sum()) + len(y)).beta(self.spec["mixup"], self.spec["mixup"]))
            perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(int(y[0]) + len(y)))
            soft = F.one_hot(y, self.classes).float()
            return loss_fn(model(lam * x + (1 - lam) * x[perm]), lam * soft + (1 - lam) * soft[perm])
        return loss_fn(model(x), y)


class LanguageModel(Task):
    """Next-token prediction: logits (batch, time, vocab) flattened against the shifted tokens."""

    kind = "language_model"
    loss_expects = "logits"

    def __init__(self, spec, data):
        super().__init__(spec, data)
        self.vocab = int(self.x_train.max()) + 1
        self.losses = [nn.CrossEntropyLoss()]

    def loss(self, model, x, y, training):
        logits = model(x)
        return self.losses[0](logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


class Reverse(Task):
    """Sequence-to-sequence with teacher forcing: the decoder reads <start> + the target shifted right."""

    kind = "language_model"
    loss_expects = "logits"

    def __init__(self, spec, data):
        super().__init__(spec, data)
        self.vocab = int(self.x_train.max()) + 1
        self.losses = [nn.CrossEntropyLoss()]

    def loss(self, model, x, y, training):
        dec_in = torch.cat([torch.zeros_like(y[:, :1]), y[:, :-1]], dim=1)
        logits = model(x, dec_in)
        return self.losses[0](logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


class Regress(Task):
    """One output (or one per quantile) against a real-valued target: MSE, Huber, pinball; the bug
    ``broadcast``: a (batch, 1) prediction against a (batch,) target, which MSELoss broadcasts to
    (batch, batch) with only a warning."""

    kind = "regression"

    def __init__(self, spec, data):
        super().__init__(spec, data)
        kind = spec.get("loss", "mse")
        self.loss_kind = kind
        self.outputs = 3 if kind == "pinball" else 1
        self.losses = [{"mse": nn.MSELoss, "huber": nn.HuberLoss, "pinball": M.PinballLoss,
                        "mse_sum": lambda: nn.MSELoss(reduction="sum")}[kind]()]

    def loss(self, model, x, y, training):
        out = model(x)
        if self.loss_kind == "pinball":
            return self.losses[0](out, y)
        if self.bug.get("broadcast"):
            return self.losses[0](out, y)
        return self.losses[0](out.squeeze(-1), y)


class GaussianNLL(Task):
    """Heteroscedastic regression: a mean and a variance per row, GaussianNLLLoss (negative once the
    variance fits below 1/(2 pi e))."""

    kind = "regression"

    def __init__(self, spec, data):
        super().__init__(spec, data)
        self.losses = [nn.GaussianNLLLoss()]

    def loss(self, model, x, y, training):
        mean, logvar = model(x)
        return self.losses[0](mean, y, torch.exp(logvar))


class VAELoss(Task):
    """ELBO: a summed MSE reconstruction (the registered loss module) plus beta * KL, beta warmed up from 0
    to 1 over ``anneal`` steps; the objective is recorded with ``hook.record_tensor_value("vae_loss", ...)``.
    The bug ``kl_sign``: the KL term subtracted."""

    kind = "reconstruction"

    def __init__(self, spec, data):
        super().__init__(spec, data)
        self.losses = [nn.MSELoss(reduction="sum")]
        self.hook = None
        self.step = 0

    def loss(self, model, x, y, training):
        recon, mu, logvar = model(x)
        rec = self.losses[0](recon, x.flatten(1)) / len(x)
        kl = -0.5 * torch.mean(torch.sum(1 + logvar - mu ** 2 - logvar.exp(), dim=1))
        beta = min(1.0, self.step / self.spec.get("anneal", 1)) if training else 1.0
        total = rec - beta * kl if self.bug.get("kl_sign") else rec + beta * kl
        if self.hook is not None:
            self.hook.record_tensor_value("vae_loss", total)
        if training:
            self.step += 1
        return total


class Triplet(Task):
    """Metric learning with random triplets from the batch (anchor, same-class positive, other-class
    negative), one forward pass over the three stacked."""

    kind = "embedding"

    def __init__(self, spec, data):
        super().__init__(spec, data)
        self.losses = [nn.TripletMarginLoss(margin=1.0)]

    def loss(self, model, x, y, training):
        g = torch.Generator().manual_seed(int(y.sum()) * 31 + len(y))
        yy = y.numpy()
        pos, neg = [], []
        for i, label in enumerate(yy):
            same, other = np.flatnonzero(yy == label), np.flatnonzero(yy != label)
            r = torch.randint(0, 1 << 30, (2,), generator=g).numpy()
            pos.append(same[r[0] % len(same)])
            neg.append(other[r[1] % len(other)])
        z = model(torch.cat([x, x[pos], x[neg]]))
        a, p, n = z.split(len(x))
        return self.losses[0](a, p, n)


class InfoNCE(Task):
    """Contrastive learning of two noisy views (Gaussian jitter, feature dropout): cosine similarities over
    a temperature, cross-entropy against the matching index (SimCLR's loss, one direction)."""

    kind = "embedding"
    loss_expects = "logits"

    def __init__(self, spec, data):
        super().__init__(spec, data)
        self.losses = [nn.CrossEntropyLoss()]
        self.calls = 0

    def loss(self, model, x, y, training):
        g = torch.Generator().manual_seed(self.calls)
        self.calls += 1
        views = [x + 0.3 * torch.randn(x.shape, generator=g) for _ in range(2)]
        views = [v * (torch.rand(v.shape, generator=g) > 0.2) for v in views]
        z = model(torch.cat(views))
        z1, z2 = z.split(len(x))
        return self.losses[0](z1 @ z2.T / 0.2, torch.arange(len(x)))


class Siamese(Task):
    """Siamese pairs from the batch: each row with a partner; ``same`` = 1 when they share a class. The bug
    ``identical_pairs``: a row is sometimes paired with itself (no augmentation), and the distance is
    sqrt(sum d^2) with no epsilon."""

    kind = "embedding"

    def __init__(self, spec, data):
        super().__init__(spec, data)
        self.losses = [M.ContrastiveLoss(eps=0.0 if self.bug.get("identical_pairs") else 1e-9)]

    def loss(self, model, x, y, training):
        partner = torch.roll(torch.arange(len(x)), 1)
        if self.bug.get("identical_pairs"):
            partner[::8] = torch.arange(len(x))[::8]
        z = model(torch.cat([x, x[partner]]))
        a, b = z.split(len(x))
        return self.losses[0](a, b, (y == y[partner]).float())


TASKS = {"classify": Classify, "lm": LanguageModel, "reverse": Reverse, "regress": Regress,
         "gaussian_nll": GaussianNLL, "vae": VAELoss, "triplet": Triplet, "infonce": InfoNCE, "siamese": Siamese}


# --------------------------------------------------------------------------------------------------- models
def build(spec: dict, task: Task) -> nn.Module:
    args = dict(spec)
    arch = args.pop("arch")
    x = task.x_train
    flat = int(np.prod(x.shape[1:]))
    if arch == "mlp":
        outputs = getattr(task, "outputs", None) or getattr(task, "classes", None) or args.pop("outputs")
        return M.MLP(flat, outputs, **args)
    if arch == "gpt":
        return M.TinyGPT(task.vocab, x.shape[1], **args)
    if arch == "lstm_lm":
        return M.LSTMLanguageModel(task.vocab, **args)
    if arch == "gn_resnet":
        return M.GNResNet(task.classes, **args)
    if arch == "cnn":
        return M.PlainCNN(task.classes, **args)
    if arch == "vae":
        return M.VAE(flat, **args)
    if arch == "seq2seq":
        return M.Seq2Seq(task.vocab, **args)
    if arch == "encoder":
        return M.Encoder(flat, **args)
    if arch == "bag":
        return M.BagClassifier(int(x.max()) + 1, task.classes, **args)
    if arch == "detached":
        return M.DetachedEncoderNet(flat, task.classes, **args)
    if arch == "meanvar":
        return M.MeanVar(flat, **args)
    if arch == "gru":
        return GRUClassifier(x.shape[-1], task.classes, **args)
    raise ValueError(f"unknown arch {arch!r}")


class GRUClassifier(nn.Module):
    def __init__(self, features, classes, hidden=32):
        super().__init__()
        self.gru = nn.GRU(features, hidden, batch_first=True)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        h, _ = self.gru(x)
        return self.head(h[:, -1])


def _optimizer(spec: dict, params):
    args = dict(spec)
    name = args.pop("name")
    cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW, "lion": M.Lion,
           "adagrad": torch.optim.Adagrad, "adadelta": torch.optim.Adadelta, "rmsprop": torch.optim.RMSprop}[name]
    return cls(params, **args)


def _schedule(spec, opt, total: int, per_epoch: int):
    """(scheduler, "step" | "epoch"): when the script steps it."""
    if not spec:
        return None, None
    kind, sched = spec["name"], torch.optim.lr_scheduler
    if kind == "multistep":  # drops at fractions of the run, per epoch as the recipe says
        epochs = max(1, total // per_epoch)
        return sched.MultiStepLR(opt, [int(f * epochs) for f in spec["at"]], gamma=spec.get("gamma", 0.1)), "epoch"
    if kind == "cyclic":
        return sched.CyclicLR(opt, base_lr=spec["base"], max_lr=spec["max"], step_size_up=spec.get("up", per_epoch),
                              mode=spec.get("mode", "triangular2")), "step"
    if kind == "warmup_cosine":
        warm = spec["warmup"]
        return sched.LambdaLR(opt, lambda s: (s + 1) / warm if s < warm else
                              0.5 * (1 + np.cos(np.pi * (s - warm) / max(1, total - warm)))), "step"
    if kind == "cosine":
        return sched.CosineAnnealingLR(opt, T_max=total), "step"
    if kind == "exponential":  # meant per epoch; the bug ``per_batch`` steps it every batch
        return sched.ExponentialLR(opt, gamma=spec["gamma"]), ("step" if spec.get("per_batch") else "epoch")
    raise ValueError(f"unknown schedule {kind!r}")


# ------------------------------------------------------------------------------------------------- data
def _data(spec: dict, seed: int, bug: dict):
    x_train, y_train, x_valid, y_valid = heldout2_data.load({**spec["data"], "seed": seed})
    if bug.get("features_shuffled"):
        # np.random.shuffle(X) on the feature array alone (meant to shuffle rows with their labels)
        np.random.default_rng(seed + 3).shuffle(x_train)
    if bug.get("labels_one_class"):
        # "digit >= 10" where "digit >= 5" was meant: every row of the binary task is labelled 0
        y_train, y_valid = (y_train >= 10).astype(np.int64), (y_valid >= 10).astype(np.int64)
    if bug.get("raw_channel") is not None:
        # one sensor channel left in its units (air pressure in hPa) next to standardised ones
        c = bug["raw_channel"]
        x_train, x_valid = x_train.copy(), x_valid.copy()
        x_train[..., c], x_valid[..., c] = 1013 + 10 * x_train[..., c], 1013 + 10 * x_valid[..., c]
    if spec.get("subset"):  # a new task of some of the classes (fine-tuning), renumbered from 0
        lo, hi = spec["subset"]
        keep_t, keep_v = (y_train >= lo) & (y_train < hi), (y_valid >= lo) & (y_valid < hi)
        x_train, y_train = x_train[keep_t], y_train[keep_t] - lo
        x_valid, y_valid = x_valid[keep_v], y_valid[keep_v] - lo
    return x_train, y_train, x_valid, y_valid


def _tensor(a: np.ndarray) -> torch.Tensor:
    t = torch.from_numpy(np.ascontiguousarray(a))
    return t.float() if t.dtype == torch.float64 else t


def _pretrain_body(spec: dict, seed: int) -> nn.Module:
    """Fine-tuning as it is done: a CNN trained first (before the hook exists) on digits 0-4, whose body is
    then reused for digits 5-9 under a new head."""
    pre = spec["pretrain"]
    x, y, _, _ = heldout2_data.load({"loader": "digits", "seed": seed})
    keep = y < 5
    x, y = torch.from_numpy(x[keep]), torch.from_numpy(y[keep])
    model = M.PlainCNN(5, **spec["model_args"])
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(seed + 1)
    for _ in range(pre["epochs"]):
        order = torch.randperm(len(x), generator=g)
        for s in range(0, len(order) - 31, 32):
            idx = order[s:s + 32]
            opt.zero_grad()
            F.cross_entropy(model(x[idx]), y[idx]).backward()
            opt.step()
    return model


# ------------------------------------------------------------------------------------------------- training
def train(spec: dict, out_dir: str) -> dict:
    torch.set_num_threads(1)
    seed = spec.get("seed", 0)
    torch.manual_seed(seed)
    bug = spec.get("bug", {})
    task = TASKS[spec.get("task", "classify")](spec, _data(spec, seed, bug))
    if spec.get("pretrain"):
        model = _pretrain_body(spec, seed)
        model.head = nn.Linear(model.head.in_features, task.classes)  # the new task's head
        for p in model.body.parameters():
            p.requires_grad = False
    else:
        model = build(spec["model"], task)
    if spec.get("init"):
        init = spec["init"]
        if "gain" in init:
            M.xavier_gain(model, init["gain"])
        else:
            M.init_normal(model, init["std"], init.get("bias"))
    if spec.get("bias_init") is not None:
        for m in model.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)) and m.bias is not None and m is not getattr(model, "head", None):
                nn.init.constant_(m.bias, spec["bias_init"])
    opt = _optimizer(spec["optimizer"], [p for p in model.parameters() if p.requires_grad])
    if bug.get("new_head_after_optimizer"):
        # the classifier replaced (a wider two-layer head) after the optimizer was built: its parameters are
        # not in the optimizer, which goes on updating only the old ones
        width = model.net[-1].in_features
        model.net[-3] = nn.Linear(model.net[-3].in_features, width)
        model.net[-1] = nn.Linear(width, task.classes)
    bs = spec.get("batch_size", 32)
    accumulate = spec.get("accumulate", 1)
    per_epoch = max(1, len(task.x_train) // (bs * accumulate))
    total = spec.get("steps") or spec.get("epochs", 10) * per_epoch
    sched, sched_when = _schedule(spec.get("schedule"), opt, total, per_epoch)
    swa = spec.get("swa")
    if swa:
        from torch.optim.swa_utils import SWALR, AveragedModel

        swa_model, swa_sched = AveragedModel(model), SWALR(opt, swa_lr=swa["lr"], anneal_epochs=1)
        swa_start = int(swa["start"] * total)

    hook = heldout2_torch_hook(out_dir, spec.get("hook", "recommended"))
    hook.register_module(model)
    for loss_fn in task.losses:
        hook.register_loss(loss_fn)
    if isinstance(task, VAELoss):
        task.hook = hook
    if accumulate > 1 or spec.get("register_optimizer"):
        hook.register_optimizer(opt)
    import smdebug.pytorch as smd

    run_model = torch.compile(model) if spec.get("compile") else model
    xt, yt = _tensor(task.x_train), _tensor(task.y_train)
    xv, yv = _tensor(task.x_valid), _tensor(task.y_valid)
    val_rows = spec.get("val_rows", 512)
    validate = spec.get("validate", "epoch")  # "epoch", "end", "none" or every N optimizer steps
    clip, autocast = spec.get("clip"), spec.get("autocast")
    g = torch.Generator().manual_seed(seed)

    def run_validation() -> float:
        hook.set_mode(smd.modes.EVAL)
        evaluated = swa_model if swa and step > swa_start else run_model
        evaluated.eval()
        total_loss, batches = 0.0, 0
        with torch.no_grad():
            for s in range(0, min(len(xv), val_rows), 128):
                idx = torch.arange(s, min(s + 128, len(xv), val_rows))
                total_loss += float(task.loss(evaluated, xv[idx], yv[idx], False))
                batches += 1
        hook.set_mode(smd.modes.TRAIN)
        return total_loss / max(1, batches)

    step, epoch, best, waited = 0, 0, float("inf"), 0
    epochs_planned = max(1, total // per_epoch)
    stop = False
    while step < total and not stop:
        n = len(xt)
        if spec.get("curriculum"):
            # the easiest rows first, the whole set from 60% of the epochs on
            n = int(n * min(1.0, 0.25 + 0.75 * epoch / max(1, 0.6 * epochs_planned)))
        order = torch.randperm(n, generator=g)
        micro = 0
        for s in range(0, n - bs + 1, bs):
            if step >= total:
                break
            idx = order[:bs] if bug.get("same_batch") else order[s:s + bs]
            if bug.get("same_batch"):
                idx = torch.arange(bs)  # next(iter(loader)) of an unshuffled loader, re-created every step
            hook.set_mode(smd.modes.TRAIN)
            run_model.train()
            if spec.get("pretrain"):
                model.body.eval()  # a frozen body keeps its BatchNorm statistics
            if micro == 0:
                opt.zero_grad()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bool(autocast)):
                loss = task.loss(run_model, xt[idx], yt[idx], True)
            (loss if bug.get("accumulate_no_divide") else loss / accumulate).backward()
            micro += 1
            if micro < accumulate:
                continue
            micro = 0
            if clip:
                nn.utils.clip_grad_norm_(model.parameters(), clip)
            opt.step()
            step += 1
            if swa and step > swa_start:
                swa_sched.step()
            elif sched is not None and sched_when == "step":
                sched.step()
            if isinstance(validate, int) and step % validate == 0:
                run_validation()
        epoch += 1
        if swa and step > swa_start:
            swa_model.update_parameters(model)
        if sched is not None and sched_when == "epoch" and not (swa and step > swa_start):
            sched.step()
        if spec.get("unfreeze_at") and epoch == spec["unfreeze_at"]:
            # gradual unfreezing: the last block of the body joins at a tenth of the rate
            last = list(model.body.parameters())[-4:]
            for p in last:
                p.requires_grad = True
            opt.add_param_group({"params": last, "lr": spec["optimizer"]["lr"] / 10})
        if validate == "epoch" or (validate == "end" and step >= total):
            val = run_validation()
            if spec.get("early_stopping"):
                if val < best - 1e-4:
                    best, waited = val, 0
                else:
                    waited += 1
                    stop = waited >= spec["early_stopping"]
    hook.close()
    facts = _facts(model, task, step)
    facts["batch_size"] = bs  # rows behind one saved training loss (a micro-batch's; oscillating smooths by rows)
    return facts


def _facts(model: nn.Module, task: Task, steps: int) -> dict:
    """Which saved tensors are which layers (by module type), what the loss expects, which parameters were
    meant to be trained (requires_grad at the end), as properties.py reads them."""
    prefix = type(model).__name__
    inputs: Dict[str, List[str]] = {}
    outputs: Dict[str, List[str]] = {}
    for name, module in model.named_modules():
        for kind in ("relu", "tanh", "sigmoid"):
            if type(module) is M.ACT[kind] and name:
                inputs.setdefault(kind, []).append(f"^{re.escape(name)}_input_\\d+$")
                outputs.setdefault(kind, []).append(f"^{re.escape(name)}_output_\\d+$")
    weights = [f"{prefix}_{name}" for name, p in model.named_parameters() if p.dim() >= 2]
    trainable = [f"{prefix}_{name}" for name, p in model.named_parameters() if p.dim() >= 2 and p.requires_grad]
    loss_name = type(task.losses[0]).__name__
    loss = "^vae_loss_output_0$" if isinstance(task, VAELoss) else f"^{loss_name}_output_0$"
    return {"framework": "torch", "model_input": f"^{prefix}_input_0$", "activation_inputs": inputs,
            "activation_outputs": outputs, "weights": weights, "trainable": trainable, "gradient_prefix": "gradient/",
            "loss": loss, "predictions": f"^{loss_name}_input_0$", "labels": f"^{loss_name}_input_1$",
            "train_steps": steps, "task": task.kind, "loss_expects": task.loss_expects,
            "targets_are_classes": False, "num_classes": getattr(task, "classes", None)}
