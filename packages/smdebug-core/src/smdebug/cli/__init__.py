"""The ``smdebug`` command line.

``smdebug.cli.main`` builds the argument parser from smdebug-core's commands
(:data:`smdebug.cli.main.COMMANDS`) and the commands plugins register (hook spec
``smdebug_register_commands``): each subcommand lives in its own module with ``add_arguments(parser)`` and
``run(args) -> int``. Command modules import nothing heavy at module level (no numpy, no pandas, no
frameworks), and a plugin's command module is imported only when that command runs, so ``smdebug --help``
stays quick.
"""
