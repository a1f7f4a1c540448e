"""Models, custom losses and an optimiser for the second held-out batch's PyTorch runs (heldout2_torch.py).

Written the way people write them in their own scripts: a tiny causal transformer language model, an LSTM
language model, a GroupNorm residual CNN with squeeze-and-excitation gates, a VAE, a GRU encoder-decoder,
embedding nets for metric learning, an EmbeddingBag text classifier; losses that torch does not ship
(focal, pinball, generalised cross-entropy) as ``nn.Module`` subclasses a user registers with the hook; and
Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms"), which torch does not ship either.
"""

from __future__ import annotations

from typing import List

import torch
import torch.nn as nn
import torch.nn.functional as F

ACT = {"relu": nn.ReLU, "tanh": nn.Tanh, "sigmoid": nn.Sigmoid, "gelu": nn.GELU, "silu": nn.SiLU}


class MLP(nn.Module):
    def __init__(self, inputs, outputs, hidden, activation="relu", dropout=0.0, output=None):
        super().__init__()
        layers: List[nn.Module] = []
        width = inputs
        for h in hidden:
            layers += [nn.Linear(width, h), ACT[activation]()]
            if dropout:
                layers.append(nn.Dropout(dropout))
            width = h
        layers.append(nn.Linear(width, outputs))
        if output == "log_softmax_batch":  # the bug: normalised over the batch axis, not the classes
            layers.append(nn.LogSoftmax(dim=0))
        elif output == "sigmoid":
            layers.append(nn.Sigmoid())
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x.flatten(1))


class CausalBlock(nn.Module):
    def __init__(self, dim, heads, dropout):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, dropout=dropout, batch_first=True)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim), nn.Dropout(dropout))

    def forward(self, x, mask):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    """A decoder-only language model: token + position embeddings, pre-LayerNorm causal blocks, a final
    LayerNorm and an output projection (logits over the vocabulary at every position)."""

    def __init__(self, vocab, length, dim=48, heads=4, layers=2, dropout=0.1):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(length, dim)
        self.blocks = nn.ModuleList(CausalBlock(dim, heads, dropout) for _ in range(layers))
        self.ln = nn.LayerNorm(dim)
        self.out = nn.Linear(dim, vocab)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool, device=idx.device), 1)
        for b in self.blocks:
            x = b(x, mask)
        return self.out(self.ln(x))


class LSTMLanguageModel(nn.Module):
    """The word-language-model recipe: embedding, dropout, a stacked LSTM, dropout, a decoder."""

    def __init__(self, vocab, dim=64, layers=2, dropout=0.2):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.drop = nn.Dropout(dropout)
        self.lstm = nn.LSTM(dim, dim, num_layers=layers, dropout=dropout, batch_first=True)
        self.decoder = nn.Linear(dim, vocab)
        nn.init.uniform_(self.embed.weight, -0.1, 0.1)
        nn.init.uniform_(self.decoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)

    def forward(self, idx):
        h, _ = self.lstm(self.drop(self.embed(idx)))
        return self.decoder(self.drop(h))


