"""Step counters that survive a restarted (e.g. spot) training job.

When a checkpoint configuration exists (``CHECKPOINT_CONFIG_FILE_PATH``, default
``/opt/ml/input/config/checkpointconfig.json``, key ``LocalPath``), the hook keeps
``<LocalPath>/metadata.json``: one entry per training run with the latest global step seen and saved
and each mode's step. It is updated when the user's checkpoint files change (anywhere below
``LocalPath``: frameworks often write a folder per checkpoint), so after a restart from a checkpoint the
hook resumes numbering where that checkpoint was taken instead of starting again at step 0 and
overwriting saved steps.
"""

from __future__ import annotations

import json
import os
from typing import Dict, List, Optional

from smdebug.core.logger import get_logger
from smdebug.core.modes import ModeKeys
from smdebug.core.storage.safe_fs import write_file_atomic

DEFAULT_CHECKPOINT_CONFIG_FILE = "/opt/ml/input/config/checkpointconfig.json"
METADATA_FILENAME = "metadata.json"
# what SageMaker names metadata.json once it has uploaded it (not a checkpoint either)
_NOT_CHECKPOINTS = (METADATA_FILENAME, METADATA_FILENAME + ".sagemaker-uploaded", METADATA_FILENAME + ".tmp")

logger = get_logger()


class StateStore:
    def __init__(self):
        self.dir: Optional[str] = None
        self.states: List[dict] = []
        self._snapshot = None
        path = os.environ.get("CHECKPOINT_CONFIG_FILE_PATH", DEFAULT_CHECKPOINT_CONFIG_FILE)
        if not os.path.exists(path):
            return
        try:
            with open(path) as f:
                self.dir = json.load(f).get("LocalPath")
        except (OSError, ValueError, AttributeError) as e:
            logger.warning("Ignoring unreadable checkpoint configuration %s: %s", path, e)
            return
        if not self.dir:
            return
        meta = os.path.join(self.dir, METADATA_FILENAME)
        if os.path.exists(meta):
            try:
                with open(meta) as f:
                    states = json.load(f)
                if isinstance(states, list):
                    self.states = [s for s in states if isinstance(s, dict)]
            except (OSError, ValueError) as e:
                logger.warning("Ignoring unreadable training state %s: %s", meta, e)
        self._snapshot = self._checkpoint_files()

    @property
    def active(self) -> bool:
        return self.dir is not None

    @property
    def _checkpoint_dir(self) -> Optional[str]:
        """smdebug 1.0.x's name of :attr:`dir`."""
        return self.dir

    def latest(self) -> Optional[dict]:
        states = [s for s in self.states if isinstance(s, dict)]
        if not states:
            return None
        return max(states, key=lambda s: s.get("latest-global-step-seen", -1) or -1)

    get_last_saved_state = latest  # smdebug 1.0.x's name

    def _checkpoint_files(self):
        """(path, size, modification time) of every checkpoint file below the directory."""
        if self.dir is None or not os.path.isdir(self.dir):
            return None
        found = []
        for root, _, names in os.walk(self.dir):
            for name in names:
                if root == self.dir and name in _NOT_CHECKPOINTS:
                    continue
                try:
                    st = os.stat(os.path.join(root, name))
                except OSError:
                    continue  # removed while we looked
                found.append((os.path.relpath(os.path.join(root, name), self.dir), st.st_size, st.st_mtime_ns))
        return sorted(found)

    def checkpoint_updated(self) -> bool:
        """True if checkpoint files were written, changed or removed since the state was last saved (or
        since this store was opened)."""
        return self._checkpoint_files() != self._snapshot

    is_checkpoint_updated = checkpoint_updated  # smdebug 1.0.x's name

    def record(self, training_run: int, step_seen: int, step_saved: Optional[int], mode_steps: Dict[ModeKeys, int]):
        entry = {
            "training-run": training_run,
            "latest-global-step-saved": step_saved,
            "latest-global-step-seen": step_seen,
            "latest-mode-step": {m.name: s for m, s in mode_steps.items()},
        }
        self.states = [s for s in self.states if not isinstance(s, dict) or s.get("training-run") != training_run]
        self.update_state(entry)

    def update_state(self, state) -> None:
        """Append ``state`` (JSON-able) to the saved states and write them; the checkpoint files as they
        are now are the new reference for :meth:`checkpoint_updated`."""
        self.states.append(state)
        os.makedirs(self.dir, exist_ok=True)
        # (never through a link planted at the file's name or its temporary name)
        write_file_atomic(os.path.join(self.dir, METADATA_FILENAME), json.dumps(self.states).encode())
        self._snapshot = self._checkpoint_files()
