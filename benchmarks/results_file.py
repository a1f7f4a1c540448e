"""The shape of benchmarks/RESULTS.md: one current section per benchmark, newest first, under the
"Targets at a glance" table; the sections a newer run replaced move to benchmarks/history/<benchmark>.md
(newest first), so nothing measured is lost and RESULTS.md stays one table per benchmark.

A section is ``## <title> — <date>`` followed by its lines (machine, versions, command, table, verdicts).
"""

from __future__ import annotations

import os
import re
from typing import Dict, List, Tuple

SUMMARY_TITLE = "Targets at a glance"
HEAD = ("# Benchmark results\n\n"
        "One section per benchmark, the newest measurement of each, newest first, written by `benchmarks/run.py`\n"
        "(see [README.md](README.md)) as soon as it is measured, with its machine, versions and command. The\n"
        "first table, **Targets at a glance**, collects every target's verdict from the sections below. Earlier\n"
        "measurements of a benchmark are in [history/](history/) (one file per benchmark, newest first).\n")


def split(text: str) -> Tuple[str, List[Tuple[str, str, str]]]:
    """(head, [(title, date, whole section text)]) in file order."""
    head, *chunks = text.split("\n## ")
    sections = []
    for chunk in chunks:
        heading = chunk.partition("\n")[0]
        title, _, date = heading.rpartition(" — ")
        sections.append((title or heading, date, "\n## " + chunk.rstrip("\n") + "\n"))
    return head, sections


def slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def normalise(path: str, new_sections: List[str] = (), summary_of=None) -> None:
    """Rewrite ``path`` in its shape, with ``new_sections`` (section texts just measured) taking the place of
    earlier sections of the same benchmarks; replaced sections go to history/. ``summary_of(sections)``: the
    targets table made from the current sections (a section text, or "" for none)."""
    text = open(path).read() if os.path.exists(path) else ""
    _, sections = split(text)
    for section in new_sections:
        sections += split(section)[1]
    # The current section of a benchmark is its newest: the latest date, and of one date the one written last.
    order = {id(s): i for i, s in enumerate(sections)}
    current: Dict[str, Tuple[str, str, str]] = {}
    replaced: Dict[str, List[Tuple[str, str, str]]] = {}
    for section in sorted((s for s in sections if s[0] != SUMMARY_TITLE), key=lambda s: (s[1], order[id(s)])):
        title = section[0]
        if title in current:
            replaced.setdefault(title, []).append(current[title])
        current[title] = section
    newest_first = sorted(current.values(), key=lambda s: (s[1], order[id(s)]), reverse=True)
    summary = summary_of(newest_first) if summary_of else ""
    history_dir = os.path.join(os.path.dirname(path), "history")
    for title, old in replaced.items():
        _add_to_history(history_dir, title, old)
    body = "".join(s[2] for s in newest_first)
    with open(path + ".tmp", "w") as f:
        f.write(HEAD + (summary if summary else "") + body)
    os.replace(path + ".tmp", path)


def _add_to_history(history_dir: str, title: str, sections: List[Tuple[str, str, str]]) -> None:
    os.makedirs(history_dir, exist_ok=True)
    path = os.path.join(history_dir, slug(title) + ".md")
    head = f"# {title}: earlier measurements\n\nNewest first; the current one is in ../RESULTS.md.\n"
    _, kept = split(open(path).read()) if os.path.exists(path) else ("", [])
    known = {s[2] for s in kept}
    merged = kept + [s for s in sections if s[2] not in known]
    merged.sort(key=lambda s: s[1], reverse=True)  # stable: of one date, the order they were in
    with open(path + ".tmp", "w") as f:
        f.write(head + "".join(s[2] for s in merged))
    os.replace(path + ".tmp", path)
