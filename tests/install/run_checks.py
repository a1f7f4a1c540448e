"""Install check (``nox -s install``): smdebug installed the way users install it, outside nox's editable venvs.

1. The README's Installing block, line by line as written, in a fresh virtualenv (``python -m venv``, its
   own pip) inside a fresh copy of the checkout (the files git tracks or would track), with a framework
   installed first as the README asks; then a hook trains a model there (``check_wheel.py readme``).
2. Each package from the wheels step 1 built, in a fresh venv of its own, with only what it declares (its
   ``framework`` extra, where there is one) and the check of ``check_wheel.py`` for it. Where the extra
   names a framework's full build, its CPU build of the same version range stands in for it
   (``tensorflow-cpu``, ``xgboost-cpu``, the local ``torch+cpu`` wheel): the dependency is dropped with
   a uv override and the CPU build installed in the same resolve.

    python tests/install/run_checks.py [--torch REQ] [--only NAME ...] [--keep DIR]

Prints one line per step with its time; exits 1 if any step failed (every step runs regardless).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional, Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.join(ROOT, "tests", "install")
README_BEGIN = "<!-- install: begin"
README_END = "<!-- install: end -->"
NEVER = "python_version < '0'"  # a marker no interpreter matches: drops a requirement in an override

#: name -> {"install": requirements, "drop": requirements dropped by an override, "path": PYTHONPATH inside the
#: copy (the core tests' numpy hook), "then": (check, requirements) installed and checked afterwards}. The CPU
#: builds are the versions the tf and xgboost sessions install (noxfile.py), so uv's cache has them.
PACKAGE_CHECKS: Dict[str, dict] = {
    # smdebug-core as every plugin's dependency, with a plugin whose framework is absent
    "core": {"install": ["smdebug-torch"], "path": "packages/smdebug-core/tests"},
    "xgboost": {"install": ["smdebug-xgboost[framework]", "xgboost-cpu>=3,<4"], "drop": ["xgboost"]},
    "mxnet": {"install": ["smdebug-mxnet[framework]"]},
    "tf": {"install": ["smdebug-tf[framework]", "tensorflow-cpu==2.21.0", "keras==3.15.1"], "drop": ["tensorflow"]},
    "rules": {"install": ["smdebug-rules"], "path": "packages/smdebug-core/tests",
              "then": ("rules-aws", ["smdebug-rules[aws]"])},
}


class StepFailed(Exception):
    pass


def _child_cpu() -> float:
    t = os.times()
    return t.children_user + t.children_system


@contextlib.contextmanager
def timed(label: str, timings: Optional[list] = None):
    """Print ``label`` with the wall time and the CPU time of the processes it ran (the CPU time is what
    a 2-core CI machine of its own would mostly pay; the wall time also counts waiting for a busy one)."""
    start, cpu = time.monotonic(), _child_cpu()
    verdict = "FAILED"
    try:
        yield
        verdict = "ok"
    finally:
        wall, used = time.monotonic() - start, _child_cpu() - cpu
        print(f"{label}: {verdict}, {wall:.1f} s ({used:.1f} s CPU)", flush=True)
        if timings is not None:
            timings.append((label, verdict, wall, used))


def readme_commands(readme: str) -> List[str]:
    """The command lines of the README's install block (between its markers, inside the code fence)."""
    text = open(readme, encoding="utf-8").read()
    try:
        block = text[text.index(README_BEGIN):text.index(README_END)]
    except ValueError:
        raise StepFailed(f"{readme} has no install block ({README_BEGIN} ... {README_END})") from None
    lines = block.split("```")[1].splitlines()[1:]  # inside the fence, after its opening line
    commands = [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]
    if not commands:
        raise StepFailed("the README's install block holds no command")
    return commands


def copy_checkout(dest: str) -> None:
    """The files of a fresh clone of this working tree (tracked, or new and not ignored)."""
    listing = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                             capture_output=True, check=True).stdout.decode()
    for rel in filter(None, listing.split("\0")):
        src = os.path.join(ROOT, rel)
        if not os.path.isfile(src):  # deleted in the working tree, not yet committed
            continue
        target = os.path.join(dest, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(src, target)


def _clean_env(**extra: str) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "UV_PYTHON", "PYTHONPATH", "PYTHONHOME", "CONDA_PREFIX")}
    env.update(extra)
    return env


def run(cmd: Sequence[str], *, cwd: Optional[str] = None, env: Optional[Dict[str, str]] = None, shell=False,
        what: str = "") -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env or _clean_env(), shell=shell, capture_output=True, text=True,
                          executable="/bin/bash" if shell else None)
    if proc.returncode != 0:
        shown = cmd if isinstance(cmd, str) else " ".join(cmd)
        raise StepFailed(f"{what or shown} exited {proc.returncode}\n$ {shown}\n{proc.stdout[-3000:]}"
                         f"{proc.stderr[-5000:]}")
    return proc.stdout + proc.stderr


def venv_with_pip(path: str) -> str:
    run([sys.executable, "-m", "venv", path], what="python -m venv")
    return os.path.join(path, "bin", "python")


