"""Real (tiny) PyTorch training runs written with the smdebug hook, for the rules' real-run tests.

Every test that needs "a run that exhibits the problem" builds a model and data, then calls
:func:`train_torch`; the returned path is the trial directory.
"""

from __future__ import annotations

from typing import Callable, Iterable, List, Optional, Sequence, Tuple

import torch
import torch.nn as nn

import smdebug.pytorch as smd


def train_torch(
    out_dir,
    model: nn.Module,
    data: Tuple[torch.Tensor, torch.Tensor],
    *,
    steps: int,
    lr: float = 0.1,
    optimizer: str = "sgd",
    batch_size: Optional[int] = None,
    loss_fn: Optional[nn.Module] = None,
    include_collections: Sequence[str] = ("weights", "gradients", "losses"),
    include_regex: Optional[Iterable[str]] = None,
    save_interval: int = 1,
    reduction_config=None,
    eval_data: Optional[Tuple[torch.Tensor, torch.Tensor]] = None,
    eval_every: int = 1,
    before_step: Optional[Callable[[int], None]] = None,
    register_loss: bool = True,
) -> str:
    """Train ``model`` for ``steps`` optimizer steps with a hook saving to ``out_dir``; return ``out_dir``.

    ``batch_size`` cycles through the data in mini-batches (full batch when None). With ``eval_data`` an
    EVAL-mode forward pass (loss included) runs after every ``eval_every`` training steps. Without
    ``register_loss`` the hook is not told about the loss module (no loss is saved).
    """
    out_dir = str(out_dir)
    hook = smd.Hook(
        out_dir=out_dir,
        save_config=smd.SaveConfig(save_interval=save_interval),
        include_collections=list(include_collections),
        include_regex=list(include_regex) if include_regex else None,
        reduction_config=reduction_config,
    )
    loss_fn = loss_fn or nn.CrossEntropyLoss()
    hook.register_module(model)
    if register_loss:
        hook.register_loss(loss_fn)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=lr) if optimizer == "adam" else torch.optim.SGD(params, lr=lr)
    x, y = data
    n = len(x)
    bs = batch_size or n
    for step in range(steps):
        if before_step is not None:
            before_step(step)
        hook.set_mode(smd.modes.TRAIN)
        start = (step * bs) % n
        xb, yb = x[start:start + bs], y[start:start + bs]
        opt.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
        if eval_data is not None and (step + 1) % eval_every == 0:
            hook.set_mode(smd.modes.EVAL)
            with torch.no_grad():
                loss_fn(model(eval_data[0]), eval_data[1])
    hook.close()
    return out_dir


def train_recommended(out_dir, model: nn.Module, x: torch.Tensor, y: torch.Tensor, loss_fn: nn.Module, *,
                      steps: int = 40, optimizer: Optional[torch.optim.Optimizer] = None, lr: float = 0.5,
                      batch_size: int = 32, schedule: Optional[Callable[[int], float]] = None) -> List[float]:
    """Train ``model`` on minibatches of ``(x, y)`` under ``Hook.recommended(out_dir)`` (what users run),
    the loss module registered; plain SGD at ``lr`` unless an ``optimizer`` is given (no momentum, no decay: a
    zero gradient moves nothing). ``schedule(step)`` multiplies the SGD learning rate at each step (a warm-up).
    Returns the losses."""
    hook = smd.Hook.recommended(str(out_dir))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = optimizer or torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for step in range(steps):
        if schedule is not None:
            for group in opt.param_groups:
                group["lr"] = lr * schedule(step)
        start = (step * batch_size) % len(x)
        opt.zero_grad()
        loss = loss_fn(model(x[start:start + batch_size]), y[start:start + batch_size])
        loss.backward()
        opt.step()
        losses.append(loss.item())
    hook.close()
    return losses


def classification_data(n: int = 128, features: int = 10, classes: int = 3, seed: int = 0, scale: float = 1.0):
    """A learnable classification problem: the class depends on the signs of the first two features."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=g) * scale
    y = ((x[:, 0] > 0).long() + (x[:, 1] > 0).long()).clamp(max=classes - 1)
    return x, y


def mlp(features: int = 10, hidden: int = 16, classes: int = 3, depth: int = 1, activation=nn.ReLU, seed: int = 0):
    """Linear/activation blocks named ``fc<i>`` and ``layer<i>_<activation>``, so the saved names of the
    activations (``layer0_relu_output_0``, ``layer0_tanh_input_0``) match the rules' default regexes
    (``.*relu_output``, ``.*tanh_input``)."""
    torch.manual_seed(seed)
    width = features
    act_name = activation.__name__.lower()
    model = nn.Sequential()
    for i in range(depth):
        model.add_module(f"fc{i}", nn.Linear(width, hidden))
        model.add_module(f"layer{i}_{act_name}", activation())
        width = hidden
    model.add_module("out", nn.Linear(width, classes))
    return model


class EveryKindNet(nn.Module):
    """A network with one layer of every kind a built-in rule looks at, named so the rules' default regexes
    match what the hook saves: images ``(N, 3, 4, 4)`` into a convolution (``conv0_input_0``), token ids
    derived from them into an embedding (``embedding0_input_0``), then ReLU, tanh and sigmoid layers
    (``layer0_relu_output_0``, ``layer1_tanh_input_0``, ``layer2_sigmoid_input_0``...)."""

    def __init__(self, classes: int = 3, seed: int = 0):
        super().__init__()
        torch.manual_seed(seed)
        self.embedding0 = nn.Embedding(4, 3)
        self.conv0 = nn.Conv2d(3, 2, 3, padding=1)
        self.layer0_relu = nn.ReLU()
        self.fc0 = nn.Linear(2 * 4 * 4 + 3, 8)
        self.layer1_tanh = nn.Tanh()
        self.fc1 = nn.Linear(8, 8)
        self.layer2_sigmoid = nn.Sigmoid()
        self.out = nn.Linear(8, classes)

    def forward(self, images):
        tokens = (images[:, 0, 0, :] > 0).long()  # (N, 4) token ids in {0, 1}
        embedded = self.embedding0(tokens).mean(dim=1)
        x = self.layer0_relu(self.conv0(images)).flatten(1)
        x = self.layer1_tanh(self.fc0(torch.cat([x, embedded], dim=1)))
        return self.out(self.layer2_sigmoid(self.fc1(x)))


def image_data(n: int = 16, classes: int = 3, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 3, 4, 4, generator=g), torch.randint(0, classes, (n,), generator=g)
