"""Worker identity from the environment, for when no framework can say who this process is.

Order of detection (``smdebug.core.plugins.detect_worker``):

1. framework APIs, asked through the plugins (torch.distributed, Horovod, TF strategies, XGBoost's
   collective), for processes whose framework is already initialised;
2. the launchers' environment variables, for a process whose framework is not initialised yet (the hook
   often starts first): ``RANK``/``WORLD_SIZE`` (torchrun, torch.distributed.launch),
   ``OMPI_COMM_WORLD_RANK``/``OMPI_COMM_WORLD_SIZE`` (Open MPI, mpirun/horovodrun with MPI),
   ``HOROVOD_RANK``/``HOROVOD_SIZE`` (horovodrun with Gloo), ``SLURM_PROCID``/``SLURM_NTASKS`` (srun);
   the first complete pair wins;
3. ``SMDEBUG_WORKER_NAME`` / ``SMDEBUG_NUM_WORKERS`` override the name and the number of workers of
   whatever 1. or 2. found (e.g. to give workers readable names, or for launchers smdebug does not know).
"""

from __future__ import annotations

import logging
import os
from typing import Optional

from smdebug.core.plugins.info import WorkerInfo

#: (rank variable, size variable, launcher) in the order they are tried
LAUNCHER_VARIABLES = (
    ("RANK", "WORLD_SIZE", "torchrun"),
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "Open MPI"),
    ("HOROVOD_RANK", "HOROVOD_SIZE", "horovodrun"),
    ("SLURM_PROCID", "SLURM_NTASKS", "Slurm"),
)

_log = logging.getLogger("smdebug")


def _int(name: str) -> Optional[int]:
    value = os.environ.get(name)
    if value is None or not value.strip():
        return None
    try:
        return int(value.strip())
    except ValueError:
        _log.warning("smdebug: ignoring %s=%r (not an integer)", name, value)
        return None


def worker_from_env() -> Optional[WorkerInfo]:
    """The worker described by a launcher's environment variables, or None."""
    for rank_var, size_var, launcher in LAUNCHER_VARIABLES:
        rank, size = _int(rank_var), _int(size_var)
        if rank is None or size is None:
            continue
        try:
            return WorkerInfo(rank=rank, size=size)
        except ValueError as e:
            _log.warning("smdebug: ignoring %s=%s/%s=%s from %s: %s", rank_var, rank, size_var, size, launcher, e)
    return None


def apply_overrides(info: WorkerInfo) -> WorkerInfo:
    """``SMDEBUG_WORKER_NAME`` / ``SMDEBUG_NUM_WORKERS`` on top of a detected worker."""
    name = os.environ.get("SMDEBUG_WORKER_NAME", "").strip() or info.name
    size = _int("SMDEBUG_NUM_WORKERS")
    if size is None:
        size = info.size
    try:
        return WorkerInfo(rank=info.rank, size=size, name=name)
    except ValueError as e:
        _log.warning("smdebug: ignoring SMDEBUG_NUM_WORKERS=%s: %s", size, e)
        return WorkerInfo(rank=info.rank, size=info.size, name=name)
