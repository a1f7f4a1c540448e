"""Run the benchmarks, print the table and append it to benchmarks/RESULTS.md.

    python benchmarks/run.py [--quick] [--repeat N] [--no-record]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {cpu}, Python {platform.python_version()}"


def versions() -> str:
    import google.protobuf
    import numpy

    import smdebug

    return f"smdebug-core {smdebug.__version__}, numpy {numpy.__version__}, protobuf {google.protobuf.__version__}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (for a smoke run)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-record", action="store_true", help="do not append to RESULTS.md")
    args = parser.parse_args(argv)

    import io_throughput

    rows = io_throughput.run_main = io_throughput.main(quick=args.quick, repeat=args.repeat)
    table = io_throughput.format_table(rows)
    command = "nox -s bench" + (" -- --quick" if args.quick else "")
    report = (
        f"\n## I/O throughput — {datetime.date.today().isoformat()}\n\n"
        f"- machine: {machine()}\n- versions: {versions()}; original smdebug 1.0.34 in its own venv\n"
        f"- command: `{command}` (best of {args.repeat})\n\n{table}\n"
    )
    print(report)
    if not args.no_record:
        path = os.path.join(HERE, "RESULTS.md")
        new = not os.path.exists(path)
        with open(path, "a") as f:
            if new:
                f.write("# Benchmark results\n\nEach section is appended by `benchmarks/run.py`.\n")
            f.write(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
