"""The hints a trial's "not saved" errors end with, for someone at a notebook: the names close to a
mistyped tensor name, and the steps at which a tensor was saved when asked for one at which it was not.

They are computed only when the message is shown (see ``smdebug.exceptions._Hinted``)."""

from __future__ import annotations

from typing import Callable, Sequence

from smdebug.core.modes import ModeKeys
from smdebug.core.names import close_names, step_runs

# A saved-steps hint shows this many runs of consecutive steps at each end, and elides the middle.
_RUNS_SHOWN = 4


def short_steps(steps: Sequence[int]) -> str:
    """``[0, 1, 2, 3, 10, 20]`` -> ``"0-3, 10, 20"``; a long list keeps its first and last runs."""
    runs = step_runs(steps)
    if len(runs) > 2 * _RUNS_SHOWN:
        runs = runs[:_RUNS_SHOWN] + ["..."] + runs[-_RUNS_SHOWN:]
    return ", ".join(runs) + (f" ({len(steps)} steps)" if "..." in runs else "")


def saved_steps_hint(tensor, mode) -> Callable[[], str]:
    """Where ``tensor`` was saved, in ``mode``'s steps, or in the other modes' if it has none in it."""
    mode = ModeKeys.GLOBAL if mode is None else mode

    def hint() -> str:
        mode_ = mode if isinstance(mode, ModeKeys) else ModeKeys[str(mode).upper()]
        steps = tensor.steps(mode_)
        if steps:
            return f"{tensor.name} was saved at {mode_.name} steps {short_steps(steps)}."
        others = [(m, tensor.steps(m)) for m in ModeKeys if m not in (mode_, ModeKeys.GLOBAL)]
        others = [f"{m.name} steps {short_steps(s)}" for m, s in others if s]
        if not others:
            return f"{tensor.name} has no saved step yet."
        return f"{tensor.name} has no {mode_.name} step; it was saved at {'; '.join(others)} (pass mode=...)."

    return hint


def close_names_hint(name: str, names: Callable[[], Sequence[str]]) -> Callable[[], str]:
    """"Did you mean ...?" with the names of the run close to ``name`` (else how many it has)."""

    def hint() -> str:
        known = list(names())
        close = close_names(name, known)
        if close:
            quoted = [repr(c) for c in close]
            return "Did you mean " + (", ".join(quoted[:-1]) + " or " if len(quoted) > 1 else "") + quoted[-1] + "?"
        return f"The run has {len(known)} tensors: trial.tensor_names() lists them."

    return hint