def uv_venv(path: str) -> str:
    run(["uv", "venv", "-q", "-p", sys.executable, path], what="uv venv")
    return os.path.join(path, "bin", "python")


def uv_install(python: str, requirements: Sequence[str], find_links: str, drop: Sequence[str] = ()) -> None:
    args = ["uv", "pip", "install", "-q", "--python", python, "--find-links", find_links]
    if drop:
        overrides = os.path.join(os.path.dirname(os.path.dirname(python)), "overrides.txt")
        with open(overrides, "w") as f:
            f.write("".join(f"{name} ; {NEVER}\n" for name in drop))
        args += ["--override", overrides]
    run(args + list(requirements), what="uv pip install " + " ".join(requirements))


def check(python: str, name: str, work: str, pythonpath: str = "") -> None:
    env = _clean_env(PYTHONPATH=pythonpath, PYTHONNOUSERSITE="1")
    run([python, os.path.join(HERE, "check_wheel.py"), name, os.path.join(work, name)], env=env,
        what=f"check_wheel.py {name}")


def installed_from_wheels(python: str, dists: Sequence[str], wheels: str) -> None:
    """Each of ``dists`` is installed, not editable, at the version of its wheel in ``wheels``."""
    import json

    built = {}
    for wheel in os.listdir(wheels):
        if wheel.endswith(".whl"):
            name, version = wheel.split("-")[:2]
            built[name.replace("_", "-")] = version
    code = ("import json, sys\nfrom importlib import metadata\nout = {}\n"
            "for name in sys.argv[1:]:\n"
            "    d = metadata.distribution(name)\n"
            "    direct = json.loads(d.read_text('direct_url.json') or '{}')\n"
            "    out[name] = [d.version, direct.get('dir_info', {}).get('editable', False)]\n"
            "print(json.dumps(out))")
    found = json.loads(run([python, "-c", code, *dists]).strip().splitlines()[-1])
    for name, (version, editable) in found.items():
        if editable or version != built.get(name):
            raise StepFailed(f"{name} {version} (editable: {editable}) is installed, not the wheel built from the "
                             f"checkout ({built.get(name)})")


def readme_step(base: str, torch_req: str, find_links: str) -> str:
    """Step 1. Returns the folder of the wheels the README's commands built."""
    checkout = os.path.join(base, "checkout")
    copy_checkout(checkout)
    venv = os.path.join(base, "venv-readme")
    python = venv_with_pip(venv)
    uv_install(python, [torch_req], find_links)  # "the framework itself is yours to install"
    env = _clean_env(VIRTUAL_ENV=venv, PATH=os.path.join(venv, "bin") + os.pathsep + os.environ["PATH"])
    for command in readme_commands(os.path.join(checkout, "README.md")):
        with timed(f"  $ {command}"):
            run(command, cwd=checkout, env=env, shell=True, what=f"README: {command}")
    wheels = os.path.join(checkout, "dist")
    installed_from_wheels(python, ["smdebug-core", "smdebug-torch", "smdebug-rules"], wheels)
    check(python, "readme", base)
    return wheels


def package_step(name: str, spec: dict, base: str, wheels: str) -> None:
    python = uv_venv(os.path.join(base, f"venv-{name}"))
    uv_install(python, spec["install"], wheels, spec.get("drop", ()))
    path = os.path.join(base, "checkout", spec["path"]) if spec.get("path") else ""
    check(python, name, base, path)
    if spec.get("then"):
        then_name, then_install = spec["then"]
        uv_install(python, then_install, wheels)
        check(python, then_name, base, path)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torch", default="torch", help="the torch requirement (the noxfile pins the local CPU wheel)")
    parser.add_argument("--only", nargs="*", choices=["readme", *PACKAGE_CHECKS], help="run only these steps")
    parser.add_argument("--keep", metavar="DIR", help="work in DIR and keep it (default: a temporary folder)")
    args = parser.parse_args(argv)
    find_links = os.environ.get("UV_FIND_LINKS", "/opt/wheels").split()[0]
    base = args.keep or tempfile.mkdtemp(prefix="smdebug-install-")
    os.makedirs(base, exist_ok=True)
    failures, timings = [], []
    try:
        try:
            # the package checks install from the wheels the README's commands built: step 1 always runs
            with timed("install check readme", timings):
                wheels = readme_step(base, args.torch, find_links)
        except StepFailed as e:
            print(f"README install FAILED: {e}", file=sys.stderr)
            return 1
        for name, spec in PACKAGE_CHECKS.items():
            if args.only and name not in args.only:
                continue
            try:
                with timed(f"install check {name}", timings):
                    package_step(name, spec, base, wheels)
            except StepFailed as e:
                failures.append(name)
                print(f"{name} FAILED: {e}", file=sys.stderr)
    finally:
        print("\n".join(f"{label:24} {verdict:6} {wall:6.1f} s ({cpu:.1f} s CPU)"
                        for label, verdict, wall, cpu in timings))
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
