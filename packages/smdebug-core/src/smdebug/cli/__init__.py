"""The ``smdebug`` command line.

``smdebug.cli.main`` builds the argument parser from :data:`smdebug.cli.main.COMMANDS`: each subcommand
lives in its own module with ``add_arguments(parser)`` and ``run(args) -> int``. Command modules import
nothing heavy at module level (no numpy, no pandas, no frameworks), so ``smdebug --help`` stays instant.
"""
