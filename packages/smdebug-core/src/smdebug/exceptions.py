"""Exceptions raised by smdebug.

Every exception derives from :class:`SMDebugError`, so ``except SMDebugError`` catches anything the
library raises on purpose. Names and constructor arguments match the original smdebug 1.0.x so that
existing analysis code and rules keep working.
"""

from __future__ import annotations

from smdebug.core.error_base import (  # noqa: F401 - re-exported: this module is their public place
    SMDebugError,
    SMDebugNotImplementedError,
    SMDebugRuntimeError,
    SMDebugTypeError,
    SMDebugValueError,
)
from smdebug.core.modes import ModeKeys


def _mode_name(mode) -> str:
    return getattr(mode, "name", str(mode))


class _Hinted:
    """An exception whose message can end with a hint for the reader: which names are close, which steps
    were saved. The trial sets ``hint`` where the user asked (``trial.tensor``, ``Tensor.value``); it may be
    a function, called only when the message is shown: rules raise and catch these at every step they
    skip, and must not pay for a message nobody reads."""

    hint = ""

    def _hint_text(self) -> str:
        hint = self.hint
        if callable(hint):
            try:
                hint = hint()
            except Exception:  # noqa: BLE001 - a hint is a courtesy; the message stands without it
                hint = ""
        return f" {hint}" if hint else ""

    def __reduce__(self):
        # A hint that is a function (of the trial) does not pickle: its text goes instead.
        state = dict(self.__dict__)
        if callable(state.get("hint")):
            state["hint"] = self._hint_text().strip()
        return type(self), self.args, state


class SMDebugCustomerError(SMDebugError):
    """An error caused by user input (configuration, paths) rather than by smdebug itself."""


class InvalidConfigurationError(SMDebugValueError):
    """A hook or collection configuration that can never work (raised at hook construction)."""


class TensorUnavailable(_Hinted, SMDebugError):
    def __init__(self, tname):
        super().__init__(tname)
        self.tname = tname

    def __str__(self):
        return f"Tensor {self.tname} was not saved.{self._hint_text()}"


class TensorUnavailableForStep(_Hinted, SMDebugError):
    def __init__(self, tname, step, mode=None, has_reductions=False):
        super().__init__(tname, step, mode, has_reductions)
        self.tname = tname
        self.step = step
        self.mode = ModeKeys.GLOBAL if mode is None else mode
        self.has_reductions = has_reductions

    def __str__(self):
        msg = (
            f"Value for tensor {self.tname} is not available for step {self.step} "
            f"with mode {_mode_name(self.mode)} as it was not saved."
        )
        if self.has_reductions:
            msg += " This tensor has reductions saved for this step; use trial.tensor(name).reduction_value(...)"
        return msg + self._hint_text()


class MissingEventFile(TensorUnavailableForStep):
    """An index file points at an event file that does not exist (or stopped existing)."""

    def __init__(self, tname, step, mode=None, path=None):
        super().__init__(tname, step, mode)
        self.path = path

    def __str__(self):
        return f"Event file {self.path} holding tensor {self.tname} of step {self.step} is missing"


class ShapeUnavailableForStep(SMDebugError):
    def __init__(self, tname, step, mode=None):
        super().__init__(tname, step, mode)
        self.tname = tname
        self.step = step
        self.mode = ModeKeys.GLOBAL if mode is None else mode

    def __str__(self):
        return (
            f"Shape for tensor {self.tname} is not available for step {self.step} "
            f"with mode {_mode_name(self.mode)} as it was not saved."
        )


class StepUnavailable(_Hinted, SMDebugError):
    def __init__(self, step, mode=None):
        super().__init__(step, mode)
        self.step = step
        self.mode = ModeKeys.GLOBAL if mode is None else mode

    def __str__(self):
        hint = self._hint_text()  # (the message of 1.0.x has no full stop; a hint after it needs one)
        return f"Step {self.step} of mode {_mode_name(self.mode)} is not available as it was not saved" + (
            f".{hint}" if hint else "")


class StepNotYetAvailable(SMDebugError):
    def __init__(self, step, mode=None):
        super().__init__(step, mode)
        self.step = step
        self.mode = ModeKeys.GLOBAL if mode is None else mode

    def __str__(self):
        return f"Step {self.step} of mode {_mode_name(self.mode)} not yet available"


