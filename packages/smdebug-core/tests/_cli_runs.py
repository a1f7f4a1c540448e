"""Real runs for the command-line tests (and docs/make_screenshots.py): a small two-layer network
trained with numpy, saved by a hook, with TRAIN and EVAL phases, a metric and stored reductions."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Dict, Optional

import numpy as np

from _support import NumpyHook

try:
    import pytest
except ImportError:  # docs/make_screenshots.py uses the training loop without pytest installed
    pytest = None


def _data(rng, n):
    x = rng.normal(size=(n, 4)).astype(np.float32)
    y = (np.sin(2 * x[:, 0]) + x[:, 1] * x[:, 2] - 0.5 * x[:, 3] > 0).astype(np.float32).reshape(-1, 1)
    return x, y


def train_mlp(hook, epochs: int = 4, steps_per_epoch: int = 20, eval_steps: int = 5, lr: float = 1.0,
              hidden: int = 16, seed: int = 0, batch: int = 64) -> Dict[str, list]:
    """Train a 4-hidden-1 network with tanh and a sigmoid output on a synthetic task, by hand.

    Every TRAIN step records weights, biases, gradients and the loss and saves the batch accuracy as
    a scalar; each epoch ends with EVAL steps (same weights, held-out data, no gradients). Returns
    the losses actually computed, by mode, for comparison with what the commands print.
    """
    from smdebug.core.modes import ModeKeys

    rng = np.random.default_rng(seed)
    params = {
        "fc1": rng.normal(scale=0.8, size=(4, hidden)).astype(np.float32),
        "fc1_b": np.zeros(hidden, np.float32),
        "fc2": rng.normal(scale=0.5, size=(hidden, 1)).astype(np.float32),
        "fc2_b": np.zeros(1, np.float32),
    }
    x_eval, y_eval = _data(rng, 256)
    losses: Dict[str, list] = {"TRAIN": [], "EVAL": []}

    def forward(x):
        h = np.tanh(x @ params["fc1"] + params["fc1_b"])
        p = 1 / (1 + np.exp(-(h @ params["fc2"] + params["fc2_b"])))
        return h, p

    def record_params():
        hook.record("weights/fc1", params["fc1"])
        hook.record("biases/fc1", params["fc1_b"])
        hook.record("weights/fc2", params["fc2"])
        hook.record("biases/fc2", params["fc2_b"])

    for _epoch in range(epochs):
        hook.set_mode(ModeKeys.TRAIN)
        for _ in range(steps_per_epoch):
            x, y = _data(rng, batch)
            hook.begin_step()
            record_params()
            h, p = forward(x)
            loss = float(-np.mean(y * np.log(p + 1e-7) + (1 - y) * np.log(1 - p + 1e-7)))
            d_out = (p - y) / len(y)
            grads = {"fc2": h.T @ d_out, "fc2_b": d_out.sum(0)}
            d_h = (d_out @ params["fc2"].T) * (1 - h**2)
            grads["fc1"], grads["fc1_b"] = x.T @ d_h, d_h.sum(0)
            hook.record("gradient/weights/fc1", grads["fc1"].astype(np.float32))
            hook.record("gradient/biases/fc1", grads["fc1_b"].astype(np.float32))
            hook.record("gradient/weights/fc2", grads["fc2"].astype(np.float32))
            hook.record("gradient/biases/fc2", grads["fc2_b"].astype(np.float32))
            hook.record("loss", np.array([loss], np.float32))
            hook.save_scalar("accuracy", float(np.mean((p > 0.5) == y)))
            losses["TRAIN"].append(np.float32(loss))
            for k in params:
                params[k] -= lr * grads[k].astype(np.float32)
            hook.end_step()
        hook.set_mode(ModeKeys.EVAL)
        for i in range(eval_steps):
            size = len(x_eval) // eval_steps
            x, y = x_eval[i * size:(i + 1) * size], y_eval[i * size:(i + 1) * size]
            hook.begin_step()
            record_params()
            _, p = forward(x)
            loss = float(-np.mean(y * np.log(p + 1e-7) + (1 - y) * np.log(1 - p + 1e-7)))
            hook.record("loss", np.array([loss], np.float32))
            hook.save_scalar("accuracy", float(np.mean((p > 0.5) == y)))
            losses["EVAL"].append(np.float32(loss))
            hook.end_step()
    return losses


def write_mlp_run(out_dir, save_interval: int = 1, close: bool = True, **kwargs):
    """A finished (or, with ``close=False``, still open) run of :func:`train_mlp` in ``out_dir``.

    The gradients collection also stores its l2 norm and mean (ReductionConfig), so commands can be
    checked on stored and computed reductions alike. Returns (hook, losses).
    """
    from smdebug.core.reduction_config import ReductionConfig
    from smdebug.core.save_config import SaveConfig

    hook = NumpyHook(out_dir=str(out_dir), save_config=SaveConfig(save_interval=save_interval),
                     include_collections=["weights", "biases", "gradients", "losses", "scalars"])
    hook.get_collection("gradients").reduction_config = ReductionConfig(
        norms=["l2"], reductions=["mean"], save_raw_tensor=True)
    losses = train_mlp(hook, **kwargs)
    if close:
        hook.close()
    return hook, losses


def write_named_losses_run(out_dir, names, steps: int = 20) -> None:
    """A finished run whose losses collection holds one curve per name (``1/(step+1) + i`` for the i-th),
    for names that must stay text wherever a command shows them (markup, TeX, quotes)."""
    from smdebug.core.save_config import SaveConfig

    hook = NumpyHook(out_dir=str(out_dir), save_config=SaveConfig(save_interval=1), include_collections=["losses"])
    for step in range(steps):
        hook.begin_step()
        for i, n in enumerate(names):
            hook.record(n, np.array([1.0 / (step + 1) + i], np.float32))
        hook.end_step()
    hook.close()


if pytest is not None:

    @pytest.fixture(scope="session")
    def mlp_run(tmp_path_factory):
        """A finished run of :func:`train_mlp` (2 epochs of 20 TRAIN + 5 EVAL steps, every step saved),
        shared by the tests of a process: (path, losses by mode)."""
        path = tmp_path_factory.mktemp("cli") / "mlp"
        _hook, losses = write_mlp_run(path, epochs=2, steps_per_epoch=20, eval_steps=5)
        return path, losses


def upload_dir(local: Path, bucket: str, prefix: str) -> None:
    """Copy a local run to s3://bucket/prefix with boto3 (the endpoint comes from the environment)."""
    import boto3

    s3 = boto3.client("s3")
    for path in sorted(Path(local).rglob("*")):
        if path.is_file():
            s3.upload_file(str(path), bucket, f"{prefix}/{path.relative_to(local).as_posix()}")


