"""Closing (part of :class:`smdebug.core.hook.BaseHook`): flushing, finishing the last step, writing what
is pending, reporting what could not be saved, and marking the run as ended (the last of several workers
to finish marks it).
"""

from __future__ import annotations

import os
from typing import Optional

from smdebug.core import process_exit
from smdebug.core.env_settings import env_float
from smdebug.core.hook_saving import check_timestamp
from smdebug.core.locations import END_OF_JOB_FILE, WORKERS_ENDED_DIR, worker_end_file_name
from smdebug.core.logger import get_logger
from smdebug.core.modes import ModeKeys
from smdebug.core.storage.base import is_s3_path
from smdebug.core.storage.errors import StorageError
from smdebug.core.storage.factory import get_storage
from smdebug.core.writer import BackgroundWriter, format_steps

logger = get_logger()


class HookClosing:
    """Mixed into BaseHook."""

    def flush(self, timeout: Optional[float] = None) -> bool:
        """Wait until everything recorded so far is on storage (at most ``timeout`` seconds, a finite
        number; SMDebugTypeError/SMDebugValueError for anything else, before anything is done)."""
        timeout = check_timestamp(timeout, "flush(timeout=...)")
        if self._writer is None:
            return True
        with self._step_lock:
            self._close_open_step()
        ok = self._writer.flush(timeout)
        self._check_writer()
        return ok

    def close(self) -> None:
        """Finish the last step, write everything, export collections and mark the run as ended."""
        with self._step_lock:  # a thread still recording waits, then finds the hook closed
            self._close()

    def _close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._stretch = None
        try:
            if not self._disabled:
                if self._in_step:
                    self._finish_step()
                if self._writer is None and self.worker is not None and self._is_writer and not self.dry_run:
                    # Nothing was due during the run: still leave a valid, empty run behind.
                    self._start_writing()
                if self._pending_scalars and self._writer is not None:
                    # Values logged after the last step: they get a step of their own.
                    self.step += 1
                    self.mode_steps[self.mode] += 1
                    self.mode_steps[ModeKeys.GLOBAL] = self.step
                    self._in_step = True
                    pending, self._pending_scalars = self._pending_scalars, []
                    for args in pending:
                        self._write_scalar(*args)
                    self._finish_step()
                self._close_open_step()
                if self._writer is not None:
                    self._export_collections()
                    if self._tb is not None:
                        self._writer.call(self._tb.close)
                    writer = self._writer
                    ok = writer.close(timeout=self._close_timeout())
                    err = writer.error
                    self._writer = None
                    self._unsaved_steps = writer.unsaved_steps
                    if err is not None:
                        self._failed_at_step = writer.error_step
                        self._fail(f"writing to {self.out_dir}", err)
                    elif self._unsaved_steps or writer.lost_other:
                        self._report_unsaved(writer)
                        self._lost_reason = self._unsaved_reason(writer)
                    elif not ok:
                        logger.warning("smdebug: some tensors could not be written before close")
            self._mark_end()
        except Exception as e:  # noqa: BLE001
            self._fail("close()", e)
        finally:
            if self._timeline is not None:
                try:
                    self._timeline.close()
                except Exception as e:  # noqa: BLE001
                    logger.warning("smdebug: could not save the trace events of %s: %s", self.out_dir, e)
            if hasattr(self._stop_watcher, "stop"):
                self._stop_watcher.stop()
            self._release_claim()
            process_exit.untrack(self)
            self._notify("smdebug_hook_closed", hook=self)

    def _close_timeout(self) -> Optional[float]:
        """How long close() waits for a remote store that stopped answering (None: local, no limit)."""
        if not is_s3_path(self.out_dir):
            return None
        return env_float("SMDEBUG_S3_CLOSE_TIMEOUT", 60.0, minimum=0.0)

    @staticmethod
    def _unsaved_reason(writer: BackgroundWriter) -> str:
        reasons = set(writer.lost_steps.values())
        if not reasons:
            return "the queue of data to write was full while the store was unreachable or too slow"
        if len(reasons) == 1:
            return next(iter(reasons))
        return f"{len(reasons)} different errors, e.g. {sorted(reasons)[0]}"

    def _report_unsaved(self, writer: BackgroundWriter) -> None:
        parts = []
        steps = self._unsaved_steps
        if steps:
            why = self._unsaved_reason(writer)
            parts.append(f"{len(steps)} saved step(s) did not reach {self.out_dir}: steps {format_steps(steps)} "
                         f"({why})")
        for other in writer.lost_other:
            parts.append(f"not written: {other}")
        logger.warning("smdebug: %s. Everything else was saved.", "; ".join(parts))

    def _mark_end(self) -> None:
        self._leave_failure_note()
        try:
            self._write_end_marker()
        except (StorageError, OSError) as e:
            if self._failure is not None:  # (the failure that stopped saving was reported already)
                logger.debug("smdebug: no end marker in %s: %s", self.out_dir, e)
                return
            logger.warning(
                "smdebug: could not mark %s as finished (%s); readers will treat the run as still running "
                "(trial.treat_as_ended() reads it to its end).", self.out_dir, e)

    def _leave_failure_note(self) -> None:
        """A hook that stopped saving, or whose saved steps did not all arrive, or whose training process is
        ending abnormally (closed at exit after an unhandled exception, or by SIGTERM), says so in the run (one
        small file; see :mod:`smdebug.core.hook_failures`): a trial opened later read a run cut short as a whole
        one.
        Best effort: a full disk may refuse the note too (the error was logged already)."""
        lost = list(self._unsaved_steps)
        if not self._failed and not lost and not self._ended_by:
            return
        if self.dry_run or not self._is_writer or self.worker is None:
            return
        from smdebug.core.hook_failures import failure_note, note_key

        try:
            storage = self._storage or get_storage(self.out_dir)
            storage.write_atomic(note_key(self.worker), failure_note(
                self.worker, self._failed_at_step, self._failure if self._failed else None,
                lost, self._lost_reason or (self._failure if lost else None),
                ended_by=self._ended_by, last_step=self.step if self._ended_by else None))
        except Exception as e:  # noqa: BLE001 - a note must never fail the close
            logger.debug("smdebug: no failure note in %s: %s", self.out_dir, e)

    def _write_end_marker(self) -> None:
        # On SageMaker the platform writes the end marker itself.
        if "TRAINING_JOB_NAME" in os.environ or self.dry_run or not self._is_writer:
            return
        if self._storage is None and self.worker is None:
            return  # nothing was ever written: leave no trace
        storage = self._storage or get_storage(self.out_dir)
        if self.num_workers > 1:
            # Every worker of a multi-worker run says it is done; the last one to finish marks the run
            # ended. (The original let the first worker to finish mark it, so readers treated the others'
            # later steps as missing, and late starters refused to write.) Writing before listing means
            # at least one of several workers finishing together sees them all.
            storage.write_atomic(worker_end_file_name(self.worker), b"")
            if len(storage.list(WORKERS_ENDED_DIR)) < self.num_workers:
                return
        storage.write_atomic(END_OF_JOB_FILE, b"")

    def _atexit_close(self) -> None:
        try:
            if self._ended_by is None and not self._closed:
                self._ended_by = process_exit.abnormal_end()
            self.close()
        except Exception:  # noqa: BLE001
            pass
