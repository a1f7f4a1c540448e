"""When to save: ``SaveConfigMode`` is the schedule of one mode, ``SaveConfig`` maps modes to schedules.

Semantics (kept from the original so configurations mean the same thing): a mode step ``n`` is saved if
it is listed in ``save_steps``, or if ``start_step <= n < end_step`` and ``n % save_interval == 0``.
The interval is aligned to 0, not to ``start_step``, and ``end_step`` is exclusive.

Fixed on purpose: a zero or negative interval, negative start/end steps and non-integer ``save_steps``
are rejected at construction with a specific message (the original failed later, or divided by zero).
So are steps beyond int64. A hook (and the JSON configuration) also refuses a schedule whose ``start_step``
is at or after a positive ``end_step`` (:meth:`SaveConfig.check`): it could never save, and the original
accepted it without a word; ``end_step=0`` still switches the interval off. Schedules read from a run's
collection files are taken as written (:meth:`SaveConfigMode.from_dict`).
"""

from __future__ import annotations

import bisect
import itertools
import json
from typing import Any, Dict, Iterable, Optional

from smdebug.core.modes import ModeKeys
from smdebug.core.config_keys import check_known_keys
from smdebug.core.names import shown as _shown
from smdebug.exceptions import SMDebugValueError

DEFAULT_SAVE_INTERVAL = 500
_SCM_KEYS = ("save_interval", "start_step", "end_step", "save_steps")


#: the largest step a run can hold (steps are 64-bit integers in records and indexes)
MAX_STEP = (1 << 63) - 1


def _as_int(name: str, value, *, allow_none: bool = False, minimum: int = 0,
            maximum: Optional[int] = None) -> Optional[int]:
    if value is None:
        if allow_none:
            return None
        raise SMDebugValueError(f"{name} must be an integer, got None")
    if isinstance(value, bool):
        raise SMDebugValueError(f"{name} must be an integer, got a bool ({value!r})")
    try:
        if isinstance(value, str):
            value = value.strip()
            if allow_none and value.lower() in ("", "none", "null"):
                return None
        as_int = int(value)
        if isinstance(value, float) and value != as_int:
            raise ValueError
    except (TypeError, ValueError, OverflowError):  # OverflowError: int() of an infinite float
        raise SMDebugValueError(f"{name} must be an integer, got {_shown(value)}") from None
    if as_int < minimum:
        raise SMDebugValueError(f"{name} must be >= {minimum}, got {as_int}")
    if maximum is not None and as_int > maximum:
        shown = str(as_int) if as_int < 10 ** 30 else f"a {len(str(as_int))}-digit number"
        raise SMDebugValueError(f"{name} must be at most {maximum} (the largest step a run can hold), got {shown}")
    return as_int


#: the most steps ``save_steps`` may list
MAX_SAVE_STEPS = 100_000

def _as_steps(value, maximum: Optional[int] = None) -> list:
    if value is None:
        return []
    if isinstance(value, str):
        value = [v for v in value.split(",") if v.strip()]
    if isinstance(value, (int,)) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, Iterable):
        raise SMDebugValueError(f"save_steps must be a list of integers, got {_shown(value)}")
    # (a configuration file of a million listed steps took 3 GB before training began; a schedule that long
    # is an interval)
    steps = list(itertools.islice(value, MAX_SAVE_STEPS + 1))
    if len(steps) > MAX_SAVE_STEPS:
        raise SMDebugValueError(f"save_steps lists more than {MAX_SAVE_STEPS:,} steps: give a save_interval "
                                "(with start_step and end_step) instead")
    return sorted({_as_int("save_steps entry", v, maximum=maximum) for v in steps})


def _json_value(text, what: str):
    """``json.loads(text)`` with a specific error for text that is not JSON."""
    try:
        return json.loads(text)
    except (TypeError, ValueError, RecursionError) as e:
        raise SMDebugValueError(f"Invalid JSON for a {what}: {e}"[:500]) from None


