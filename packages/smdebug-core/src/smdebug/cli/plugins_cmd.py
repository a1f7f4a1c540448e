"""List the installed smdebug plugins, with the frameworks, rules and commands they register.

Each plugin found through the smdebug.frameworks and smdebug.rules entry points is shown with its
status: loaded, skipped (its framework is not installed), failed (with the error) or disabled
(SMDEBUG_DISABLE_PLUGINS / SMDEBUG_LOAD_PLUGINS).

  smdebug plugins
  smdebug plugins --json
  smdebug plugins --strict        # in CI: fail when a plugin could not load

Exit status: 0, 1 (--strict and a plugin failed).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import List, Sequence


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print a JSON document instead of tables")
    parser.add_argument("--strict", action="store_true", help="exit with status 1 if any plugin failed")


def collect() -> dict:
    """Everything ``smdebug plugins`` shows, as plain data."""
    from smdebug._version import __version__
    from smdebug.core.plugins import manager

    report = manager.plugin_report()
    frameworks = manager.frameworks()
    rules = manager.rules()
    return {
        "smdebug_version": __version__,
        "environment": {var: os.environ.get(var) for var in (manager.DISABLE_ENV, manager.LOAD_ENV)},
        "plugins": [status.to_dict() for status in report],
        "frameworks": {
            name: {**info.to_dict(), "plugin": manager.framework_plugin(name)} for name, info in sorted(frameworks.items())
        },
        "rules": {name: {**info.to_dict(), "plugin": manager.rule_plugin(name)} for name, info in sorted(rules.items())},
        "commands": {name: {**info.to_dict(), "plugin": manager.command_plugin(name)}
                     for name, info in sorted(manager.commands().items())},
    }


def _table(headers: Sequence[str], rows: List[Sequence[str]]) -> str:
    if not rows:
        return "  (none)"
    cells = [list(headers)] + [["" if c is None else str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    lines.insert(1, "  " + "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def render(data: dict) -> str:
    plugins = [
        (p["name"], p["group"], p["distribution"] or "-", p["version"] or "-", p["status"], p["detail"])
        for p in data["plugins"]
    ]
    frameworks = [
        (name, f["module"], f["import_name"], f["plugin"] or "-", ", ".join(f["hook_classes"]) or "-")
        for name, f in data["frameworks"].items()
    ]
    rules = [(name, r["pack"], r["plugin"] or "-", r["target"]) for name, r in data["rules"].items()]
    out = [f"smdebug {data['smdebug_version']}", "", "Plugins:"]
    out.append(_table(("NAME", "GROUP", "DISTRIBUTION", "VERSION", "STATUS", "DETAIL"), plugins))
    out += ["", "Frameworks:", _table(("NAME", "MODULE", "IMPORTS", "PLUGIN", "HOOKS"), frameworks)]
    out += ["", "Rules:", _table(("NAME", "PACK", "PLUGIN", "CLASS"), rules)]
    commands = [(f"smdebug {name}", c["plugin"] or "-", c["module"]) for name, c in data["commands"].items()]
    out += ["", "Commands:", _table(("COMMAND", "PLUGIN", "MODULE"), commands)]
    env = {k: v for k, v in data["environment"].items() if v is not None}
    if env:
        out += ["", "Environment: " + ", ".join(f"{k}={v!r}" for k, v in env.items())]
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    data = collect()
    if args.json:
        json.dump(data, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(render(data))
    if args.strict and any(p["status"] == "failed" for p in data["plugins"]):
        return 1
    return 0
