"""``smdebug ls`` shows in its collections table what the run holds; the collections its hook defined but
never filled (a PyTorch hook defines one per activation type it could meet) are named on one line."""

from __future__ import annotations

import json

import numpy as np

from _support import NumpyHook
from smdebug.core.save_config import SaveConfig


def test_empty_collections_are_named_on_one_line(tmp_path, smdebug_cli):
    run = tmp_path / "run"
    hook = NumpyHook(out_dir=str(run), save_config=SaveConfig(save_interval=1), include_collections=["weights"])
    for step in range(2):
        hook.begin_step()
        hook.record("weights/w", np.arange(4, dtype=np.float32) + step)
        hook.end_step()
    hook.close()
    doc = json.loads(smdebug_cli("ls", str(run), "--json").stdout)
    empty = sorted(col["name"] for col in doc["collections"] if not col["tensors"])
    assert empty and "weights" not in empty  # --json keeps every collection
    out = smdebug_cli("ls", str(run))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert f"Collections ({len(doc['collections'])}):" in lines
    assert next(ln for ln in lines if ln.strip().startswith("weights ")).split() == ["weights", "1"]
    assert f"  holding no tensor: {', '.join(empty)}" in lines
    for name in empty:  # no table row of its own
        assert not any(ln.split() == [name, "0"] for ln in lines), name
