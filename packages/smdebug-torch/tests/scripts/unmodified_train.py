"""A plain PyTorch training script that knows nothing of smdebug (for the zero-code-change test)."""

import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 3))
loss_fn = nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(64, 10), torch.randint(0, 3, (64,))
for step in range(8):
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
print("final loss", round(loss.item(), 4))
