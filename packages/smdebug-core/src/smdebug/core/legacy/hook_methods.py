"""Hook methods of smdebug 1.0.x that scripts and tests called although they were internal."""

from __future__ import annotations


class LegacyHookMethods:
    """Mixed into ``smdebug.core.hook.BaseHook``."""

    def _cleanup(self) -> None:
        """1.0.x's name of :meth:`close` (finish the run: write everything, mark it ended)."""
        self.close()

    def _get_worker_name(self) -> str:
        """This process's worker name (``worker_<rank>``), detecting it if no step has run yet."""
        if self.worker is None:
            self._init_worker()
        return self.worker

    def _get_num_workers(self) -> int:
        if self.worker is None:
            self._init_worker()
        return self.num_workers

    def _increment_step(self) -> None:
        """1.0.x's internal step counter move, which scripts driving a hook by hand called: here it begins
        the next step of the current mode (:meth:`begin_step`), closing the previous one."""
        self.begin_step()

    def has_default_configuration(self) -> bool:
        """True when the user chose no collections beyond the framework's defaults."""
        return self.has_default_hook_configuration()
