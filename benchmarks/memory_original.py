"""The original smdebug's side of the memory benchmark. Runs inside the original's torch venv
(``original_env.original_python(with_torch=True)``) and prints one line of JSON.

    python memory_original.py child MODEL STEPS none|hook OUT_DIR

The training and the measurement are ``memory.train`` (that module imports only the standard library
at the top); here ``import smdebug.pytorch`` is the original's.
"""

import os
import sys

os.environ.setdefault("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")
os.environ.setdefault("SMDEBUG_LOG_LEVEL", "warning")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from sides import check_original  # noqa: E402

check_original()  # this side measures the original 1.0.34, or nothing

import memory  # noqa: E402


def main(argv) -> int:
    if len(argv) != 5 or argv[0] != "child":
        print(__doc__, file=sys.stderr)
        return 2
    return memory.child_main(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
