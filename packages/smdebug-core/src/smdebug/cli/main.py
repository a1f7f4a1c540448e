"""Entry point of the ``smdebug`` console script.

smdebug-core's own subcommands are listed in :data:`COMMANDS`: ``smdebug/cli/<name>_cmd.py`` with a module
docstring (its first line is the help text), ``add_arguments(parser)`` and ``run(args) -> int``. Plugins add
theirs through the ``smdebug_register_commands`` hook spec (:class:`smdebug.core.plugins.CommandInfo`, e.g.
``smdebug rules`` from smdebug-rules): the core knows none of them by name. A plugin command's module is
imported only when that command is used, so ``smdebug --help`` lists them all without importing them, and a
plugin whose command cannot load fails that command alone, with a message naming the plugin.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import logging
import sys
from typing import Dict, List, Optional

#: smdebug-core's subcommands: name -> module implementing it
COMMANDS: Dict[str, str] = {
    "ls": "smdebug.cli.ls_cmd",
    "show": "smdebug.cli.show_cmd",
    "plot": "smdebug.cli.plot_cmd",
    "report": "smdebug.cli.report_cmd",
    "run": "smdebug.cli.run_cmd",
    "plugins": "smdebug.cli.plugins_cmd",
    "export": "smdebug.cli.export_cmd",
}
#: the top-level options, which take no value: the first other argument names the command
_TOP_LEVEL_FLAGS = ("-h", "--help", "--version", "-v", "--verbose")


class _Parser(argparse.ArgumentParser):
    """argparse's parser, naming the close match of a misspelt command or subcommand ("did you mean 'ls'?").
    Subcommand parsers are made of the class of their parent, so a plugin's nested subcommands (``smdebug
    rules lst``) get it too."""

    def _check_value(self, action, value):  # (argparse's one place that refuses a value outside choices)
        try:
            super()._check_value(action, value)
        except argparse.ArgumentError as e:
            guess = _close_match(value, action.choices or ())
            if guess is None or "did you mean" in str(e):  # (Python 3.14 may have guessed already)
                raise
            raise argparse.ArgumentError(action, f"{e.message}; did you mean {guess!r}?") from None


def _close_match(word, candidates, cutoff: float = 0.6) -> Optional[str]:
    if not isinstance(word, str):
        return None
    found = difflib.get_close_matches(word, [c for c in candidates if isinstance(c, str)], n=1, cutoff=cutoff)
    return found[0] if found else None


def _parser_of(parser: argparse.ArgumentParser, argv: List[str]) -> argparse.ArgumentParser:
    """The (sub)command parser ``argv`` reaches: ``smdebug rules run RUN`` -> the parser of ``rules run``."""
    while True:
        subcommands = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        if subcommands is None:
            return parser
        name = next((a for a in argv if not a.startswith("-")), None)
        if name not in subcommands.choices:
            return parser
        parser, argv = subcommands.choices[name], argv[argv.index(name) + 1:]


def _refuse_unknown(parser: argparse.ArgumentParser, argv: List[str], unknown: List[str]) -> None:
    """Exit 2 naming the arguments no parser took, from the parser of the command they were given to (its
    usage and name, not the top level's), with the close option of a misspelt one (``--stpe`` -> ``--step``)."""
    command = _parser_of(parser, argv)
    options = {o[2:]: o for a in command._actions for o in a.option_strings if o.startswith("--")}
    flag = next((u.split("=", 1)[0] for u in unknown if u.startswith("--")), None)
    # (compared without the dashes they all share, which would make any two options look alike)
    guess = _close_match(flag[2:], options, cutoff=0.7) if flag else None
    given_at = next((i for i, a in enumerate(argv) if a.split("=", 1)[0] == flag), None)
    if guess is not None and options[guess] == flag and "--" in argv[:given_at or 0]:
        # (the option exists: it came after "--", which makes every later argument a path, not an option)
        hint = f" ({flag} is an option: put it before --)"
    else:
        hint = f" (did you mean {options[guess]}?)" if guess else ""
    command.error(f"unrecognized arguments: {' '.join(unknown)}{hint}")


def _version() -> str:
    try:
        from smdebug._version import __version__
    except ImportError:  # pragma: no cover - broken install
        __version__ = "unknown"
    return f"smdebug {__version__} (smdebug-core)"


def _command_name(argv: List[str]) -> Optional[str]:
    return next((a for a in argv if a not in _TOP_LEVEL_FLAGS), None)


def _plugin_commands() -> dict:
    """Commands registered by plugins (CommandInfo by name), minus those that reuse a core name."""
    try:
        from smdebug.core.plugins import manager

        found = manager.commands()
    except Exception as e:  # noqa: BLE001 - a broken plugin system leaves the core's commands working
        logging.getLogger("smdebug").warning("smdebug: plugin commands unavailable: %s", e)
        return {}
    for name in [n for n in found if n in COMMANDS]:
        logging.getLogger("smdebug").warning("smdebug: plugin %r registers command %r, which is smdebug's own; "
                                             "ignoring it", manager.command_plugin(name), name)
        del found[name]
    return found


def _add_command(sub, name: str, module) -> None:
    doc = (module.__doc__ or "").strip()
    cmd = sub.add_parser(name, help=doc.splitlines()[0] if doc else "", description=doc or None,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    module.add_arguments(cmd)
    cmd.set_defaults(_run=module.run)


def _add_plugin_command(sub, info, chosen: bool) -> None:
    """A plugin's command: only its help line unless it is the one being run (then its module loads)."""
    if chosen:
        try:
            _add_command(sub, info.name, info.load())
            return
        except Exception as e:  # noqa: BLE001 - the plugin's fault: say so, other commands are unaffected
            problem = f"{type(e).__name__}: {e}"
    if not chosen:
        sub.add_parser(info.name, help=info.help)
        return
    # it cannot define its arguments: take whatever follows (no option is recognised), then say why
    cmd = sub.add_parser(info.name, help=info.help, add_help=False, prefix_chars="\0")
    cmd.add_argument("_ignored", nargs="*", help=argparse.SUPPRESS)
    cmd.set_defaults(_run=lambda args: _broken_command(info, problem))


def _broken_command(info, problem: str) -> int:
    from smdebug.core.plugins import manager

    print(f"smdebug {info.name}: this command comes from plugin {manager.command_plugin(info.name)!r} "
          f"(module {info.module}), which cannot load it: {problem}", file=sys.stderr)
    return 2


def build_parser(argv: Optional[List[str]] = None) -> argparse.ArgumentParser:
    """The parser for ``argv`` (default ``sys.argv[1:]``): every core command, and the plugins' commands
    unless ``argv`` names a core command (which then runs without plugin discovery)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    chosen = _command_name(argv)
    parser = _Parser(
        prog="smdebug",
        description="Inspect smdebug runs and installation.",
        epilog="`smdebug COMMAND --help` describes a command.",
    )
    parser.add_argument("--version", action="version", version=_version())
    parser.add_argument("-v", "--verbose", action="store_true", help="show debug logs (on stderr)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module_name in COMMANDS.items():
        _add_command(sub, name, importlib.import_module(module_name))
    if chosen not in COMMANDS:
        for name, info in sorted(_plugin_commands().items()):
            _add_plugin_command(sub, info, chosen == name)
    return parser


def _logs_to_stderr(verbose: bool, stdout, stderr) -> None:
    """Keep stdout for command output (``--json`` must stay parseable): send smdebug's logs to stderr,
    through the escaping stream the command prints to (a log record may quote a name from the run)."""
    try:
        from smdebug.core.logger import get_logger

        logger = get_logger()
    except Exception:  # noqa: BLE001 - the CLI works without the core logger
        logger = logging.getLogger("smdebug")
    for handler in logger.handlers:
        # (a logger made during the command holds the escaping streams already; one made before, the outer)
        if isinstance(handler, logging.StreamHandler) and any(
                getattr(handler, "stream", None) is s for s in (stdout, stderr, sys.stdout)):
            handler.setStream(sys.stderr)
    if verbose:
        logger.setLevel(logging.DEBUG)


def main(argv: Optional[List[str]] = None) -> int:
    from smdebug.cli.terminal import safe_streams

    outer = sys.stdout, sys.stderr
    with safe_streams():  # names from a run never reach the terminal as control sequences
        return _main(argv, *outer)


def _main(argv: Optional[List[str]], stdout, stderr) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv)
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        _refuse_unknown(parser, argv, unknown)
    if getattr(args, "_run", None) is None:
        parser.print_help(sys.stderr)
        return 2
    _logs_to_stderr(args.verbose, stdout, stderr)
    if not args.verbose:
        import warnings

        # numpy's arithmetic on a run's values warns from deep inside numpy (a norm of values near the float
        # maximum overflows, a variance of infinities is NaN); the commands show those inf/NaN results
        # themselves, and the warning's source line means nothing to a user (-v keeps them)
        warnings.filterwarnings("ignore", category=RuntimeWarning)
    from smdebug.cli._common import CliError, closed_pipe
    from smdebug.core.names import one_line  # (an error may quote a name from the run: one line still)

    try:
        code = int(args._run(args) or 0)
        sys.stdout.flush()  # a reader that went away shows here, not as "Exception ignored" at exit
        return code
    except BrokenPipeError:  # `smdebug ... | head`: the reader went away; exit quietly (before `Exception`)
        return closed_pipe()
    except CliError as e:
        print(one_line(f"smdebug {args.command}: {e}"), file=sys.stderr)
        return e.code
    except OSError as e:  # (after BrokenPipeError) an output that cannot be written, a file that cannot be read
        if args.verbose:
            raise
        where = f"{e.filename}: " if getattr(e, "filename", None) else ""
        print(one_line(f"smdebug {args.command}: {where}{e.strerror or e}"), file=sys.stderr)
        return 2
    except MemoryError as e:  # a run or an endpoint asked for more than the machine has: say so, not 40 lines
        if args.verbose:
            raise
        detail = f" ({e})" if str(e) else ""
        print(f"smdebug {args.command}: out of memory{detail}; the run (or its storage) asked for more memory "
              "than this machine could give", file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - smdebug's own errors are messages, not tracebacks
        from smdebug.exceptions import SMDebugError

        if not isinstance(e, SMDebugError) or args.verbose:
            raise
        print(one_line(f"smdebug {args.command}: {e}"), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130

if __name__ == "__main__":
    sys.exit(main())
