"""The original smdebug's side of the S3 read benchmark (runs in its own venv; prints JSON).

    python s3_original.py s3://bucket/prefix
"""

import json
import os
import sys
import time

os.environ.setdefault("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sides import check_original  # noqa: E402

check_original()  # this side measures the original 1.0.34, or nothing

from smdebug.trials import create_trial  # noqa: E402


def main(path):
    t0 = time.perf_counter()
    trial = create_trial(path)
    steps = trial.steps()
    t_open = time.perf_counter() - t0
    t1 = time.perf_counter()
    n = nbytes = 0
    for name in trial.tensor_names():
        tensor = trial.tensor(name)
        for step in steps:
            value = tensor.value(step)
            n += 1
            nbytes += value.nbytes
    print(json.dumps({"open_seconds": t_open, "fetch_seconds": time.perf_counter() - t1, "values": n,
                      "bytes": nbytes}))


if __name__ == "__main__":
    main(sys.argv[1])
