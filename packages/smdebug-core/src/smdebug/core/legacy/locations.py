"""smdebug 1.0.x's location classes of ``smdebug.core.locations`` (re-exported there): where a step's
event and index files live, built on the project's own naming functions."""

from __future__ import annotations

import os
import re
from typing import Optional

from smdebug.core.locations import (
    EVENTS_DIR,
    INDEX_DIR,
    INDEX_STEPS_PER_FOLDER,
    event_file_name,
    index_file_name,
    parse_step_file_name,
    step_str,
)
from smdebug.core.storage.base import as_path_str

STEP_NUMBER_FORMATTING_LENGTH = "012"


def _join(prefix, key: str) -> str:
    prefix = as_path_str(prefix) if prefix else ""
    return os.path.join(prefix, key) if prefix else key


class TensorLocation:
    """Where one tensor's record is (an index entry)."""

    def __init__(self, tname, mode, mode_step, event_file_name, start_idx, length, worker):
        self.tensorname = tname
        self.mode = mode
        self.mode_step = int(mode_step)
        self.event_file_name = event_file_name
        self.start_idx = start_idx
        self.length = length
        self.worker = worker

    def to_dict(self) -> dict:
        return {"tensorname": self.tensorname, "start_idx": self.start_idx, "length": self.length}


class TensorShape:
    """A shape entry of an index file."""

    def __init__(self, name, mode, mode_step, shape, original_name=None):
        self.name = name
        self.original_name = original_name if original_name is not None else name
        self.mode = mode
        self.mode_step = mode_step
        self.shape = tuple(shape)

    def to_dict(self) -> dict:
        return {"tensorname": self.name, "originalname": self.original_name, "shape": list(self.shape)}


class EventFileLocation:
    def __init__(self, step_num, worker_name):
        self.step_num = int(step_num)
        self.worker_name = worker_name
        self.type = None

    def get_step_num_str(self) -> str:
        return step_str(self.step_num)

    def get_filename(self) -> str:
        return os.path.basename(event_file_name(self.step_num, self.worker_name))

    @classmethod
    def match_regex(cls, s):
        return cls.load_filename(s, print_error=False)

    @classmethod
    def load_filename(cls, s, print_error=True):
        m = re.search(r"(\d+)_(.+)\.tfevents$", os.path.basename(as_path_str(s)))
        if m is None:
            return None
        step, worker = parse_step_file_name(os.path.basename(as_path_str(s)))
        return cls(step_num=step, worker_name=worker)


class TensorFileLocation(EventFileLocation):
    """``<trial>/events/<STEP12>/<STEP12>_<worker>.tfevents``."""

    def __init__(self, step_num, worker_name):
        super().__init__(step_num, worker_name)
        self.type = EVENTS_DIR

    @staticmethod
    def get_dir(trial_dir) -> str:
        return _join(trial_dir, EVENTS_DIR)

    def get_file_location(self, trial_dir="") -> str:
        return _join(trial_dir, event_file_name(self.step_num, self.worker_name))

    @classmethod
    def get_step_dirs(cls, trial_dir):
        folder = cls.get_dir(trial_dir)
        return [e.name for e in os.scandir(folder) if e.is_dir()] if os.path.isdir(folder) else []

    @classmethod
    def get_step_dir_path(cls, trial_dir, step_num) -> str:
        return os.path.join(cls.get_dir(trial_dir), step_str(int(step_num)))


class TensorboardFileLocation(EventFileLocation):
    """``<base>/<MODE>/<STEP12>_<worker>.tfevents`` (1.0.x's TensorBoard layout)."""

    def __init__(self, step_num, worker_name, mode=None):
        super().__init__(step_num, worker_name)
        self.mode = mode
        self.type = "tensorboard"

    def get_file_location(self, base_dir="") -> str:
        return os.path.join(base_dir or self.type, self.mode.name, self.get_filename())


class IndexFileLocationUtils:
    """``<trial>/index/<STEP//1000 as 9 digits>/<STEP12>_<worker>.json``."""

    MAX_INDEX_FILE_NUM_IN_INDEX_PREFIX = INDEX_STEPS_PER_FOLDER

    @staticmethod
    def get_index_prefix_for_step(step_num) -> str:
        return format(int(step_num) // INDEX_STEPS_PER_FOLDER, "09")

    @staticmethod
    def next_index_prefix_for_step(step_num) -> str:
        return format(int(step_num) // INDEX_STEPS_PER_FOLDER + 1, "09")

    @staticmethod
    def get_index_key_for_step(trial_prefix, step_num, worker_name) -> str:
        return _join(trial_prefix, index_file_name(int(step_num), worker_name))

    _get_index_key = get_index_key_for_step

    @staticmethod
    def parse_step_from_index_file_name(index_file_name) -> int:
        return parse_step_file_name(as_path_str(index_file_name))[0]

    get_step_from_idx_filename = parse_step_from_index_file_name

    @staticmethod
    def get_index_path(path) -> str:
        return _join(path, INDEX_DIR)

    @staticmethod
    def get_prefix_from_index_file(index_file) -> Optional[str]:
        """The run's path in front of ``/index/`` (``s3://b/run/index/...`` -> ``s3://b/run``)."""
        m = re.match(r"(.+)/index/.+$", as_path_str(index_file))
        return m.group(1) if m else None
