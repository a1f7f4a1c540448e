"""A plain PyTorch script that knows nothing of smdebug and validates after each epoch under model.eval()
(for the zero-code-change test of modes)."""

import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 3))
loss_fn = nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(64, 10), torch.randint(0, 3, (64,))
vx, vy = torch.randn(32, 10), torch.randint(0, 3, (32,))
for epoch in range(3):
    model.train()
    for i in range(0, 64, 32):
        opt.zero_grad()
        loss = loss_fn(model(x[i:i + 32]), y[i:i + 32])
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        print("epoch", epoch, "validation loss", round(loss_fn(model(vx), vy).item(), 4))
