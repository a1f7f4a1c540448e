"""Padding that a per-token classification loss counts as targets.

Sequences of different lengths are batched by padding them to one length with a padding id. A language model's
or a tagger's loss must leave the padded positions out (PyTorch's ``CrossEntropyLoss(ignore_index=pad)``, labels
set to -100 there); left at its default (-100) while the targets hold the padding id, the loss counts every
padded position as a token to predict. Nothing fails: the padding is the easiest token there is, so the loss
looks excellent while the real tokens get a diluted share of the gradient (probe 15b F4: 70% of the targets
padding, loss 0.49, real-token cross-entropy worse than the fixed run's).

Two facts of the saved run show it, with no record of the loss's ``ignore_index``:

* the targets, one row per sequence, end (or start) in runs of one id in most rows, runs of several lengths,
  and that id (almost) never occurs elsewhere: padding (:func:`padding_id`). Targets flattened to one axis
  (``logits.view(-1, V)``, ``targets.view(-1)``) are cut back into rows by the model's input's row count;
* the loss value the hook saved with those inputs is their cross-entropy averaged over every target that is a
  class (the padding included), and not the average over the targets without the padding (:func:`counts_padding`).
  A loss with class weights, label smoothing or another ``ignore_index`` matches neither: nothing is said.
  A causal language model that computes its own loss (a Hugging Face ``...ForCausalLM`` given ``labels=``) gets
  scores and targets of one length and shifts them by one inside: that alignment is tried too.
"""

from __future__ import annotations

from typing import NamedTuple, Optional, Tuple

import numpy as np

#: rows of targets needed to tell padding from chance
MIN_ROWS = 8
#: the share of rows that must end (or start) in a run of the padding id
MIN_PADDED_SHARE = 0.5
#: a padded row's run is at least this long (one trailing id is an end-of-sequence token, not padding)
MIN_RUN = 2
#: the padding id may appear this share of the other positions at most (padding is never inside a sequence)
MAX_STRAY_SHARE = 0.01
#: a recomputed average loss matches the saved one within this share of it (float32 sums of many terms)
MATCH = 1e-4
#: the two candidate averages must differ by this many times the tolerance for the match to mean anything
APART = 10.0
#: the most score values recomputed at one save (a large vocabulary's logits: a few such saves are enough)
MAX_SCORES = 20_000_000


class Padding(NamedTuple):
    id: int
    side: str  # "end" or "start"
    padded_rows: int
    rows: int
    share: float  # of the targets that are classes


def padding_id(rows: np.ndarray) -> Optional[Padding]:
    """The padding id of integer targets ``rows`` (N, T), if they show one (see the module's docstring)."""
    if rows.ndim != 2 or rows.shape[0] < MIN_ROWS or rows.shape[1] < 2 * MIN_RUN or rows.dtype.kind not in "iu":
        return None
    n, t = rows.shape
    for side in ("end", "start"):
        ordered = rows[:, ::-1] if side == "end" else rows
        values, counts = np.unique(ordered[:, 0], return_counts=True)
        candidate = values[np.argmax(counts)]
        if candidate < 0:
            continue  # (already ignored by the loss's default ignore_index)
        same = ordered == candidate
        # the length of each row's edge run: the first position that is not the candidate (all: the whole row)
        run = np.where(same.all(axis=1), t, np.argmin(same, axis=1))
        padded = run >= MIN_RUN
        if padded.sum() < MIN_PADDED_SHARE * n or len(np.unique(run[padded])) < 2:
            continue
        inside = n * t - int(run.sum())
        if inside == 0 or int(same.sum()) - int(run.sum()) > MAX_STRAY_SHARE * inside:
            continue
        classes = rows >= 0
        share = float(np.count_nonzero(rows == candidate)) / max(1, int(classes.sum()))
        return Padding(int(candidate), side, int(padded.sum()), n, share)
    return None


