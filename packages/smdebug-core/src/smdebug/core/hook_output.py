"""Where and whether this process writes (part of :class:`smdebug.core.hook.BaseHook`): the worker's
identity (detected at the first step: distributed runtimes are often initialised after the hook is built),
opening the run's storage, the claim on a single-worker out_dir or, in a multi-worker job, on this process's
worker name (:mod:`smdebug.core.out_dir`), and the background writer.
"""

from __future__ import annotations

import os
from typing import List

from smdebug.core.locations import END_OF_JOB_FILE, worker_name_problem
from smdebug.core.logger import get_logger
from smdebug.core.out_dir import OutDirClaim, warn_of_earlier_steps, worker_claim_key
from smdebug.core.storage.base import is_s3_path
from smdebug.core.storage.errors import StorageAccessDenied, StorageError, StorageUnavailable
from smdebug.core.storage.factory import get_storage
from smdebug.core.tensorboard import TensorBoardWriter
from smdebug.core.writer import BackgroundWriter

logger = get_logger()


class _SingleWorker:
    rank, size, name = 0, 1, "worker_0"


class HookOutput:
    """Mixed into BaseHook: sets ``worker``, ``rank``, ``num_workers``, ``_is_writer``, ``_storage``, ``_writer``,
    ``_tb`` and the claim (``_out_claim``)."""

    @property
    def _claimed(self) -> bool:
        return self._out_claim is not None and self._out_claim.claimed

    def _check_writer(self) -> None:
        if self._writer is not None and self._writer.error is not None:
            err = self._writer.error
            self._unsaved_steps = self._writer.unsaved_steps
            self._failed_at_step = self._writer.error_step
            self._writer = None
            self._fail(f"writing to {self.out_dir}", err)

    @property
    def unsaved_steps(self) -> List[int]:
        """Steps that were due but did not reach storage (remote store unreachable or too slow)."""
        if self._writer is not None:
            return self._writer.unsaved_steps
        return list(self._unsaved_steps)

    def _detect_worker(self):
        """(rank, size, name) of this process, from the plugins' ``smdebug_detect_worker``."""
        try:
            from smdebug.core.plugins import manager

            return manager.detect_worker(self.framework_name)
        except ImportError as e:  # plugin system unavailable: behave as a single worker
            logger.warning("smdebug: worker detection unavailable (%s); assuming a single worker", e)
            return _SingleWorker()

    def _init_worker(self) -> None:
        info = self._detect_worker()
        self.rank, size = info.rank, info.size
        self.worker = info.name or f"worker_{info.rank}"
        problem = worker_name_problem(self.worker)
        if problem is not None:
            # (a name the reader cannot read back would make a run that looks empty)
            logger.warning("smdebug: worker name %r (SMDEBUG_WORKER_NAME or the framework's) cannot name "
                           "files: %s; this worker writes as 'worker_%d' instead", self.worker[:100], problem,
                           info.rank)
            self.worker = f"worker_{info.rank}"
        if self.include_workers == "one":
            self._is_writer = self.rank == 0
            self.num_workers = 1
        else:
            self._is_writer = True
            self.num_workers = size

    def _start_writing(self) -> None:
        self._stretch = None  # (quiet steps may now have a claim to refresh, or no writing at all)
        s3 = is_s3_path(self.out_dir)
        try:
            self._storage = get_storage(self.out_dir)
            if s3:
                self._storage.ensure_bucket()
            finished = self._storage.exists(END_OF_JOB_FILE)
        except (StorageUnavailable, StorageAccessDenied) as e:
            # Unreachable right now (uploads wait for S3 in the background), or credentials that may
            # write but not read (a HEAD of a missing key is then 403): save anyway; if writing is
            # refused too, the first write says so.
            logger.warning("smdebug: could not look at %s before saving (%s); saving anyway.", self.out_dir, e)
            finished = False
        except StorageError as e:
            self._fail(f"opening {self.out_dir}", e)
            return
        if finished:
            logger.warning("smdebug: %s was marked as a finished run by another process; this hook will not "
                           "write to it.", self.out_dir)
            self._is_writer = False
            self._due = set()
            return
        if self.num_workers == 1:
            # Several processes sharing out_dir that each believe they are the only worker would
            # overwrite each other's files: the first to claim the directory writes, others don't.
            try:
                claimed = self._claim()
            except StorageError as e:
                self._fail(f"claiming {self.out_dir}", e)
                return
            if not claimed:
                self._is_writer = False
                self._due = set()
                return
        else:
            # Each worker name is written by one process: two that resolve to one name (the same
            # SMDEBUG_WORKER_NAME, every process given rank 0) would replace each other's steps file by file.
            try:
                claimed = self._claim(worker=self.worker)
            except StorageError as e:
                self._fail(f"claiming worker {self.worker!r} in {self.out_dir}", e)
                return
            if not claimed:
                self._refuse_duplicate_worker()
                return
        if not s3:  # (on S3 the look would cost requests before the first step is saved)
            warn_of_earlier_steps(self.out_dir, None if self.num_workers == 1 else self.worker, first_step=self.step,
                                  resumed=getattr(self, "training_run", 0) > 0)
        self._writer = BackgroundWriter(self._storage, self.worker)
        if self.tensorboard_dir and self._tb is None:
            if is_s3_path(self.tensorboard_dir):
                logger.warning("smdebug: TensorBoard output to S3 is not supported; no TensorBoard files written")
            else:
                # (the default folder is part of the run: no link followed below the run's folder)
                inside = self.tensorboard_dir == self.out_dir.rstrip("/") + "/tensorboard"
                self._tb = TensorBoardWriter(self.tensorboard_dir, keep_going=True,
                                             beneath=self.out_dir if inside else None)
        self._export_collections()

    def _claim(self, worker=None) -> bool:
        """Claim the run (a single-worker job) or this process's worker name in it (``worker``)."""
        if worker is None:
            self._out_claim = OutDirClaim(self._storage, self.out_dir)
        else:
            self._out_claim = OutDirClaim(self._storage, self.out_dir, key=worker_claim_key(worker), worker=worker)
        return self._out_claim.take_s3() if is_s3_path(self.out_dir) else self._out_claim.take()

    def _refuse_duplicate_worker(self) -> None:
        """Another live process writes this worker name: this hook writes nothing (one error), training
        goes on. Its steps would otherwise replace the other's, and the run could not tell them apart."""
        claim = self._out_claim
        self._out_claim = None
        self._disabled = True
        self._stretch = None
        self._due = set()
        self._failure = f"worker name {self.worker!r} is already written by {claim.holder}"
        logger.error(
            "smdebug: another process (%s) already writes worker %r of %s; this process (pid %d, rank %d of %d) "
            "resolves to the same worker name and would overwrite its steps, so its smdebug hook is disabled "
            "and writes nothing. Training continues. Give each process its own rank (RANK/WORLD_SIZE or the "
            "framework's) or SMDEBUG_WORKER_NAME. (A claim left by a crashed process on another machine is "
            "stale after %s seconds; remove %s to start sooner.)",
            claim.holder or "?", self.worker, self.out_dir, os.getpid(), self.rank, self.num_workers,
            "SMDEBUG_S3_CLAIM_STALE" if is_s3_path(self.out_dir) else "SMDEBUG_CLAIM_STALE",
            claim.storage.full_path(claim.key))

    def _refresh_s3_claim(self) -> None:
        if self._out_claim.refresh_due():
            self._writer.call(self._storage.write_atomic, self._out_claim.key, self._out_claim.payload)

    def _release_claim(self) -> None:
        if self._out_claim is not None:
            self._out_claim.release()
