"""Thread settings for tiny models on a small, shared machine."""

from __future__ import annotations

import contextlib


@contextlib.contextmanager
def one_torch_thread():
    """torch on one intra-op thread while the context is open: the threads only contend for the CPU with tiny
    models (a tenth of the speed on a loaded 2-core machine)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
