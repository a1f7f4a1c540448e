"""Losses of an adversarial pair (a GAN's generator and discriminator), told by the targets the run saved.

A generator's loss asks the discriminator to call its samples real: its targets are one fixed value at every save
(the "real" label, 1 or a smoothed 0.9), while the discriminator's loss tells that same label from the other
("fake", 0): its targets hold both, in one call (``d_loss(cat(real, fake), cat(ones, zeros))``) or in calls with
one label each (``bce(D(real), ones) + bce(D(fake), zeros)``). Each player's loss rises as the other gains: a
healthy GAN's generator loss climbs while its discriminator learns and its discriminator loss gives back what it
had won as the generator improves, so the curve rules, which take a loss to be a fit to data that should fall,
read them as a loss that does not decrease or diverges (probe 15b F3). :func:`adversarial_losses` finds such
losses so that those rules leave them out, saying why.

The pattern, per shape of the scores the loss calls got (the discriminator's output): a call whose targets are one
value ``c`` at every save, and either another call whose targets are ``c`` and one other value, or ``c`` as the
one value of a second call and another value as that of a third. A supervised loss's targets are the data's
labels and vary; a loss with only two calls of one label each (positives, then unlabelled data as negatives) is
not taken for a pair.

Not told: one loss module called for every term (DCGAN's ``criterion`` for real, fake and the generator, three
calls a step): the hooks save the inputs of a loss's first call only, here the real samples' label alone. Two loss
modules, one per player, are told.
"""

from __future__ import annotations

import weakref
from collections import Counter
from dataclasses import dataclass
from typing import Dict, FrozenSet, List, Optional, Sequence, Tuple

import numpy as np

from smdebug.core import loss_inputs
from smdebug.rules.generic.ignored_targets import LOSS_OUTPUT, later_call_inputs, saved_shape
from smdebug.rules.generic.selection import value_at

#: saves of a call's targets read to tell its labels (spread over the run: the first, the last, and between)
SAVES_READ = 5


@dataclass(frozen=True)
class _Call:
    loss: str
    index: int
    #: the distinct target values over the saves read (None: more than two, labels of data)
    values: Optional[FrozenSet[float]]
    #: whether every save read held one value, the same at each
    constant: bool
    #: the scores' shape past the batch axis
    shape: Tuple[int, ...]

    def label(self) -> str:
        return self.loss if self.index == 0 else f"{self.loss} (call {self.index + 1})"


def adversarial_losses(trial) -> Dict[str, str]:
    """``{loss name: why it is one of an adversarial pair}`` for the losses of the run whose targets show the
    pattern of the module docstring ({} when none do, or the run does not save its losses' inputs)."""
    calls = _calls(trial)
    found: Dict[str, str] = {}
    for shape in {c.shape for c in calls}:
        group = [c for c in calls if c.shape == shape]
        members = _pair(group)
        if not members:
            continue
        targets = "; ".join(f"{c.label()}: {_described(c)}" for c in members)
        reason = (f"its targets ({targets}) are those of an adversarial pair: a loss trained toward one fixed label "
                  "while another tells that label from a second (a GAN's generator and discriminator); such losses "
                  "rise and fall as each player gains on the other, not as a model fits data, and the curve rules "
                  "do not judge them")
        for c in members:
            found.setdefault(c.loss, reason)
    return found


#: per trial: (its step count when its pairs were read, -1 once it had ended; the pairs), shared by the rules that
#: judge one trial (the four loss-curve rules each asked, reading the same targets four times)
_READ: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def run_pairs(trial) -> Dict[str, str]:
    """:func:`adversarial_losses` of ``trial``, read again as the run grows: each time its step count has doubled,
    and once it has ended (a few saves of each loss's targets each time)."""
    count = -1 if trial.loaded_all_steps else trial.step_count(show_incomplete_steps=True)
    last, pairs = _READ.get(trial, (None, {}))
    if last is None or (last != -1 and (count == -1 or count >= 2 * max(1, last))):
        pairs = adversarial_losses(trial)
        _READ[trial] = (count, pairs)
    return pairs


def adversarial_loss_of(name: str, pairs: Dict[str, str]) -> Optional[str]:
    """Why the loss tensor ``name`` (``<loss>_output_<i>``) belongs to an adversarial pair of ``pairs``, or None."""
    match = LOSS_OUTPUT.match(name)
    return pairs.get(match.group(1)) if match else None


def _pair(group: List[_Call]) -> List[_Call]:
    """The calls of ``group`` (scores of one shape) that make an adversarial pair, or []."""
    constants = [c for c in group if c.constant and c.values]
    if not constants:
        return []
    members = set()
    for mixed in (c for c in group if not c.constant and c.values is not None and len(c.values) == 2):
        fixed = [c for c in constants if c.values <= mixed.values]
        if fixed:
            members.update(fixed + [mixed])
    counts = Counter(next(iter(c.values)) for c in constants)
    if len(counts) >= 2 and max(counts.values()) >= 2:
        members.update(constants)
    return sorted(members, key=lambda c: (c.loss, c.index))


def _described(call: _Call) -> str:
    shown = " and ".join(f"{v:g}" for v in sorted(call.values))
    return f"always {shown}" if call.constant else shown


def _calls(trial) -> List[_Call]:
    records = loss_inputs.recorded_losses(trial) or []
    names = trial.tensor_names()
    found = []
    for record in records:
        if not record.targets:
            continue
        for index, (targets, scores) in enumerate(_call_names(record, names)):
            call = _read_call(trial, record.name, index, targets, scores)
            if call is not None:
                found.append(call)
    return found


def _call_names(record: loss_inputs.LossInputs, names: Sequence[str]) -> List[Tuple[str, str]]:
    """``[(targets, scores)]`` of each call of ``record`` in a step, as the hooks name them (the first call by
    the record's regexes; the ``i``-th after it ``<loss>_input_<2i+1>`` and ``<loss>_input_<2i>``)."""
    targets, scores = record.target_names(names), record.prediction_names(names)
    if len(targets) != 1 or len(scores) != 1:
        return []
    out = [(targets[0], scores[0])]
    if targets[0] != f"{record.name}_input_1":
        return out  # (named otherwise: later calls cannot be told)
    present = set(names)
    for i in range(1, 64):
        t, s = later_call_inputs(record, i)
        if t not in present or s not in present:
            break
        out.append((t, s))
    return out


def _read_call(trial, loss: str, index: int, targets: str, scores: str) -> Optional[_Call]:
    try:
        steps = trial.tensor(targets).steps()
    except Exception:  # noqa: BLE001 (a tensor the run does not have)
        return None
    if not steps:
        return None
    picks = sorted({steps[round(i * (len(steps) - 1) / max(1, SAVES_READ - 1))] for i in range(SAVES_READ)})
    values: set = set()
    constant = True
    shape: Optional[Tuple[int, ...]] = None
    for step in picks:
        y = value_at(trial, targets, step)
        if y is None or np.size(y) == 0:
            continue
        distinct = np.unique(np.asarray(y, dtype=np.float64))
        if not np.isfinite(distinct).all():
            return None
        constant = constant and distinct.size == 1
        values.update(float(v) for v in distinct[:3])
        if shape is None:
            # (its shape alone: the scores are as large as the model's output)
            saved = saved_shape(trial, scores, step)
            shape = saved[1:] if saved else None
    if shape is None or not values:
        return None
    constant = constant and len(values) == 1
    return _Call(loss, index, frozenset(values) if len(values) <= 2 else None, constant, shape)