# --------------------------------------------------------------------------------------------------
# headless Chromium (Debian's package), for the report tests and the README screenshot
# --------------------------------------------------------------------------------------------------
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> Optional[str]:
    if os.environ.get("SMDEBUG_CHROMIUM"):
        return os.environ["SMDEBUG_CHROMIUM"]
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def install_chromium(lock_path: str = "/tmp/smdebug-chromium-install.lock", timeout: float = 900) -> str:
    """Find chromium, or install Debian's package with apt-get (as root, one process at a time).

    Raises RuntimeError with the reason when it is missing and cannot be installed here.
    SMDEBUG_NO_APT=1 forbids the installation.
    """
    found = find_chromium()
    if found:
        return found
    if os.environ.get("SMDEBUG_NO_APT"):
        raise RuntimeError("chromium is not installed and SMDEBUG_NO_APT is set (apt-get install -y chromium)")
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or not shutil.which("apt-get"):
        raise RuntimeError("chromium is not installed and apt-get cannot be run here as root "
                           "(install it: apt-get install -y chromium)")
    import fcntl

    with open(lock_path, "w") as lock:  # pytest-xdist workers: one installs, the others wait
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = find_chromium()
        if found:
            return found
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        log = []
        for command in (["apt-get", "install", "-y", "-q", "chromium"],
                        ["apt-get", "update", "-q"],
                        ["apt-get", "install", "-y", "-q", "chromium"]):
            out = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout)
            log.append(f"$ {' '.join(command)} -> {out.returncode}\n{out.stdout[-1500:]}{out.stderr[-1500:]}")
            if command[1] == "install" and out.returncode == 0:
                break
        found = find_chromium()
        if not found:
            raise RuntimeError("apt-get could not install chromium:\n" + "\n".join(log))
        return found


def chromium_args(chromium: str, *extra: str, profile: Optional[str] = None) -> list:
    """Headless Chromium as root (no sandbox), with its own profile directory (parallel runs)."""
    import tempfile

    profile = profile or tempfile.mkdtemp(prefix="smdebug-chromium-")
    return [chromium, "--headless=new", "--disable-gpu", "--no-sandbox", "--hide-scrollbars", "--no-first-run",
            "--disable-extensions", "--disable-background-networking", f"--user-data-dir={profile}", *extra]


def screenshot(chromium: str, page: Path, out: Path, width: int = 1280, height: int = 2000,
               timeout: float = 120) -> subprocess.CompletedProcess:
    """``chromium --screenshot``: the page at ``width`` x ``height`` CSS pixels into ``out`` (PNG)."""
    return subprocess.run(
        chromium_args(chromium, f"--window-size={width},{height}", f"--screenshot={out}", Path(page).resolve().as_uri()),
        capture_output=True, text=True, timeout=timeout,
    )


def dump_dom(chromium: str, page: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    """``chromium --dump-dom`` with the page's console messages logged on stderr ("CONSOLE" lines)."""
    return subprocess.run(
        chromium_args(chromium, "--enable-logging=stderr", "--v=0", "--dump-dom", Path(page).resolve().as_uri()),
        capture_output=True, text=True, timeout=timeout,
    )


def console_messages(stderr: str) -> list:
    """The page's console messages (and uncaught errors) from Chromium's stderr log."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]
