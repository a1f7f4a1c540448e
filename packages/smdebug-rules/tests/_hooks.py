"""The hook the rule tests write their runs with (numpy values, no framework)."""

from smdebug.core.collection import Collection
from smdebug.core.hook import BaseHook


class NumpyHook(BaseHook):
    framework_name = "rules-test"

    def default_collections(self):
        return [
            Collection("weights", include_regex=["^w"]),
            Collection("gradients", include_regex=["^gradient/"]),
            Collection("losses", include_regex=["loss"]),
        ]
