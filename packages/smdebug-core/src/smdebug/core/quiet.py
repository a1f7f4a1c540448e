"""Quiet stretches: the run of steps in which nothing is due, begun at the least possible cost.

Most steps save nothing (the default schedule saves every 500th), and a plugin begins a step at every
forward call or batch, so the cost of beginning a step *is* the hook's cost on most of a run. Timed inside
a real training loop, where the step's tensor work has just evicted the hook's code and objects from the
CPU caches, every attribute a step looks at costs far more than it does in a tight loop (on a 2-core Xeon,
about 0.5 us each), so a quiet step must look at as little as it can.

Hence the split between what a quiet step checks and what it is told:

* checked at every quiet step (:meth:`QuietStretch.holds`): what changes without the hook being told, or
  is cheaper to compare than to track: the mode and its step number, the schedules and collections
  (global change counters), the included collection names (a public list users may edit in place), the
  writer's background error;
* told: everything else a quiet step must not skip (the hook disabled or closed, a value written or left
  pending, an out_dir claim to refresh, a stop signal, plugins that listen to step ends) drops the
  stretch (``hook._stretch = None``) where it happens, and the next step takes the full path, which makes
  a new stretch when it is quiet again (:meth:`BaseHook._compute_due`).

Taking the step lock is itself one of the dearer things a cold step does (several microseconds), so the
thread that made the stretch, while it is the only one beginning steps, counts quiet steps without it; a
second thread that begins a step takes the stretch away and waits for the owner's count in progress
(``BaseHook._share_quiet_steps``), and from then on every quiet step takes the lock.
"""

from __future__ import annotations

from threading import get_ident
from typing import Optional

from smdebug.core.collection import _Mutations as _CollectionMutations
from smdebug.core.save_config import _Changes as _ScheduleChanges


class QuietStretch:
    """Steps of ``mode`` before mode step ``until`` have nothing due (``due``: the interned empty set, on a
    worker that writes or not), as long as the schedules, the collections and the included names stay as
    they were."""

    __slots__ = ("mode", "until", "due", "schedules", "mutations", "token", "included", "collections",
                 "finish", "watch", "owner")

    def __init__(self, hook, quiet: tuple, finish: bool, watch: bool, owner: Optional[int]) -> None:
        self.until, self.mode, self.token, self.schedules, self.due = quiet
        self.mutations = _CollectionMutations.count
        self.included = list(hook.include_collections)
        self.collections = hook.collection_manager.collections
        self.finish = finish  # the step before must be finished in full (someone listens to step ends)
        self.watch = watch  # look for a rule's stop signal now and then
        # the thread that may begin these steps without the step lock (None: every thread takes it)
        self.owner = owner

    def holds(self, hook, step: int) -> bool:
        """Whether mode step ``step`` of the hook's current mode is still inside the stretch."""
        return (step < self.until and hook.mode is self.mode and self.schedules == _ScheduleChanges.count
                and self.mutations == _CollectionMutations.count and hook._prepared_token is self.token
                and hook.include_collections == self.included
                and hook.collection_manager.collections is self.collections)


def make_stretch(hook, quiet: Optional[tuple], own_finish_step: bool) -> Optional[QuietStretch]:
    """A stretch for a hook whose current step has nothing due by ``quiet`` (see ``BaseHook._quiet``),
    or None where quiet steps must take the full path: nothing known about the schedules, something
    written or pending in this step, an S3 claim that wants refreshing, a checkpoint state to record.
    ``own_finish_step``: the hook's class finishes a step its own way (it must run at every step)."""
    if (quiet is None or hook._disabled or hook._closed or hook._wrote_this_step or hook._open_step is not None
            or hook._pending_user_tensors or hook._pending_scalars or hook.worker is None
            or (hook._out_is_s3 and hook._claimed) or hook._state_store.dir is not None
            or quiet[2] is None or quiet[2] is not hook._prepared_token):
        return None
    listeners = hook.__dict__.get("_listeners")
    finish = listeners is None or "smdebug_step_end" in listeners or own_finish_step
    # A step finished in full runs plugins' code, which may take the step lock: only under the lock.
    owner = None if finish or hook._quiet_steps_shared else get_ident()
    return QuietStretch(hook, quiet, finish, hook._stop_watcher is not None and not hook.stop_requested, owner)