def target_rows(targets: np.ndarray, model_rows: Optional[int]) -> Optional[np.ndarray]:
    """``targets`` as one row per sequence: as they are when 2-D; cut into ``model_rows`` rows when flat."""
    if targets.ndim == 2:
        return targets
    if targets.ndim == 1 and model_rows and model_rows >= MIN_ROWS and targets.size % model_rows == 0 \
            and targets.size > model_rows:
        return targets.reshape(model_rows, -1)
    return None


def token_losses(scores: np.ndarray, targets: np.ndarray, axis: int, log_probabilities: bool) -> Optional[np.ndarray]:
    """Each target's negative log-likelihood under ``scores`` (logits, or log-probabilities), with the classes
    along ``axis``; NaN where the target is no class (negative, or beyond the classes). None when too large."""
    if scores.size > MAX_SCORES or scores.dtype.kind != "f" or not np.all(np.isfinite(scores)):
        return None
    s = np.moveaxis(scores.astype(np.float64), axis, -1)
    if s.shape[:-1] != targets.shape:
        return None
    if not log_probabilities:
        top = s.max(axis=-1, keepdims=True)
        s = s - top - np.log(np.exp(s - top).sum(axis=-1, keepdims=True))
    classes = s.shape[-1]
    valid = (targets >= 0) & (targets < classes)
    picked = np.take_along_axis(s, np.where(valid, targets, 0)[..., None].astype(np.int64), axis=-1)[..., 0]
    return np.where(valid, -picked, np.nan)


def counts_padding(losses: np.ndarray, targets: np.ndarray, pad: int, saved: float,
                   counts: Tuple[int, ...] = ()) -> Optional[bool]:
    """Whether the saved loss value is the sum of the per-target ``losses`` with the padding (True) or without
    it (False), divided by one of the counts it may have been averaged over -- the targets with the padding,
    those without it, any of ``counts`` (a Hugging Face model divides by the number of labels in the batch
    before its shift), or 1 (a sum); None when no such quotient, or quotients of both sums, match it."""
    valid = ~np.isnan(losses)
    kept = valid & (targets != pad)
    if not kept.any() or kept.sum() == valid.sum():
        return None
    with_padding, without = float(losses[valid].sum()), float(losses[kept].sum())
    divisors = {1, int(valid.sum()), int(kept.sum()), *counts}
    tolerance = MATCH * max(1.0, abs(saved))
    matches = {counted for counted, total in ((True, with_padding), (False, without)) for d in divisors
               if d > 0 and abs(total / d - saved) <= tolerance}
    # (the two sums this close make any match meaningless: the padding's share of the loss is within rounding)
    if len(matches) != 1 or abs(with_padding - without) < APART * tolerance * max(divisors):
        return None
    return matches.pop()


def loss_with_padding(scores: np.ndarray, targets: np.ndarray, axis: int, log_probabilities: bool, pad: int,
                      saved: float) -> Optional[Tuple[bool, float]]:
    """(whether the ``saved`` loss counted the ``pad`` targets, the average loss without them) for scores and
    targets as the loss got them -- or shifted by one position, as a causal language model's own loss takes them
    (scores ``(N, T, C)`` against targets ``(N, T)``); None when neither alignment explains the saved value."""
    layouts = [(scores, targets)]
    if scores.ndim == 3 and targets.ndim == 2 and axis in (-1, 2) and scores.shape[:2] == targets.shape:
        layouts.append((scores[:, :-1], targets[:, 1:]))
    given = (targets >= 0) & (targets < scores.shape[axis])  # (before any shift: what a model may divide by)
    counts = (int(given.sum()), int((given & (targets != pad)).sum()))
    for s, t in layouts:
        losses = token_losses(s, t, axis, log_probabilities)
        counted = counts_padding(losses, t, pad, saved, counts) if losses is not None else None
        if counted is not None:
            kept = ~np.isnan(losses) & (t != pad)
            return counted, float(np.mean(losses[kept]))
    return None
