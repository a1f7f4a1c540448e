"""Overfit on a finished run whose validation loss rose early and then fell far below that early best: a
transient, not training past the best model. The curves are probe 10's Keras run (raw features into a first
BatchNormalization: validation uses the moving statistics, which lag behind features in the hundreds for the
first epochs): "median validation loss 11.15 at its best -> 12.76" fired on a run whose validation loss ended at
0.62, its lowest. (A run followed while it trains cannot know what comes next and is judged as before.) A model
that memorises its training set never comes back below its best and still fires."""

from __future__ import annotations

import numpy as np

from smdebug.rules.generic import Overfit
from smdebug.rules.rule_invoker import invoke_rule

from test_progress_rules import evaluations, run

# validation loss per epoch (the bump: epochs 2-5), and the training loss falling meanwhile
VALIDATION = [26.06, 2.22, 11.15, 14.73, 12.76, 9.82, 7.79, 6.52, 5.52, 4.63, 3.86, 3.21, 2.69, 2.29, 1.96, 1.69,
              1.47, 1.29, 1.14, 1.02, 0.93, 0.86, 0.80, 0.75, 0.71, 0.68, 0.66, 0.64, 0.63, 0.62]
TRAINING = list(np.geomspace(0.90, 0.45, 6)) + list(np.geomspace(0.44, 0.38, len(VALIDATION) - 6))


def test_an_early_validation_bump_the_run_left_far_behind_is_no_overfitting(tmp_path):
    assert invoke_rule(Overfit(run(tmp_path, evaluations(TRAINING, VALIDATION)))) == []


def test_a_validation_loss_that_never_comes_back_below_its_best_still_fires(tmp_path):
    memorising = VALIDATION[:6] + [12.5 + 0.1 * i for i in range(len(VALIDATION) - 6)]
    assert invoke_rule(Overfit(run(tmp_path, evaluations(TRAINING, memorising)))) != []
