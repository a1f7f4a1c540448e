"""Build (once) and locate a Horovod 0.28.1 wheel that works with PyTorch 2.x, for the `horovod` nox session.

Horovod's last release is published only as a source package, and as published it does not build against
PyTorch 2.x: its CMake files ask for C++14 while the torch headers need C++17. This script downloads the
sdist, switches the two `CMAKE_CXX_STANDARD 14` lines to 17, and builds a wheel with PyTorch and Gloo only
(no MPI, TensorFlow or MXNet) in the *current* environment (`--no-build-isolation`: the build must see the
installed torch). The wheel is cached outside the repository, keyed by Python and torch version, so the
~4 minute build happens once per machine.

    python tools/build_horovod.py        # prints the wheel's path (building it first if needed)

Needs in the current environment: torch, pip, setuptools, wheel, cmake, packaging, psutil, pyyaml,
cloudpickle, cffi; a C++17 compiler on the machine.
"""

from __future__ import annotations

import fcntl
import glob
import os
import subprocess
import sys
import tarfile
import tempfile

VERSION = "0.28.1"
BUILD_ENV = {
    "HOROVOD_WITH_PYTORCH": "1",
    "HOROVOD_WITH_GLOO": "1",
    "HOROVOD_WITHOUT_MPI": "1",
    "HOROVOD_WITHOUT_TENSORFLOW": "1",
    "HOROVOD_WITHOUT_MXNET": "1",
}
PATCHED_FILES = ("CMakeLists.txt", "horovod/torch/CMakeLists.txt")


def cache_dir() -> str:
    import torch

    py = f"cp{sys.version_info.major}{sys.version_info.minor}"
    torch_version = torch.__version__.split("+")[0]
    base = os.environ.get("SMDEBUG_HOROVOD_CACHE") or os.path.expanduser("~/.cache/smdebug-tests/horovod")
    return os.path.join(base, f"horovod-{VERSION}-{py}-torch{torch_version}")


def cached_wheel(folder: str):
    wheels = sorted(glob.glob(os.path.join(folder, f"horovod-{VERSION}-*.whl")))
    return wheels[0] if wheels else None


def build(folder: str) -> str:
    with tempfile.TemporaryDirectory(prefix="horovod-build-") as work:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                        f"horovod=={VERSION}", "-d", work], check=True, stdout=sys.stderr)
        with tarfile.open(os.path.join(work, f"horovod-{VERSION}.tar.gz")) as tar:
            tar.extractall(work, filter="data")
        src = os.path.join(work, f"horovod-{VERSION}")
        for rel in PATCHED_FILES:
            path = os.path.join(src, rel)
            with open(path) as f:
                text = f.read()
            if "set(CMAKE_CXX_STANDARD 14)" not in text:
                raise RuntimeError(f"{rel}: expected 'set(CMAKE_CXX_STANDARD 14)' to patch")
            with open(path, "w") as f:
                f.write(text.replace("set(CMAKE_CXX_STANDARD 14)", "set(CMAKE_CXX_STANDARD 17)"))
        # CMAKE_POLICY_VERSION_MINIMUM: lets a CMake 4 (which dropped support for projects that ask for < 3.5,
        # as Horovod's bundled Gloo does) configure anyway, should one be on PATH despite the session's pin.
        env = {**os.environ, **BUILD_ENV, "MAKEFLAGS": f"-j{os.cpu_count() or 2}", "CMAKE_POLICY_VERSION_MINIMUM": "3.5"}
        os.makedirs(folder, exist_ok=True)
        print(f"building Horovod {VERSION} (a few minutes)...", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", src,
                        "-w", folder], check=True, env=env, stdout=sys.stderr)
    wheel = cached_wheel(folder)
    if wheel is None:
        raise RuntimeError(f"the Horovod build produced no wheel in {folder}")
    return wheel


def main() -> int:
    folder = cache_dir()
    os.makedirs(os.path.dirname(folder), exist_ok=True)
    with open(folder + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel sessions wait for one build
        wheel = cached_wheel(folder) or build(folder)
    print(wheel)
    return 0


if __name__ == "__main__":
    sys.exit(main())