class SEBlock(nn.Module):
    """Squeeze-and-excitation (Hu et al. 2018): channel gates from a sigmoid."""

    def __init__(self, channels, reduction=4):
        super().__init__()
        self.fc1 = nn.Linear(channels, channels // reduction)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(channels // reduction, channels)
        self.gate = nn.Sigmoid()

    def forward(self, x):
        s = self.gate(self.fc2(self.act(self.fc1(x.mean(dim=(2, 3))))))
        return x * s[:, :, None, None]


class GNResBlock(nn.Module):
    def __init__(self, channels, groups=4, se=True):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.gn1 = nn.GroupNorm(groups, channels)
        self.act1 = nn.ReLU()
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.gn2 = nn.GroupNorm(groups, channels)
        self.se = SEBlock(channels) if se else nn.Identity()
        self.act2 = nn.ReLU()

    def forward(self, x):
        h = self.gn2(self.conv2(self.act1(self.gn1(self.conv1(x)))))
        return self.act2(x + self.se(h))


class GNResNet(nn.Module):
    """A stem, GroupNorm residual blocks with SE gates, global pooling, a head (8x8 images)."""

    def __init__(self, classes, channels=16, blocks=2, se=True):
        super().__init__()
        self.stem = nn.Conv2d(1, channels, 3, padding=1)
        self.stem_act = nn.ReLU()
        self.blocks = nn.Sequential(*(GNResBlock(channels, se=se) for _ in range(blocks)))
        self.head = nn.Linear(channels, classes)

    def forward(self, x):
        return self.head(self.blocks(self.stem_act(self.stem(x))).mean(dim=(2, 3)))


class PlainCNN(nn.Module):
    """``depth`` 3x3 convolutions, each followed by an activation module (BatchNorm between if asked), no
    shortcut; a linear head on the features pooled to 2x2. ``body``/``head`` so the body can be reused (fine-tuning)."""

    def __init__(self, classes, channels=16, depth=2, activation="relu", batchnorm=False):
        super().__init__()
        layers: List[nn.Module] = []
        width = 1
        for _ in range(depth):
            layers.append(nn.Conv2d(width, channels, 3, padding=1))
            if batchnorm:
                layers.append(nn.BatchNorm2d(channels))
            layers.append(ACT[activation]())
            width = channels
        self.body = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(2)
        self.head = nn.Linear(4 * channels, classes)

    def forward(self, x):
        return self.head(self.pool(self.body(x)).flatten(1))


class VAE(nn.Module):
    """A fully connected VAE: the forward pass returns (reconstruction, mu, logvar)."""

    def __init__(self, inputs, hidden=64, latent=6):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(inputs, hidden), nn.ReLU())
        self.mu = nn.Linear(hidden, latent)
        self.logvar = nn.Linear(hidden, latent)
        self.dec = nn.Sequential(nn.Linear(latent, hidden), nn.ReLU(), nn.Linear(hidden, inputs))

    def forward(self, x):
        h = self.enc(x.flatten(1))
        mu, logvar = self.mu(h), self.logvar(h)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        return self.dec(z), mu, logvar


class Seq2Seq(nn.Module):
    """A GRU encoder-decoder trained with teacher forcing: forward(src, decoder_input) -> logits per target
    position."""

    def __init__(self, vocab, dim=48):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.encoder = nn.GRU(dim, dim, batch_first=True)
        self.decoder = nn.GRU(dim, dim, batch_first=True)
        self.out = nn.Linear(dim, vocab)

    def forward(self, src, dec_in):
        _, h = self.encoder(self.embed(src))
        y, _ = self.decoder(self.embed(dec_in), h)
        return self.out(y)


class Encoder(nn.Module):
    """An embedding network for metric learning: MLP to a ``dim``-vector, L2-normalised if asked."""

    def __init__(self, inputs, dim=16, hidden=64, normalise=False):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(inputs, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, dim))
        self.normalise = normalise

    def forward(self, x):
        z = self.net(x.flatten(1))
        return F.normalize(z, dim=-1) if self.normalise else z


class BagClassifier(nn.Module):
    """EmbeddingBag (mean over the non-padding tokens) + a linear classifier: the fastText recipe."""

    def __init__(self, vocab, classes, dim=32):
        super().__init__()
        self.bag = nn.EmbeddingBag(vocab, dim, mode="mean", padding_idx=0)
        self.fc = nn.Linear(dim, classes)

    def forward(self, tokens):
        return self.fc(self.bag(tokens))


class DetachedEncoderNet(nn.Module):
    """An encoder and a head; ``detach`` is the bug of a ``.detach()`` left in the forward pass (e.g. from
    code that once cached features): no gradient reaches the encoder."""

    def __init__(self, inputs, classes, hidden=64, detach=False):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(inputs, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, classes)
        self.detach = detach

    def forward(self, x):
        h = self.encoder(x.flatten(1))
        return self.head(h.detach() if self.detach else h)


class MeanVar(nn.Module):
    """A regression net with two outputs: the mean and the log-variance of a Gaussian."""

    def __init__(self, inputs, hidden=64):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(inputs, hidden), nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU())
        self.mean = nn.Linear(hidden, 1)
        self.logvar = nn.Linear(hidden, 1)

    def forward(self, x):
        h = self.body(x)
        return self.mean(h).squeeze(-1), self.logvar(h).squeeze(-1)


