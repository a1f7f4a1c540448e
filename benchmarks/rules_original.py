"""The original smdebug's side of the rule benchmark (runs in its own venv; prints JSON).

    python rules_original.py RUN RULE     # RULE: GradientScale or InactiveUnits
"""

import json
import os
import sys
import time

os.environ.setdefault("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sides import check_original  # noqa: E402

check_original()  # this side measures the original 1.0.34, or nothing

from smdebug.exceptions import NoMoreData  # noqa: E402
from smdebug.rules.rule_invoker import invoke_rule  # noqa: E402
from smdebug.trials import create_trial  # noqa: E402

import rules_user  # noqa: E402


def main(run, rule_name):
    t0 = time.perf_counter()
    trial = create_trial(run)
    rule = getattr(rules_user, rule_name)(trial)
    try:
        invoke_rule(rule, start_step=0, end_step=None)
    except NoMoreData:  # how the original's invoke_rule ends on a finished run
        pass
    print(json.dumps({"seconds": time.perf_counter() - t0}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
