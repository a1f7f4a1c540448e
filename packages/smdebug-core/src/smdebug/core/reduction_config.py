"""What to save of a tensor: its raw value, reductions of it (min, mean, norms...), and/or its shape."""

from __future__ import annotations

import json
from typing import Iterable, List, Optional

from smdebug.core.config_keys import check_known_keys
from smdebug.exceptions import SMDebugValueError

ALLOWED_REDUCTIONS = ("min", "max", "mean", "std", "variance", "sum", "prod", "median")
ALLOWED_NORMS = ("l1", "l2")


#: the keys of a reduction config as dict (what :meth:`ReductionConfig.to_json_dict` writes)
REDUCTION_CONFIG_KEYS = ("reductions", "save_raw_tensor", "save_shape")
def _names(kind: str, values, allowed) -> List[str]:
    if values is None:
        return []
    if isinstance(values, str):
        values = [v.strip() for v in values.split(",") if v.strip()]
    out = []
    for v in values:
        if v not in allowed:
            raise SMDebugValueError(f"Unknown {kind} {v!r}; allowed: {', '.join(allowed)}")
        if v not in out:
            out.append(v)
    return out


class ReductionConfig:
    """Reductions saved instead of (or in addition to) the raw tensor.

    All reductions are computed with one definition, whatever the framework (see
    ``smdebug.core.reductions``): std/variance are population statistics (ddof=0) and norms are vector
    norms of the flattened tensor. ``median`` is accepted (the original documented but rejected it);
    runs that use it cannot be opened by smdebug 1.0.x, which does not know the name.
    """

    def __init__(
        self,
        reductions: Optional[Iterable[str]] = None,
        abs_reductions: Optional[Iterable[str]] = None,
        norms: Optional[Iterable[str]] = None,
        abs_norms: Optional[Iterable[str]] = None,
        save_raw_tensor: bool = False,
        save_shape: bool = False,
    ):
        self.reductions = _names("reduction", reductions, ALLOWED_REDUCTIONS)
        self.abs_reductions = _names("reduction", abs_reductions, ALLOWED_REDUCTIONS)
        self.norms = _names("norm", norms, ALLOWED_NORMS)
        self.abs_norms = _names("norm", abs_norms, ALLOWED_NORMS)
        if not isinstance(save_raw_tensor, bool) or not isinstance(save_shape, bool):
            raise SMDebugValueError("save_raw_tensor and save_shape must be booleans")
        self.save_raw_tensor = save_raw_tensor
        self.save_shape = save_shape

    @property
    def has_reductions(self) -> bool:
        return bool(self.reductions or self.abs_reductions or self.norms or self.abs_norms)

    def reduction_ops(self):
        """(op name, abs) pairs in the order they are written: reductions, norms, abs reductions, abs norms."""
        ops = [(r, False) for r in self.reductions] + [(n, False) for n in self.norms]
        ops += [(r, True) for r in self.abs_reductions] + [(n, True) for n in self.abs_norms]
        return ops

    def reductions_csv(self) -> str:
        tokens = list(self.reductions) + [f"{n}_norm" for n in self.norms]
        tokens += [f"abs_{r}" for r in self.abs_reductions] + [f"abs_{n}_norm" for n in self.abs_norms]
        return ",".join(tokens)

    def to_json_dict(self) -> dict:
        return {
            "save_raw_tensor": self.save_raw_tensor,
            "reductions": self.reductions_csv(),
            "save_shape": self.save_shape,
        }

    def to_json(self) -> str:
        """The JSON text of :meth:`to_json_dict` (what collection files store)."""
        return json.dumps(self.to_json_dict())

    @classmethod
    def from_json(cls, text: str) -> Optional["ReductionConfig"]:
        """The inverse of :meth:`to_json` (``"null"`` gives None)."""
        from smdebug.core.save_config import _json_value

        return cls.from_dict(_json_value(text, "reduction config"))

    @classmethod
    def from_csv(cls, csv: str, save_raw_tensor=False, save_shape=False) -> "ReductionConfig":
        if csv is not None and not isinstance(csv, str):
            # (a list from a hand-written collections or hook file failed as "'list' object has no attribute
            # 'split'", which names nothing the file holds)
            raise SMDebugValueError(f"reductions must be a comma-separated string such as \"min,max,l2_norm\", "
                                    f"got {type(csv).__name__} {str(csv)[:100]}")
        reductions, abs_reductions, norms, abs_norms = [], [], [], []
        for token in (t.strip() for t in (csv or "").split(",")):
            if not token:
                continue
            is_abs = token.startswith("abs_")
            name = token[4:] if is_abs else token
            if name.endswith("_norm"):
                (abs_norms if is_abs else norms).append(name[: -len("_norm")])
            else:
                (abs_reductions if is_abs else reductions).append(name)
        return cls(reductions, abs_reductions, norms, abs_norms, save_raw_tensor, save_shape)

    @classmethod
    def from_dict(cls, params: Optional[dict], source: Optional[str] = None) -> Optional["ReductionConfig"]:
        """``params`` as :meth:`to_json_dict` writes them; ``source``: the run's file they were read from (an
        unknown key is then warned, not refused: see :func:`check_known_keys`)."""
        if params is None:
            return None
        if isinstance(params, ReductionConfig):
            return params
        if not isinstance(params, dict):
            raise SMDebugValueError(f"A reduction config must be a dict, got {params!r}")
        check_known_keys(params, REDUCTION_CONFIG_KEYS, "a reduction config", source)
        return cls.from_csv(
            params.get("reductions", ""),
            save_raw_tensor=_as_bool(params.get("save_raw_tensor", False), "save_raw_tensor"),
            save_shape=_as_bool(params.get("save_shape", False), "save_shape"),
        )

    def __eq__(self, other):
        if not isinstance(other, ReductionConfig):
            return NotImplemented
        return self.to_json_dict() == other.to_json_dict()

    def __repr__(self):
        return (
            f"<ReductionConfig reductions={self.reductions} abs_reductions={self.abs_reductions} "
            f"norms={self.norms} abs_norms={self.abs_norms} save_raw_tensor={self.save_raw_tensor} "
            f"save_shape={self.save_shape}>"
        )


def _as_bool(value, name: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    if value in (0, 1):
        return bool(value)
    raise SMDebugValueError(f"{name} must be a boolean (true/false), got {value!r}")
