"""No import cycles inside smdebug-core (docs/architecture.md): every module can be read, tested and changed
from its imports down. grimp builds the import graph of the installed source (function-level imports count;
imports under ``if TYPE_CHECKING:`` do not, they never run); a cycle fails the test naming its imports.

Names a module serves lazily (smdebug.core.lazy: legacy adapters, the framework packages' API) are
declared dependencies, not imports: the module serving them never imports their source at import time.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

grimp = pytest.importorskip("grimp")

import smdebug.core  # noqa: E402

CORE_SRC = Path(smdebug.core.__file__).resolve().parents[1]  # .../smdebug-core/src/smdebug


def _core_modules() -> set:
    modules = set()
    for path in CORE_SRC.rglob("*.py"):
        rel = path.relative_to(CORE_SRC.parent).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        modules.add(".".join(parts))
    return modules


def _cycles(graph, modules: set) -> list:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    edges = {m: sorted(n for n in graph.find_modules_directly_imported_by(m) if n in modules) for m in modules}
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for root in sorted(modules):
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _describe(graph, component) -> str:
    lines = []
    for importer in component:
        for imported in component:
            for detail in graph.get_import_details(importer=importer, imported=imported):
                lines.append(f"  {importer}:{detail['line_number']} imports {imported}")
    return "\n".join(lines)


def test_smdebug_core_has_no_import_cycles():
    graph = grimp.build_graph("smdebug", exclude_type_checking_imports=True, cache_dir=None)
    modules = _core_modules() & set(graph.modules)
    assert "smdebug.core.hook" in modules and "smdebug.trials.trial" in modules  # the graph is the real one
    cycles = _cycles(graph, modules)
    assert not cycles, "import cycles inside smdebug-core:\n" + "\n".join(_describe(graph, c) for c in cycles)


def test_the_check_finds_a_cycle(tmp_path, monkeypatch):
    """The check itself: a package whose two modules import each other is reported."""
    package = tmp_path / "cyclic_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from cyclic_pkg import b\n")
    (package / "b.py").write_text("from cyclic_pkg import a\n")
    (package / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from cyclic_pkg import a\n")
    (package / "d.py").write_text("from cyclic_pkg import c\n")
    monkeypatch.syspath_prepend(os.fspath(tmp_path))
    graph = grimp.build_graph("cyclic_pkg", exclude_type_checking_imports=True, cache_dir=None)
    modules = set(graph.modules)
    assert _cycles(graph, modules) == [["cyclic_pkg.a", "cyclic_pkg.b"]]
