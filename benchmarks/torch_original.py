"""The original smdebug's side of the PyTorch overhead benchmark. Runs inside the original's torch venv
(``original_env.original_python(with_torch=True)``) and prints one line of JSON.

    python torch_original.py [--passes N] [--quick]

The workload, the hook configurations and the timing are those of ``torch_overhead.measure`` (that
module imports only torch and the standard library at the top); here ``import smdebug.pytorch`` is the
original's. The SummaryWriter configurations are measured in our process only (``measure`` leaves them
out by default).
"""

import argparse
import json
import os
import sys
import traceback

os.environ.setdefault("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")
os.environ.setdefault("SMDEBUG_LOG_LEVEL", "warning")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from sides import check_original  # noqa: E402

check_original()  # this side measures the original 1.0.34, or nothing

import torch_overhead  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--passes", type=int, default=6)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    try:
        info = torch_overhead.describe_process()
        results = torch_overhead.measure(passes=args.passes, quick=args.quick)
    except Exception as e:  # noqa: BLE001 - the driver prints the reason in the table
        traceback.print_exc(file=sys.stderr)
        print(json.dumps({"error": f"{type(e).__name__}: {e}"[:300]}))
        return 0
    print(json.dumps({**info, "results": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
