"""The rule-accuracy benchmark: small real training runs with known bugs and healthy ones, every built-in rule
and the recommended set evaluated on them (see benchmarks/README.md).

Modules: ``scenarios`` (the table), ``data`` / ``torch_runs`` / ``keras_runs`` / ``xgboost_runs`` (training),
``hooks`` (how runs are recorded and which rules are recommended: the switch point), ``runs`` (the cache),
``properties`` (label checks on the written runs), ``evaluate`` (rules as a user runs them), ``report`` and
``bench`` (numbers, markdown, the entry point).
"""
