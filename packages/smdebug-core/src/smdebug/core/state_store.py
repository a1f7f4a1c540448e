"""Step counters that survive a restarted (e.g. spot) training job.

When a checkpoint configuration exists (``CHECKPOINT_CONFIG_FILE_PATH``, default
``/opt/ml/input/config/checkpointconfig.json``, key ``LocalPath``), the hook keeps
``<LocalPath>/metadata.json``: one entry per training run with the latest global step seen and saved
and each mode's step. It is updated when the user's checkpoint files change, so after a restart from
a checkpoint the hook resumes numbering where that checkpoint was taken instead of starting again at
step 0 and overwriting saved steps.
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

    def latest(self) -> Optional[dict]:
        if not self.states:
            return None
        return max(self.states, key=lambda s: s.get("latest-global-step-seen", -1) or -1)

    def _checkpoint_files(self):
        try:
            entries = [e for e in os.scandir(self.dir) if e.is_file() and e.name != METADATA_FILENAME]
        except OSError:
            return None
        return sorted((e.name, e.stat().st_size) for e in entries)

    def checkpoint_updated(self) -> bool:
        now = self._checkpoint_files()
        if now != self._snapshot:
            self._snapshot = now
            return True
        return False

    def record(self, training_run: int, step_seen: int, step_saved: Optional[int], mode_steps: Dict[ModeKeys, int]):
        entry = {
            "training-run": training_run,
            "latest-global-step-saved": step_saved,
            "latest-global-step-seen": step_seen,
            "latest-mode-step": {m.name: s for m, s in mode_steps.items()},
        }
        self.states = [s for s in self.states if s.get("training-run") != training_run] + [entry]
        # (never through a link planted at the file's name or its temporary name)
        write_file_atomic(os.path.join(self.dir, METADATA_FILENAME), json.dumps(self.states).encode())
