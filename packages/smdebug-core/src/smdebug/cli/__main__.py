"""``python -m smdebug.cli``: the same as the ``smdebug`` command."""

import sys

from smdebug.cli.main import main

sys.exit(main())