# ------------------------------------------------------------------------------------------- custom losses
class FocalLoss(nn.Module):
    """Binary focal loss on logits (Lin et al. 2017): alpha-balanced, gamma-focused."""

    def __init__(self, alpha=0.25, gamma=2.0):
        super().__init__()
        self.alpha, self.gamma = alpha, gamma

    def forward(self, logits, target):
        bce = F.binary_cross_entropy_with_logits(logits, target, reduction="none")
        p = torch.sigmoid(logits)
        pt = p * target + (1 - p) * (1 - target)
        at = self.alpha * target + (1 - self.alpha) * (1 - target)
        return (at * (1 - pt) ** self.gamma * bce).mean()


class PinballLoss(nn.Module):
    """Quantile (pinball) loss for several quantiles at once: prediction (batch, q), target (batch,)."""

    def __init__(self, quantiles=(0.1, 0.5, 0.9)):
        super().__init__()
        self.register_buffer("q", torch.tensor(quantiles))

    def forward(self, pred, target):
        diff = target.unsqueeze(-1) - pred
        return torch.maximum(self.q * diff, (self.q - 1) * diff).mean()


class GCELoss(nn.Module):
    """Generalised cross-entropy (Zhang & Sabuncu 2018), robust to noisy labels: (1 - p_y^q) / q."""

    def __init__(self, q=0.7):
        super().__init__()
        self.q = q

    def forward(self, logits, target):
        p = F.softmax(logits, dim=-1).gather(1, target.unsqueeze(1)).squeeze(1).clamp(min=1e-7)
        return ((1 - p ** self.q) / self.q).mean()


class HandwrittenBCE(nn.Module):
    """Binary cross-entropy written out from the formula, on probabilities, without clamping (the bug: once
    a sigmoid rounds to exactly 1.0 in float32, log(1 - p) is -inf)."""

    def forward(self, p, target):
        return -(target * torch.log(p) + (1 - target) * torch.log(1 - p)).mean()


class ContrastiveLoss(nn.Module):
    """Siamese contrastive loss (Hadsell et al. 2006) on the Euclidean distance, written with
    ``sqrt(sum(d**2))``: same-pair distance pulled to 0, different pairs pushed beyond the margin. Without an
    epsilon the gradient of sqrt at 0 is infinite (a pair of identical inputs gives 0 * inf = NaN)."""

    def __init__(self, margin=1.0, eps=0.0):
        super().__init__()
        self.margin, self.eps = margin, eps

    def forward(self, a, b, same):
        d = torch.sqrt(((a - b) ** 2).sum(-1) + self.eps)
        return (same * d ** 2 + (1 - same) * F.relu(self.margin - d) ** 2).mean() / 2


# ---------------------------------------------------------------------------------------------- optimiser
class Lion(torch.optim.Optimizer):
    """Lion: the update is the sign of an interpolation of the momentum and the gradient, with decoupled
    weight decay; its rate is usually 3-10x smaller than AdamW's."""

    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0):
        super().__init__(params, dict(lr=lr, betas=betas, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["exp_avg"] = torch.zeros_like(p)
                m = state["exp_avg"]
                p.mul_(1 - group["lr"] * group["weight_decay"])
                p.add_(torch.sign(m * b1 + p.grad * (1 - b1)), alpha=-group["lr"])
                m.mul_(b2).add_(p.grad, alpha=1 - b2)
        return None


def init_normal(model: nn.Module, std: float, bias: float = None) -> None:
    """Every linear/conv weight drawn from N(0, std^2) (and biases set to ``bias`` if given)."""
    for m in model.modules():
        if isinstance(m, (nn.Linear, nn.Conv2d, nn.Conv1d)):
            nn.init.normal_(m.weight, 0.0, std)
            if bias is not None and m.bias is not None:
                nn.init.constant_(m.bias, bias)


def xavier_gain(model: nn.Module, gain: float) -> None:
    for m in model.modules():
        if isinstance(m, (nn.Linear, nn.Conv2d)):
            nn.init.xavier_normal_(m.weight, gain=gain)
            if m.bias is not None:
                nn.init.zeros_(m.bias)

