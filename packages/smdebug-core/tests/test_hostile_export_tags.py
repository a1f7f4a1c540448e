"""export tensorboard never mixes two tensors into one TensorBoard series (red team 11).

TensorBoard tags keep letters, digits, '-', '/', '_' and '.': 'a b' and 'a_b' were both written as tag 'a_b',
and TensorBoard drew one series holding both tensors' values, silently. The first tensor keeps the tag; the
other is skipped, saying whose tag it is. The run is written by the real writer; the export runs in a real
subprocess.
"""

from __future__ import annotations

import numpy as np

from _hostile import run_smdebug
from _support import write_run


def test_two_names_written_as_one_tag_are_not_mixed(tmp_path):
    run = str(tmp_path / "run")
    write_run(run, range(3), tensors=lambda s, w: {"loss a": np.float32(s), "loss_a": np.float32(100 + s),
                                                   "b": np.float32(7)})
    out = str(tmp_path / "tb")
    done = run_smdebug("export", "tensorboard", run, out)
    assert done.returncode == 0, done.stderr
    said = done.stdout + done.stderr
    assert "skipped loss_a: its TensorBoard tag 'loss_a' is already 'loss a'" in said, said
    assert "6 scalar(s)" in said, said  # 'loss a' and 'b' at three steps
