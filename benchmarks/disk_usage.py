"""How many bytes a benchmark wrote: shared by the benchmarks that run in our venv and in the original's."""

import os


def dir_bytes(path: str) -> int:
    """Total size of the files under ``path``; files that vanish while it walks count as empty."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(root, f))
            except OSError:
                pass
    return total
