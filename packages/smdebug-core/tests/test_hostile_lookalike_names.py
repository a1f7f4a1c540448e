"""Tensor names that differ only in how their characters are encoded print alike (red team 10).

``caf\\u00e9`` and ``cafe\\u0301`` (or ``\\u212aernel``, KELVIN SIGN, and ``Kernel``) are two tensors of the run,
but a terminal and a web page draw them as one name: ``smdebug ls`` listed "café" twice and nothing told the
user which was which. A trial now says so once per pair, each name spelt with escapes, whether the two come
in one index file or in two (a later step). Runs are written by the real writer.
"""

from __future__ import annotations

import numpy as np

from _hostile import run_smdebug, write_simple_run
from _support import write_run


def _pairs_said(stderr: str):
    return [line for line in stderr.splitlines() if "print alike" in line]


def test_names_equal_to_unicode_are_said_to_print_alike(tmp_path):
    run = write_simple_run(tmp_path / "run", names=("caf\u00e9", "cafe\u0301", "\u212aernel", "Kernel", "w",
                                                     "\u0928\u093f"))
    done = run_smdebug("ls", run)
    assert done.returncode == 0, done.stderr
    said = _pairs_said(done.stderr)
    assert len(said) == 2, done.stderr
    assert any(r"'caf\xe9'" in line and r"'cafe\u0301'" in line for line in said)
    assert any(r"'\u212aernel'" in line and "'Kernel'" in line for line in said)


def test_a_lookalike_name_first_saved_at_a_later_step_is_said(tmp_path):
    run = str(tmp_path / "run")
    # step 0 saves the NFC spelling, step 1 adds the decomposed one: two index files
    write_run(run, range(2), tensors=lambda step, w: {"caf\u00e9": np.zeros(2, np.float32),
                                                      **({"cafe\u0301": np.ones(2, np.float32)} if step else {})})
    done = run_smdebug("ls", run)
    assert done.returncode == 0, done.stderr
    assert len(_pairs_said(done.stderr)) == 1, done.stderr


def test_names_that_only_look_different_are_not_said(tmp_path):
    # different text to Unicode (a script's combining vowel sign, accents on different letters, ASCII case)
    run = write_simple_run(tmp_path / "run", names=("\u0928\u093f", "\u0928", "caf\u00e9", "cafe", "W", "w"))
    done = run_smdebug("ls", run)
    assert done.returncode == 0, done.stderr
    assert _pairs_said(done.stderr) == []