class _Changes:
    """Counts every change to any schedule, so a hook can trust a schedule it looked at while this
    count stays the same (see :func:`schedule_changes`)."""

    count = 0


def schedule_changes() -> int:
    return _Changes.count


def schedule_changed() -> None:
    """Note a change no SaveConfigMode saw: a collection given another schedule object (a hook looks at
    its collections' schedules again, and checks them, when this count moves)."""
    _Changes.count += 1


class SaveConfigMode:
    """Save schedule for one mode."""

    __slots__ = ("save_interval", "start_step", "end_step", "save_steps", "_save_steps_set")

    def __setattr__(self, name, value):
        _Changes.count += 1
        object.__setattr__(self, name, value)

    def __init__(self, save_interval=None, start_step=None, end_step=None, save_steps=None):
        self._set(save_interval, start_step, end_step, save_steps, strict=True)

    def _set(self, save_interval, start_step, end_step, save_steps, strict: bool) -> None:
        """``strict`` (a schedule a user gives): steps past int64 are refused too; a schedule read from a
        run's collection file is taken as written (smdebug 1.0.x accepted them, and its runs must stay
        readable)."""
        top = MAX_STEP if strict else None
        self.save_interval = _as_int(
            "save_interval", DEFAULT_SAVE_INTERVAL if save_interval is None else save_interval, minimum=1
        )
        self.start_step = _as_int("start_step", 0 if start_step is None else start_step, maximum=top)
        self.end_step = _as_int("end_step", end_step, allow_none=True, maximum=top)
        self.save_steps = _as_steps(save_steps, maximum=top)
        self._save_steps_set = frozenset(self.save_steps)

    def problem(self) -> Optional[str]:
        """Why a hook refuses this schedule, or None: a start at or after a positive end, so that the
        interval could never save (smdebug 1.0.x took it without a word and saved nothing).
        ``end_step=0`` is the documented way to switch the interval off and stays accepted. (Checked by
        the hook, not here: SaveConfigMode itself accepts what smdebug 1.0.x accepted.)"""
        if self.end_step and self.start_step >= self.end_step:
            return (f"start_step ({self.start_step}) must be before end_step ({self.end_step}, exclusive): no "
                    "step would ever be saved by the interval. Use end_step=0 to switch the interval off, or "
                    "save_steps for single steps")
        return None

    def should_save_step(self, step_num: int) -> bool:
        if step_num in self._save_steps_set:
            return True
        if step_num < self.start_step:
            return False
        if self.end_step is not None and step_num >= self.end_step:
            return False
        return step_num % self.save_interval == 0

    def next_save_step(self, step_num: int) -> Optional[int]:
        """The first step from ``step_num`` on that :meth:`should_save_step` accepts (None: never again).
        Lets a hook skip the schedule entirely on the steps in between."""
        candidates = []
        i = bisect.bisect_left(self.save_steps, step_num)
        if i < len(self.save_steps):
            candidates.append(self.save_steps[i])
        first = max(step_num, self.start_step)
        by_interval = -(-first // self.save_interval) * self.save_interval  # the next multiple
        if self.end_step is None or by_interval < self.end_step:
            candidates.append(by_interval)
        return min(candidates) if candidates else None

    def to_json_dict(self) -> Dict[str, Any]:
        return {
            "save_interval": self.save_interval,
            "save_steps": list(self.save_steps),
            "start_step": self.start_step,
            "end_step": self.end_step,
        }

    @classmethod
    def from_dict(cls, params: Optional[dict], source: Optional[str] = None) -> Optional["SaveConfigMode"]:
        """``params`` as :meth:`to_json_dict` writes them. ``source``: the run's file they were read from,
        where an unknown key is warned (the historical "when_nan" taken silently) so old and newer files
        still load; given in code, an unknown key (a misspelt ``save_intervall``) is SMDebugValueError."""
        if params is None:
            return None
        if isinstance(params, SaveConfigMode):
            return params
        if not isinstance(params, dict):
            raise SMDebugValueError(f"A save config for one mode must be a dict, got {_shown(params)}")
        check_known_keys(params, _SCM_KEYS, "a save config", source, ignored=("when_nan",))
        # The schedules smdebug 1.0.x accepted and this version refuses from users (see ``_set``) are taken:
        # a run's collection file is read with this.
        scm = cls.__new__(cls)
        scm._set(*(params.get(k) for k in ("save_interval", "start_step", "end_step", "save_steps")), strict=False)
        return scm

    def __eq__(self, other):
        if not isinstance(other, SaveConfigMode):
            return NotImplemented
        return self.to_json_dict() == other.to_json_dict()

    def __hash__(self):
        return hash((self.save_interval, self.start_step, self.end_step, tuple(self.save_steps)))

    def __repr__(self):
        return (
            f"<SaveConfigMode save_interval={self.save_interval} start_step={self.start_step} "
            f"end_step={self.end_step} save_steps={self.save_steps}>"
        )


class SaveConfig:
    """Save schedule for every mode.

    ``SaveConfig(save_interval=10)`` applies the same schedule to all modes;
    ``SaveConfig(mode_save_configs={ModeKeys.TRAIN: SaveConfigMode(...)})`` sets modes one by one (modes
    left out are filled from the hook's configuration when the hook prepares its collections).
    """

    def __init__(
        self,
        mode_save_configs: Optional[Dict[Any, Optional[SaveConfigMode]]] = None,
        save_interval=None,
        start_step=None,
        end_step=None,
        save_steps=None,
    ):
        if mode_save_configs is None:
            scm = SaveConfigMode(save_interval, start_step, end_step, save_steps)
            self.mode_save_configs = {mode: scm for mode in ModeKeys}
        else:
            if not isinstance(mode_save_configs, dict):
                raise SMDebugValueError("mode_save_configs must be a dict of mode -> SaveConfigMode")
            if any(v is not None for v in (save_interval, start_step, end_step, save_steps)):
                raise SMDebugValueError(
                    "Pass either mode_save_configs or save_interval/start_step/end_step/save_steps, not both"
                )
            self.mode_save_configs = {mode: None for mode in ModeKeys}
            for key, value in mode_save_configs.items():
                mode = ModeKeys.parse(key)
                if value is not None and not isinstance(value, SaveConfigMode):
                    value = SaveConfigMode.from_dict(value)
                self.mode_save_configs[mode] = value

    def check(self) -> None:
        """SMDebugValueError if a mode's schedule is one a hook refuses (:meth:`problem`)."""
        problem = self.problem()
        if problem is not None:
            raise SMDebugValueError(problem)

    def problem(self, checked: Optional[Dict[int, Optional[str]]] = None) -> Optional[str]:
        """Why a hook refuses this schedule (``"mode TRAIN: ..."``), or None: a mode's schedule that could
        never save (:meth:`SaveConfigMode.problem`), steps beyond int64 (per-mode dicts are read leniently,
        as collection files are). The hook asks this of its own schedule and of each included collection's.
        ``checked``: answers already worked out, by ``id`` of the mode's schedule (collections share the
        hook's schedules for the modes they do not set, so most are looked at once per preparation)."""
        for mode, scm in self.mode_save_configs.items():
            if scm is None:
                continue
            if checked is not None and id(scm) in checked:
                problem = checked[id(scm)]
            else:
                try:
                    SaveConfigMode(scm.save_interval, scm.start_step, scm.end_step, scm.save_steps)
                    problem = scm.problem()
                except SMDebugValueError as e:
                    problem = str(e)
                if checked is not None:
                    checked[id(scm)] = problem
            if problem is not None:
                return f"mode {mode.name}: {problem}"
        return None

    def get_save_config(self, mode) -> Optional[SaveConfigMode]:
        return self.mode_save_configs[ModeKeys.parse(mode)]

    def set_save_config(self, mode, save_config_mode: Optional[SaveConfigMode]) -> None:
        self.mode_save_configs[ModeKeys.parse(mode)] = save_config_mode
        _Changes.count += 1

    def should_save_step(self, mode, step_num: int) -> bool:
        scm = self.mode_save_configs[mode]
        return scm is not None and scm.should_save_step(step_num)

    def merge_default(self, default: "SaveConfig") -> None:
        """Fill modes left as None from ``default`` (used when a hook prepares its collections)."""
        for mode in ModeKeys:
            if self.mode_save_configs.get(mode) is None:
                self.mode_save_configs[mode] = default.mode_save_configs.get(mode) or SaveConfigMode()
                _Changes.count += 1

    def to_json_dict(self) -> Dict[str, Optional[dict]]:
        return {
            mode.name: (scm.to_json_dict() if scm is not None else None)
            for mode, scm in self.mode_save_configs.items()
        }

    @classmethod
    def tapered(cls, dense_steps: int = 10, interval: int = DEFAULT_SAVE_INTERVAL) -> "SaveConfig":
        """A schedule for runs of any length, the same for every mode: every step below ``dense_steps``, then
        ``dense_steps`` doubled again and again while below ``interval``, then every ``interval`` steps.

        With the defaults (10, 500): 0-9, 10, 20, 40, 80, 160, 320, 500, 1000, 1500... A 30-step run saves 12
        steps, a 200-step run 15, a 3000-step run 21: short runs get enough steps for rules that compare
        steps, and a long run saves no more often than the classic every-500-steps default.
        """
        dense = _as_int("dense_steps", dense_steps, minimum=1)
        interval = _as_int("interval", interval, minimum=1)
        steps = list(range(dense))
        n = dense
        while n < interval:
            steps.append(n)
            n *= 2
        return cls(save_interval=interval, save_steps=steps)

    @classmethod
    def from_dict(cls, params, source: Optional[str] = None) -> "SaveConfig":
        """``source``: the run's file ``params`` were read from (see :meth:`SaveConfigMode.from_dict`)."""
        if params is None:
            return cls()
        if not isinstance(params, dict):
            raise SMDebugValueError(f"A save config must be a dict of mode -> schedule, got {_shown(params)}")
        if params and all(k in _SCM_KEYS for k in params):
            # A flat schedule given where a per-mode one was expected: apply it to every mode.
            return cls(**{k: params.get(k) for k in _SCM_KEYS})
        return cls(mode_save_configs={ModeKeys.parse(k): SaveConfigMode.from_dict(v, source)
                                      for k, v in params.items()})

    def to_json(self) -> str:
        """The JSON text of :meth:`to_json_dict` (what collection files store)."""
        return json.dumps(self.to_json_dict())

    @classmethod
    def from_json(cls, text: str) -> "SaveConfig":
        """The inverse of :meth:`to_json`."""
        return cls.from_dict(_json_value(text, "save config"))

    @classmethod
    def parse(cls, obj) -> "SaveConfig":
        if obj is None:
            return cls()
        if isinstance(obj, SaveConfig):
            return obj
        if isinstance(obj, SaveConfigMode):
            return cls(mode_save_configs={mode: obj for mode in ModeKeys})
        if isinstance(obj, dict):
            return cls.from_dict(obj)
        raise SMDebugValueError(
            f"save_config must be a SaveConfig, SaveConfigMode or dict of mode -> SaveConfigMode, got {_shown(obj)}"
        )

    def __eq__(self, other):
        if not isinstance(other, SaveConfig):
            return NotImplemented
        return self.to_json_dict() == other.to_json_dict()

    def __repr__(self):
        inner = ", ".join(f"{m.name}: {scm!r}" for m, scm in self.mode_save_configs.items())
        return f"<SaveConfig {inner}>"
