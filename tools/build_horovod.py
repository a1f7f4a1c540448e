"""Build (once) and locate a Horovod 0.28.1 wheel for PyTorch 2.x or TensorFlow 2.21 + Keras 3, for the
`horovod` and `horovod_tf` nox sessions.

Horovod's last release is published only as a source package, and as published it builds against neither
PyTorch 2.x nor TensorFlow 2.21. This script downloads the sdist, patches its C++/CMake sources (never its
Python code) and builds a wheel for one framework, with Gloo only (no MPI, no other framework), in the
*current* environment (`--no-build-isolation`: the build must see the installed framework's headers).

What is patched, and why:

* both flavours: the two `set(CMAKE_CXX_STANDARD 14)` lines (top-level and horovod/torch/CMakeLists.txt)
  become 17. The torch headers need C++17; TensorFlow's own CMake file already asks for 17 for TF >= 2.10,
  the top-level one is switched too so that the whole tree is compiled as one standard.
* tf only: horovod/tensorflow/xla_mpi_ops.cc. All of its code is GPU-only (inside `#if HAVE_GPU`), but its
  `#if TENSORFLOW_VERSION >= 2006000000` block #includes XLA headers before that guard, and those no longer
  compile against TF 2.21's wheel (the tensorflow/compiler/xla/ headers moved to xla/, and xla/printer.h
  needs highwayhash headers the wheel does not ship: the build stops with a fatal error). The guard
  becomes `#if TENSORFLOW_VERSION >= 2006000000 && HAVE_GPU`, so a CPU build compiles the file to nothing.
  The build stops with an error if that exact line is not there (a different sdist: look again).

The build also sets CMAKE_POLICY_VERSION_MINIMUM=3.5 (see build()); the sessions pin cmake<4.

The Python side of Horovod is left as published. Under Keras 3 that means: `horovod.tensorflow` works
(allreduce, broadcast, DistributedGradientTape, once Keras variables are unwrapped with `v.value`), while
horovod's Keras wrappers (`horovod.keras`, `horovod.tensorflow.keras`: DistributedOptimizer, callbacks) do
not (DistributedOptimizer silently never allreduces). packages/smdebug-tf/README.md has the details.

The wheel is cached outside the repository, keyed by Python, framework and framework version (e.g.
~/.cache/smdebug-tests/horovod/horovod-0.28.1-cp311-tf2.21.0; SMDEBUG_HOROVOD_CACHE moves the base), so the
build (about 4 minutes for torch, 5-13 for tf on 2 cores) happens once per machine.

    python tools/build_horovod.py                  # torch (the default); prints the wheel's path
    python tools/build_horovod.py --framework tf   # TensorFlow; prints the wheel's path

Needs in the current environment: the framework (torch, or tensorflow), pip, setuptools, wheel, cmake,
packaging, psutil, pyyaml, cloudpickle, cffi; a C++17 compiler on the machine.
"""

from __future__ import annotations

import argparse
import fcntl
import glob
import os
import subprocess
import sys
import tarfile
import tempfile
from typing import Callable, Dict, List, NamedTuple

VERSION = "0.28.1"
# Horovod's setup.py and CMake files read these; everything is spelled out so that the flavour never
# depends on what the calling environment happens to export.
COMMON_ENV = {"HOROVOD_WITH_GLOO": "1", "HOROVOD_WITHOUT_MPI": "1", "HOROVOD_WITHOUT_MXNET": "1"}
CXX17_FILES = ("CMakeLists.txt", "horovod/torch/CMakeLists.txt")
XLA_FILE = "horovod/tensorflow/xla_mpi_ops.cc"
XLA_GUARD = "#if TENSORFLOW_VERSION >= 2006000000"


def _replace_exactly_once(src: str, rel: str, old_line: str, new_line: str) -> None:
    """Replace the one line of ``rel`` that is ``old_line`` (give or take indentation); fail loudly if there
    is not exactly one."""
    path = os.path.join(src, rel)
    with open(path) as f:
        lines = f.read().split("\n")
    hits = [i for i, line in enumerate(lines) if line.strip() == old_line]
    if len(hits) != 1:
        raise RuntimeError(f"{rel}: expected exactly one line {old_line!r} to patch, found {len(hits)}; "
                           f"this is not the Horovod {VERSION} source this script knows")
    lines[hits[0]] = lines[hits[0]].replace(old_line, new_line)  # keeps the indentation
    with open(path, "w") as f:
        f.write("\n".join(lines))


