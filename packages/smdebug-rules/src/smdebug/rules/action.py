"""Actions run when a rule's condition is met (placeholder until the actions land)."""


class Actions:
    def __init__(self, action_str=None, rule_name="", trial=None):
        self.action_str = action_str

    def invoke(self, step, reason=None):
        pass
