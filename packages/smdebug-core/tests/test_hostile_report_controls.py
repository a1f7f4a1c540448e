"""Red team 12: control and invisible characters from a run in the HTML report. The page showed only the
direction controls as [U+XXXX]; an escape sequence in a hook failure note or a tensor name reached the file
raw (HTML forbids C0 controls; `cat report.html` in a terminal ran them: ESC ] 0 ; ... BEL retitled it), and
'w' and 'w' + ZERO WIDTH SPACE read as one tensor. The page now shows every character the CLI escapes for a
terminal (smdebug.cli.terminal) as [U+XXXX]."""

from __future__ import annotations

import json
import os
import re

from _hostile import run_smdebug, write_simple_run

_RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\xad\u200b\u2060-\u2064\ufeff\u202a-\u202e]")


def test_control_and_invisible_characters_from_a_run_show_as_codes_in_the_report(tmp_path):
    run = write_simple_run(tmp_path / "run", names=("w", "w\u200b"))
    os.makedirs(os.path.join(run, "hook_failures"))
    with open(os.path.join(run, "hook_failures", "worker_0.json"), "w") as f:
        json.dump({"worker": "worker_0", "failure": "disk full\x1b[2J\x1b[31m\x7f\x9b", "stopped_at_step": 2}, f)
    out = tmp_path / "report.html"
    proc = run_smdebug("report", run, "-o", out, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    page = out.read_text(encoding="utf-8")
    assert not _RAW.findall(page), sorted({hex(ord(c)) for c in _RAW.findall(page)})
    assert "disk full[U+001B][2J[U+001B][31m[U+007F][U+009B]" in page  # (the note, said)
    assert "<h3>w[U+200B]: " in page  # (the two tensors, told apart)
