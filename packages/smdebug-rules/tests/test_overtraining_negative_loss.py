"""Overtraining on a loss that takes negative values (probe 16a F1): PyTorch's PoissonNLLLoss (``full=False``) and
GaussianNLLLoss leave out a constant term and are negative on a good fit. The validation loss levels off (-2.806 ->
-2.808) while the training loss falls -3.19 -> -3.44: 8% of its value, but any fall of a negative loss passed the
test "fell by train_progress_percent (90%) of its value", so a healthy Poisson regression read as overtraining.
That test is a share of the loss's value and is not made for a loss that is not positive: the verdict says so. The
same curves shifted to positive values (``full=True``: the constant added) are judged as before."""

from __future__ import annotations

import numpy as np

from smdebug.rules.generic import Overtraining
from smdebug.rules.rule_invoker import invoke_rule

from test_progress_rules import evaluations, run

N = 40
TRAINING = list(-1.0 - 2.44 * (1 - np.exp(-np.arange(N) / 6)))  # -1 -> -3.44, still creeping down
VALIDATION = list(-1.0 - 1.806 * (1 - np.exp(-np.arange(N) / 2)))  # levels off at -2.806 by evaluation ~10


def test_a_negative_loss_is_not_said_to_have_fallen_by_90_percent(tmp_path):
    rule = Overtraining(run(tmp_path / "neg", evaluations(TRAINING, VALIDATION)))
    assert invoke_rule(rule) == []
    assert "not positive there" in (rule.evaluation.caveat or ""), rule.evaluation.caveat


def test_the_same_curves_made_positive_are_judged_as_before(tmp_path):
    # (+3.5: the constant term a full likelihood adds) the training loss falls 2.5 -> 0.06, by 98%: it fires
    shifted = Overtraining(run(tmp_path / "pos", evaluations([t + 3.5 for t in TRAINING],
                                                             [v + 3.5 for v in VALIDATION])))
    assert invoke_rule(shifted) != []
