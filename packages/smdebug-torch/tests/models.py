"""Small real models and a training loop for the tests."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 16)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(self.relu(self.fc1(x)))


class CNN(nn.Module):
    """Nested containers, a module used twice per forward, and a tuple output."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Sequential(nn.Conv2d(4, 8, 3, padding=1), nn.ReLU()))
        self.act = nn.Tanh()
        self.head = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        h = self.features(x).flatten(1)
        logits = self.head(self.act(self.act(h)))  # self.act runs twice
        return logits, h


class DictModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = MLP()

    def forward(self, x):
        out = self.body(x)
        return {"logits": out, "probs": F.softmax(out, dim=1)}


def mlp_data(n=64, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 10, generator=g)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()
    return x, y


def cnn_data(n=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 1, 8, 8, generator=g), torch.randint(0, 10, (n,), generator=g)


def train(model, steps, data=mlp_data, lr=0.1, loss_fn=None, unpack=lambda out: out, optimizer=None):
    """A plain training loop: forward, loss, backward, optimizer step. Returns the losses."""
    x, y = data()
    loss_fn = loss_fn or nn.CrossEntropyLoss()
    opt = optimizer or torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_fn(unpack(model(x)), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses
