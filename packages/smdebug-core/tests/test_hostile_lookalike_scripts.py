"""Tensor names that differ by letters of another script drawn as Latin ones print alike (red team 11).

``w\\u0435ight`` (a Cyrillic ``е``) and ``weight`` are two tensors of the run, and a terminal or the report
draws both as "weight": a hostile run could pass one off as the other (a rule reads the Latin one, the user
the other). A trial says so once per pair, each spelt with escapes, as it does for names Unicode holds equal.
Names of those scripts that only share some letters with a Latin name are left alone. Runs are written by the
real writer; the CLI runs in a real subprocess.
"""

from __future__ import annotations

from _hostile import run_smdebug, write_simple_run


def _pairs_said(stderr: str):
    return [line for line in stderr.splitlines() if "print alike" in line]


def test_names_with_cyrillic_or_greek_letters_drawn_as_latin_are_said(tmp_path):
    run = write_simple_run(tmp_path / "run", names=("weight", "w\u0435ight", "\u0391dam_beta", "Adam_beta",
                                                     "bi\u0430s", "bias"))
    done = run_smdebug("ls", run)
    assert done.returncode == 0, done.stderr
    said = _pairs_said(done.stderr)
    assert len(said) == 3, done.stderr
    assert any("'weight'" in line and r"'w\u0435ight'" in line and "another script" in line for line in said)
    assert any(r"'\u0391dam_beta'" in line and "'Adam_beta'" in line for line in said)
    assert any(r"'bi\u0430s'" in line and "'bias'" in line for line in said)


def test_names_of_other_scripts_that_do_not_look_latin_are_not_said(tmp_path):
    # Russian "ves" and "kot" share letters with Latin names but are drawn differently: no pair
    run = write_simple_run(tmp_path / "run", names=("\u0432\u0435\u0441", "bec", "\u043a\u043e\u0442", "kot",
                                                     "\u03b2\u03b1\u03c1\u03bf\u03c2", "w"))
    done = run_smdebug("ls", run)
    assert done.returncode == 0, done.stderr
    assert not _pairs_said(done.stderr), done.stderr
