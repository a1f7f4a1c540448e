"""Entry point of the ``smdebug`` console script.

To add a subcommand, write ``smdebug/cli/<name>_cmd.py`` with a module docstring (its first line is the
help text), ``add_arguments(parser)`` and ``run(args) -> int``, then list it in :data:`COMMANDS`.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from typing import Dict, List, Optional

#: subcommand name -> module implementing it
COMMANDS: Dict[str, str] = {
    "ls": "smdebug.cli.ls_cmd",
    "show": "smdebug.cli.show_cmd",
    "plot": "smdebug.cli.plot_cmd",
    "report": "smdebug.cli.report_cmd",
    "rules": "smdebug.cli.rules_cmd",
    "run": "smdebug.cli.run_cmd",
    "plugins": "smdebug.cli.plugins_cmd",
    "export": "smdebug.cli.export_cmd",
}


def _version() -> str:
    try:
        from smdebug._version import __version__
    except ImportError:  # pragma: no cover - broken install
        __version__ = "unknown"
    return f"smdebug {__version__} (smdebug-core)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="smdebug",
        description="Inspect smdebug runs and installation.",
        epilog="`smdebug COMMAND --help` describes a command.",
    )
    parser.add_argument("--version", action="version", version=_version())
    parser.add_argument("-v", "--verbose", action="store_true", help="show debug logs (on stderr)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module_name in COMMANDS.items():
        module = importlib.import_module(module_name)
        doc = (module.__doc__ or "").strip()
        summary = doc.splitlines()[0] if doc else ""
        cmd = sub.add_parser(name, help=summary, description=doc or None,
                             formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(cmd)
        cmd.set_defaults(_run=module.run)
    return parser


def _logs_to_stderr(verbose: bool) -> None:
    """Keep stdout for command output (``--json`` must stay parseable): send smdebug's logs to stderr."""
    try:
        from smdebug.core.logger import get_logger

        logger = get_logger()
    except Exception:  # noqa: BLE001 - the CLI works without the core logger
        logger = logging.getLogger("smdebug")
    for handler in logger.handlers:
        if isinstance(handler, logging.StreamHandler) and getattr(handler, "stream", None) is sys.stdout:
            handler.setStream(sys.stderr)
    if verbose:
        logger.setLevel(logging.DEBUG)


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "_run", None) is None:
        parser.print_help(sys.stderr)
        return 2
    _logs_to_stderr(args.verbose)
    from smdebug.cli._common import CliError, closed_pipe

    try:
        code = int(args._run(args) or 0)
        sys.stdout.flush()  # a reader that went away shows here, not as "Exception ignored" at exit
        return code
    except BrokenPipeError:  # `smdebug ... | head`: the reader went away; exit quietly (before `Exception`)
        return closed_pipe()
    except CliError as e:
        print(f"smdebug {args.command}: {e}", file=sys.stderr)
        return e.code
    except Exception as e:  # noqa: BLE001 - smdebug's own errors are messages, not tracebacks
        from smdebug.exceptions import SMDebugError

        if not isinstance(e, SMDebugError) or args.verbose:
            raise
        print(f"smdebug {args.command}: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130

if __name__ == "__main__":
    sys.exit(main())