def _patch_cxx17(src: str) -> None:
    for rel in CXX17_FILES:
        _replace_exactly_once(src, rel, "set(CMAKE_CXX_STANDARD 14)", "set(CMAKE_CXX_STANDARD 17)")


def _patch_tf(src: str) -> None:
    _patch_cxx17(src)
    # A CPU build has no XLA kernels to compile, and TF 2.21 can no longer compile the XLA includes.
    _replace_exactly_once(src, XLA_FILE, XLA_GUARD, XLA_GUARD + " && HAVE_GPU")


def _torch_version() -> str:
    import torch

    return torch.__version__.split("+")[0]


def _tf_version() -> str:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # keep TF's start-up banner out of our output
    import tensorflow as tf

    return tf.__version__.split("+")[0]


class Flavour(NamedTuple):
    key: str  # cache folder prefix
    version: Callable[[], str]  # of the installed framework: the wheel is compiled against its headers
    env: Dict[str, str]
    patch: Callable[[str], None]


FLAVOURS = {
    "torch": Flavour("torch", _torch_version, {
        **COMMON_ENV, "HOROVOD_WITH_PYTORCH": "1", "HOROVOD_WITHOUT_TENSORFLOW": "1"}, _patch_cxx17),
    "tf": Flavour("tf", _tf_version, {
        **COMMON_ENV, "HOROVOD_WITH_TENSORFLOW": "1", "HOROVOD_WITHOUT_PYTORCH": "1"}, _patch_tf),
}


def cache_dir(flavour: Flavour) -> str:
    py = f"cp{sys.version_info.major}{sys.version_info.minor}"
    base = os.environ.get("SMDEBUG_HOROVOD_CACHE") or os.path.expanduser("~/.cache/smdebug-tests/horovod")
    return os.path.join(base, f"horovod-{VERSION}-{py}-{flavour.key}{flavour.version()}")


def cached_wheel(folder: str):
    wheels = sorted(glob.glob(os.path.join(folder, f"horovod-{VERSION}-*.whl")))
    return wheels[0] if wheels else None


def build(flavour: Flavour, folder: str) -> str:
    with tempfile.TemporaryDirectory(prefix="horovod-build-") as work:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                        f"horovod=={VERSION}", "-d", work], check=True, stdout=sys.stderr)
        with tarfile.open(os.path.join(work, f"horovod-{VERSION}.tar.gz")) as tar:
            tar.extractall(work, filter="data")
        src = os.path.join(work, f"horovod-{VERSION}")
        flavour.patch(src)
        # Drop inherited HOROVOD_WITH*/WITHOUT_* switches: one left over for the other flavour would
        # contradict ours (e.g. HOROVOD_WITHOUT_TENSORFLOW=1 in a tf build).
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HOROVOD_WITH_", "HOROVOD_WITHOUT_"))}
        # CMAKE_POLICY_VERSION_MINIMUM: lets a CMake 4 (which dropped support for projects that ask for < 3.5,
        # as Horovod's bundled Gloo does) configure anyway, should one be on PATH despite the sessions' pin.
        env.update(flavour.env, MAKEFLAGS=f"-j{os.cpu_count() or 2}", CMAKE_POLICY_VERSION_MINIMUM="3.5")
        os.makedirs(folder, exist_ok=True)
        print(f"building Horovod {VERSION} for {flavour.key} (several minutes)...", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", src,
                        "-w", folder], check=True, env=env, stdout=sys.stderr)
    wheel = cached_wheel(folder)
    if wheel is None:
        raise RuntimeError(f"the Horovod build produced no wheel in {folder}")
    return wheel


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description="Build (once) and print the path of a Horovod wheel.")
    parser.add_argument("--framework", choices=sorted(FLAVOURS), default="torch",
                        help="the framework Horovod is built for (default: torch)")
    flavour = FLAVOURS[parser.parse_args(argv).framework]
    folder = cache_dir(flavour)
    os.makedirs(os.path.dirname(folder), exist_ok=True)
    with open(folder + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel sessions wait for one build
        wheel = cached_wheel(folder) or build(flavour, folder)
    print(wheel)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