class NoMoreData(SMDebugError):
    def __init__(self, step=None, mode=None, last_step=None):
        super().__init__(step, mode, last_step)
        self.step = step
        self.mode = mode
        self.last_step = last_step

    def __str__(self):
        if self.last_step is None:  # (the run has no step of that mode at all)
            return (f"Looking for step {self.step} of mode {_mode_name(self.mode)} and reached end of training. "
                    f"The run has no {_mode_name(self.mode)} step")
        return (
            f"Looking for step {self.step} of mode {_mode_name(self.mode)} and reached end of training. "
            f"Max step available is {self.last_step}"
        )


class MissingCollectionFiles(SMDebugError):
    """A run's collection files are not all there: the run ended without them, or a wait ran out."""

    def __str__(self):
        return str(self.args[0]) if self.args else "Training has ended but not all collection files were found."


class NoSmdebugRun(MissingCollectionFiles):
    """Nothing smdebug writes is at the path given to ``create_trial``: it does not exist, is empty, or
    holds something else. Raised at once unless a wait was asked for (``wait_for_collections``).

    A :class:`MissingCollectionFiles` for code written against the original, which raised that (or
    waited forever) in this case.
    """

    #: how to wait instead, appended to the message (the command line says it its own way)
    WAIT_HINT = "to wait for a run about to start: create_trial(path, wait_for_collections=SECONDS)"

    def __init__(self, path, reason="", hint=WAIT_HINT):
        super().__init__(path, reason, hint)
        self.path = path
        self.reason = reason
        self.hint = hint

    def __str__(self):
        text = f"no smdebug run at {self.path}" + (f": {self.reason}" if self.reason else "")
        return f"{text}; {self.hint}" if self.hint else text


class IndexReaderException(SMDebugError):
    """An index file is corrupt, truncated or has an unexpected name."""

    def __init__(self, message, path=None, step=None):
        super().__init__(message)
        self.message = message
        self.path = path
        self.step = step

    def __str__(self):
        parts = [self.message]
        if self.path is not None:
            parts.append(f"file={self.path}")
        if self.step is not None:
            parts.append(f"step={self.step}")
        return " | ".join(parts)


class EventFileCorrupted(IndexReaderException):
    """A record of an event file cannot be read: truncated, bad checksum or undecodable payload."""




class CollectionFileCorrupted(SMDebugValueError):
    """A collections JSON file cannot be parsed or has unknown keys."""

    def __init__(self, message, path=None):
        super().__init__(message)
        self.message = message
        self.path = path

    def __str__(self):
        return self.message if self.path is None else f"{self.message} | file={self.path}"


class InvalidWorker(_Hinted, SMDebugError):
    def __init__(self, worker):
        super().__init__(worker)
        self.worker = worker

    def __str__(self):
        return f"Invalid Worker: {self.worker}{self._hint_text()}"


class InvalidCollectionConfiguration(SMDebugError):
    def __init__(self, c_name):
        super().__init__(c_name)
        self.c_name = c_name

    def __str__(self):
        return (
            f"Collection {self.c_name} has no include_regex and no tensor_names, "
            "so it can never match a tensor; give it a regex or tensor names"
        )


class TrainingStopRequested(SMDebugError):
    """Raised out of a hook call at a step boundary when a rule asked the training job to stop.

    The hook has already written and closed everything, so the run is complete and readable. Loops that
    prefer a flag set ``hook.on_stop = "flag"`` and test ``hook.stop_requested`` instead.
    """

    def __init__(self, message, rule=None, step=None, reason=None):
        super().__init__(message)
        self.rule = rule
        self.step = step
        self.reason = reason


class RuleEvaluationConditionMet(SMDebugError):
    def __init__(self, rule_name, step, end_of_rule=False, reason=None):
        super().__init__(rule_name, step, end_of_rule)
        self.rule_name = rule_name
        self.step = step
        self.end_of_rule = end_of_rule
        #: why the rule fired, in words (None when the rule did not say)
        self.reason = reason

    def __str__(self):
        text = f"Evaluation of the rule {self.rule_name} at step {self.step} resulted in the condition being met"
        return f"{text}: {self.reason}" if self.reason else text


class InsufficientInformationForRuleInvocation(SMDebugError):
    def __init__(self, rule_name, message):
        super().__init__(rule_name, message)
        self.rule_name = rule_name
        self.message = message

    def __str__(self):
        return f"Insufficient information to invoke rule {self.rule_name}: {self.message}"


class NoMoreProfilerData(SMDebugError):
    def __init__(self, timestamp):
        super().__init__(timestamp)
        self.timestamp = timestamp

    def __str__(self):
        return f"Looking for timestamp {self.timestamp} and reached end of training."
