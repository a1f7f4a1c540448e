"""The original smdebug's side of the trial-read benchmark. Runs inside the original's venv
(``original_env.original_python()``) and prints one line of JSON.

    python trial_read_original.py read RUN NAME1,NAME2,... BULK1,BULK2,...

The reading and its timing are ``trial_read.measure_read`` (that module imports only the standard
library at the top); here ``smdebug.trials`` is the original's.
"""

import json
import os
import sys

os.environ.setdefault("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")
os.environ.setdefault("SMDEBUG_LOG_LEVEL", "warning")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from sides import check_original  # noqa: E402

check_original()  # this side measures the original 1.0.34, or nothing

import trial_read  # noqa: E402


def main(argv) -> int:
    if len(argv) != 4 or argv[0] != "read":
        print(__doc__, file=sys.stderr)
        return 2
    print(json.dumps(trial_read.measure_read(argv[1], argv[2].split(","), argv[3].split(","))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
