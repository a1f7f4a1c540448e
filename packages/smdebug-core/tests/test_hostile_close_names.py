"""'Did you mean' over a hostile run's names takes bounded time (red team 11).

A typo in a tensor name is answered with the run's close names (difflib). A run whose names are one name's
letters shuffled passes every cheap test of difflib and costs a full, quadratic comparison each: 100,000 of
them made one typo in ``smdebug show`` take 20 s, a million minutes. Suggestions for a real run's names stay
difflib's own.
"""

from __future__ import annotations

import difflib
import random
import time

from smdebug.core.names import close_names


def test_suggestions_over_many_shuffled_names_take_bounded_time():
    rng = random.Random(11)
    name = "layer_weight_gradient_of_block_seven"
    hostile = ["".join(rng.sample(name, len(name))) for _ in range(400_000)]
    began = time.process_time()
    close_names(name + "x", hostile + [name])
    assert time.process_time() - began < 10  # (difflib alone: about 30 s of CPU here, this: under 3)


def test_suggestions_for_a_real_runs_names_are_difflibs():
    rng = random.Random(3)
    names = ([f"conv{i}.weight" for i in range(200)] + [f"bn{i}.running_mean" for i in range(200)]
             + ["loss", "CrossEntropyLoss_output_0", "gradients/dense/kernel", "lr", "Weights"])
    for _ in range(200):
        typo = list(rng.choice(names))
        typo[rng.randrange(len(typo))] = rng.choice("abxz._0")
        typo = "".join(typo)
        keys = {n.lower(): n for n in names if n != typo}
        expected = [keys[k] for k in difflib.get_close_matches(typo.lower(), list(keys), n=3, cutoff=0.6)]
        assert close_names(typo, names) == expected, typo
