"""The rule runner: evaluate rules over a finished run, or follow a run while it trains.

>>> from smdebug.rules.runner import run_rules
>>> result = run_rules("/tmp/run", ["vanishing_gradient", ("exploding_tensor", {"only_nan": "true"})])
>>> result.status, [(r.name, r.status) for r in result.rules]

Rules are evaluated step by step, all rules at a step before the next step, in the order of the run's
global steps (steps that were not saved are skipped rather than waited for). With ``follow=True`` the
runner keeps polling the run for new steps until training ends, so a verdict arrives within about
``poll_interval`` seconds of the step's index file landing; rules with a time-based condition (stalled
training) are asked between polls through :meth:`Rule.check_idle`.
"""

from __future__ import annotations

import os
import stat
import time
from typing import Callable, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from smdebug.core.logger import get_logger
from smdebug.core.storage.base import is_s3_path
from smdebug.exceptions import (
    NoSmdebugRun,
    NoMoreData,
    SMDebugValueError,
    RuleEvaluationConditionMet,
    SMDebugError,
    StepUnavailable,
    TensorUnavailable,
    TensorUnavailableForStep,
)
from smdebug.rules.action.builders import StopTraining
from smdebug.rules.evaluation import UNREADABLE, describe_run
from smdebug.core.interruption import watch_ctrl_c
from smdebug.rules.registry import build_rule, find_rule, rule_parameters as accepted_parameters
from smdebug.rules.results import (
    ERROR,
    IN_PROGRESS,
    ISSUES,
    NO_ISSUES,
    NOT_APPLICABLE,
    NOT_EVALUATED,
    Finding,
    RuleResult,
    RunResult,
)

logger = get_logger()

RuleRequest = Union[str, Tuple[str, Mapping[str, object]], Tuple[str, Mapping[str, object], Optional[str]]]
#: called with (event, rule_result, finding_or_None): "finding", "error", "done"
EventCallback = Callable[[str, RuleResult, Optional[Finding]], None]

# Conditions that mean "nothing to evaluate at this step for this rule", not an error. Unreadable data
# (UNREADABLE; MissingEventFile is a subclass of TensorUnavailableForStep) is caught before them.
_SKIP = (TensorUnavailableForStep, StepUnavailable, TensorUnavailable)


class _Active:
    """A rule being evaluated, with its result."""

    def __init__(self, rule, result: RuleResult, request: Tuple = ()):
        self.rule = rule
        self.result = result
        self.done = False
        #: (rule name or class, params, the caller's action_str): to judge the finished run again
        self.request = request


def _normalise(request: RuleRequest) -> Tuple[str, dict, Optional[str]]:
    if isinstance(request, (str, type)):
        return request, {}, None
    name, params, *rest = request
    return name, dict(params or {}), (rest[0] if rest else None)


def run_rules(
    trial,
    rules: Optional[Sequence[RuleRequest]] = None,
    *,
    other_trials: Optional[Sequence] = None,
    start_step: int = 0,
    end_step: Optional[int] = None,
    follow: bool = False,
    timeout: Optional[float] = None,
    poll_interval: float = 0.5,
    stop_training_on_issue: bool = False,
    max_findings: int = 100,
    on_event: Optional[EventCallback] = None,
    on_progress: Optional[Callable[[RunResult], None]] = None,
    ended: bool = False,
) -> RunResult:
    """Evaluate ``rules`` over ``trial`` (a path or a Trial) and return a :class:`RunResult`.

    Each rule ends with a status: IssuesFound (it fired), NoIssuesFound (it judged real data at one step
    or more and never fired), NotEvaluated (the run ended and the rule found nothing it could evaluate;
    ``detail`` says what it looked for and what the run has), InProgress (the run is still training), or
    Error (the rule could not be built or crashed, or the data it needed cannot be read: ``error`` names
    the file and the step). The run's status is the first of Error, IssuesFound, TrainingFailed (the hook
    recorded that the training script died), NotEvaluated, InProgress that any rule has, else NoIssuesFound.

    :param rules: rule names (``"vanishing_gradient"``, ``"VanishingGradient"``) or Rule subclasses, or
        ``(rule, params)`` / ``(rule, params, action_str)`` tuples; parameter values may be strings. A name
        no installed pack registers raises SMDebugValueError (naming the close matches) before anything is
        read; a rule that cannot be built from its parameters is reported as an Error. None: the
        recommended rules for the framework that wrote the run (:func:`recommended_rules_for`).
    :param other_trials: paths or trials for rules comparing runs (SimilarAcrossRuns).
    :param end_step: first step *not* evaluated (None: to the end of the run).
    :param follow: keep evaluating new steps until training ends (or ``timeout`` seconds pass).
    :param stop_training_on_issue: give every rule a StopTraining action (stops the job writing the trial
        at its next step boundary when any rule fires).
    :param max_findings: findings kept per rule (the rest are only counted).
    :param on_event: called with ("finding" | "error" | "done", rule result, finding or None) as it happens.
    :param on_progress: called with the RunResult after each step and, while following, between polls.
    :param ended: the run will not be written to any more although it has no end marker (its job crashed or
        was killed): judge what it holds as a finished run (``trial.treat_as_ended()``), so that rules judged
        at the end of training judge it and the verdict is final. Not with ``follow``.
    """
    from smdebug.trials import create_trial

    def resolve(rule_requests):
        requests = [_normalise(request) for request in rule_requests]
        return requests, [None if isinstance(name, type) else find_rule(name) for name, _, _ in requests]

    _check_times(timeout, poll_interval)
    if ended and follow:
        raise SMDebugValueError("ended=True reads the run as finished: it cannot be followed too")
    if rules is not None:
        requests, infos = resolve(rules)  # typos: fail before anything is read
    if isinstance(trial, str):
        # Following a run may start before the run does: wait for it (up to the timeout). Otherwise a path
        # with no run fails at once (NoSmdebugRun).
        wait = (timeout if timeout else float("inf")) if follow else None
        trial = create_trial(trial, range_steps=(start_step, end_step) if (start_step or end_step) else None,
                             wait_for_collections=wait)
    others = [create_trial(t) if isinstance(t, str) else t for t in (other_trials or [])]
    if ended:
        trial.treat_as_ended()
    if rules is None:
        requests, infos = resolve(recommended_rules_for(trial))
    else:
        requests = _with_framework_defaults(trial, requests, infos)
    result = RunResult(trial=str(trial.path), rules=[], follow=follow, read_as_ended=ended)
    active: List[_Active] = []
    for (name, params, action_str), info in zip(requests, infos):
        if info is None:  # a Rule subclass of the caller's, not registered by any pack
            rr = RuleResult(name=name.__name__, requested_as=name.__name__, pack=None, params=params)
        else:
            rr = RuleResult(name=info.name, requested_as=name, pack=info.pack, params=params)
        result.rules.append(rr)
        try:
            rule_class = name if info is None else info.load()
            request_action = action_str
            if stop_training_on_issue:
                action_str = _with_stop_training(action_str)
            rule = build_rule(rule_class, trial, params, other_trials=others, action_str=action_str)
        except (SMDebugError, ImportError, TypeError, ValueError) as e:
            rr.status, rr.error = ERROR, f"{type(e).__name__}: {e}"
            _emit(on_event, "error", rr, None)
            continue
        active.append(_Active(rule, rr, (name, params, request_action)))

    deadline = None if timeout is None else time.monotonic() + timeout
    for a in active:  # how long a rule may wait for another run to reach a step (see Rule.others_wait_until)
        a.rule.others_wait_until = deadline if follow else time.monotonic()
    next_step = start_step or 0
    judged_live = False  # a step was evaluated before the run's end was known
    try:
        with watch_ctrl_c() as ctrl_c:
            while any(not a.done for a in active):
                ctrl_c.check()  # (a Ctrl-C whose KeyboardInterrupt Python dropped)
                steps = [s for s in trial.steps() if s >= next_step and (end_step is None or s < end_step)]
                for step in steps:
                    judged_live = judged_live or not trial.loaded_all_steps
                    _evaluate_step(active, step, max_findings, on_event)
                    result.steps_evaluated += 1
                    result.last_step = step
                    next_step = step + 1
                    if on_progress is not None:
                        on_progress(result)
                if end_step is not None and next_step >= end_step:
                    break
                if trial.loaded_all_steps:
                    # Index files that arrived while evaluating: one more pass picks them up.
                    if not [s for s in trial.steps() if s >= next_step and (end_step is None or s < end_step)]:
                        break
                    continue
                if not follow:
                    break
                if deadline is not None and time.monotonic() >= deadline:
                    break
                if not steps:
                    gone = _run_removed(trial)
                    if gone is not None:  # nothing more can come: every rule still following fails, saying why
                        for a in active:
                            if not a.done:
                                _fail(a, gone, result.last_step, on_event, where="while following")
                        break
                    _check_idle(active, result.last_step, max_findings, on_event)
                    if on_progress is not None:  # findings made while idle reach the caller's output too
                        on_progress(result)
                    # (never past the deadline: --timeout 1 --poll-interval 30 took 31 s)
                    time.sleep(poll_interval if deadline is None else max(0.0, min(poll_interval,
                                                                                  deadline - time.monotonic())))
    except KeyboardInterrupt:
        result.interrupted = True
    except UNREADABLE as e:  # the run's own index cannot be read any more: every rule still running fails
        for a in active:
            if not a.done:
                _fail(a, e, result.last_step, on_event)
    result.training_ended = bool(trial.loaded_all_steps)
    complete = result.training_ended and not result.interrupted
    try:
        result.hook_failures = trial.hook_failures()
        result.abnormal_ends = trial.abnormal_ends() if result.training_ended else []
        result.stopped_on_request = trial.stopped_on_request() if result.training_ended else None
    except SMDebugError as e:  # (never a verdict's loss: said as what it is)
        result.hook_failures = [f"whether a hook stopped saving early could not be read ({e})"]
    if not result.training_ended:
        timed_out = follow and deadline is not None and time.monotonic() >= deadline
        result.not_final = why_not_final(trial, follow=follow, timed_out=timed_out,
                                         interrupted=result.interrupted)
        result.waiting_for_workers = bool(getattr(trial, "missing_workers_note", None))
    finals = {}
    if follow and complete and judged_live:
        finals = _judge_finished(trial, [a for a in active if not a.result.findings_total and a.result.status != ERROR],
                                 others, start_step, end_step, max_findings, on_event)
    for a in active:
        if id(a) in finals:
            at = next(i for i, r in enumerate(result.rules) if r is a.result)  # (by identity: results compare by value)
            result.rules[at] = finals[id(a)]
            _emit(on_event, "done", finals[id(a)], None)
            continue
        _conclude(a.result, a.rule, trial, complete)
        _emit(on_event, "done", a.result, None)
    result.finished = time.time()
    return result


def _judge_finished(trial, quiet: List[_Active], others, start_step, end_step, max_findings,
                    on_event) -> dict:
    """A followed run that has ended: the rules that found nothing while it trained judge it again, whole, as a
    run read afterwards is judged (id(active) -> its RuleResult). Tests judged "once training has ended" ran
    at steps the follower evaluated before the end marker appeared (the last labels, the loss's last save),
    saw a run still training and were passed over for good, and the run's record (``_meta``) was read once, when
    the follower opened it: a live verdict said "no issues" or NotEvaluated where the same finished run judged
    afterwards was judged, or fired. Rules that fired while it trained keep their findings (each was true when
    made: a stop may have followed)."""
    if not quiet:
        return {}
    from smdebug.trials import create_trial

    logger.info("smdebug: the run has ended: %d rule(s) that found nothing while it trained judge the finished run "
                "again", len(quiet))
    try:
        fresh = create_trial(trial.path, range_steps=getattr(trial, "range_steps", None),
                             skip_damaged=getattr(trial, "skip_damaged", False))
        again = run_rules(fresh, [a.request for a in quiet], other_trials=others, start_step=start_step,
                          end_step=end_step, max_findings=max_findings, on_event=_findings_only(on_event))
    except SMDebugError as e:  # (the verdicts made while following stand; why they were not confirmed is said)
        logger.warning("smdebug: the finished run could not be judged again (%s); the verdicts stand as made while "
                       "it trained", e)
        return {}
    return {id(a): r for a, r in zip(quiet, again.rules)}


def _findings_only(on_event: Optional[EventCallback]) -> Optional[EventCallback]:
    """``on_event`` for the second judgement of a finished run: its findings and errors, not its "done" (the
    caller says that once, for the final verdict)."""
    if on_event is None:
        return None
    return lambda event, rule_result, finding: None if event == "done" else on_event(event, rule_result, finding)


def _check_times(timeout, poll_interval) -> None:
    """``timeout``: None or seconds >= 0 (inf: no limit); ``poll_interval``: seconds in (0, 86400]. NaN,
    negative and overflowing times reached time.sleep as raw ValueError/OverflowError tracebacks."""
    from smdebug.rules.command import MAX_POLL_INTERVAL

    if timeout is not None and not (isinstance(timeout, (int, float)) and timeout >= 0):
        raise SMDebugValueError(f"timeout {timeout!r} is not a time to wait: give seconds, 0 or more, or None")
    if not (isinstance(poll_interval, (int, float)) and 0 < poll_interval <= MAX_POLL_INTERVAL):
        raise SMDebugValueError(f"poll_interval {poll_interval!r} is not a pause between polls: give seconds, "
                                f"more than 0 and at most {MAX_POLL_INTERVAL:g}")


def why_not_final(trial, follow: bool = False, timed_out: bool = False, interrupted: bool = False) -> str:
    """One sentence: why a run's verdict is not final (its run has not ended), and what ends the wait."""
    from smdebug.core.locations import END_OF_JOB_FILE

    if interrupted:
        return "interrupted before the run ended: what was evaluated so far"
    note = getattr(trial, "missing_workers_note", None)
    left = getattr(trial, "ended_wait_left", None)
    if note:
        # Every worker that wrote has ended, but the collections name more: the run is read as ended only
        # after SMDEBUG_ENDED_WORKERS_WAIT, in case a late worker is still coming.
        when = f" in about {left:.0f}s" if left is not None else ""
        return (f"{note}; it is read as ended{when}, once its workers have been ended for "
                "SMDEBUG_ENDED_WORKERS_WAIT seconds (a late worker is waited for): evaluate it again then, "
                "or follow it (--follow)")
    why = f"the run has not ended (no {END_OF_JOB_FILE} yet: still training, or its job died before it ended)"
    open_workers = getattr(trial, "workers_not_ended", lambda: [])()
    if open_workers:  # (others ended: these are still training, or died; say which)
        shown = ", ".join(open_workers[:5]) + (", ..." if len(open_workers) > 5 else "")
        why = (f"the run has not ended: {shown} {'has' if len(open_workers) == 1 else 'have'} not ended while its "
               f"other workers have (still training, or {'its' if len(open_workers) == 1 else 'their'} process "
               "died)")
    if timed_out:
        return f"{why}; --timeout reached while following it"
    return (f"{why}: evaluate it again when it has, or follow it (--follow); if its job died, --ended judges "
            "what it wrote as a finished run")


def _conclude(r: RuleResult, rule, trial, complete: bool) -> None:
    """The rule's final status from what it found and what it evaluated."""
    evaluation = rule.evaluation
    r.steps_evaluated = evaluation.steps
    r.tensors_evaluated = len(evaluation.tensors)
    if r.status == ERROR:
        return
    if r.findings_total:
        r.status = ISSUES
    elif evaluation.steps:
        r.status = NO_ISSUES if complete else IN_PROGRESS
        r.detail = evaluation.caveat  # (what it did not judge: "no issues" is not said of that)
    elif complete and (why_not := evaluation.not_applicable_reason()):
        r.status = NOT_APPLICABLE
        r.detail = f"not applicable: {why_not}; the run has {describe_run(trial)}"
    else:
        r.status = NOT_EVALUATED if complete else IN_PROGRESS
        r.detail = evaluation.detail(trial) if complete else f"nothing evaluated yet: {evaluation.detail(trial)}"


def _is_selection(parameter: str) -> bool:
    """Whether a rule parameter says which tensors the rule reads (a regex, a collection)."""
    return parameter.endswith("regex") or "collection" in parameter


def _with_framework_defaults(trial, requests, infos) -> list:
    """Named rules with the parameters the recommended set gives them for the run's framework as defaults.

    ``smdebug rules run RUN --rule CheckInputImages`` on a Keras run must read its images channels-last as the
    recommended set does (``rule_configs.rule_parameters``); the caller's own parameters win, and a caller who
    says which tensors the rule reads (a regex or a collection) gets none of the defaults that select tensors.
    A rule class of the caller's (no registered name) is left as it is.
    """
    from smdebug.core.run_info import framework_of
    from smdebug.rules import rule_configs

    framework = framework_of(trial)
    if framework not in rule_configs.FRAMEWORKS:
        framework = None  # (the framework-free defaults still apply)
    out = []
    for (name, params, action_str), info in zip(requests, infos):
        defaults = rule_configs.rule_parameters(info.name, framework) if info is not None else {}
        if any(_is_selection(k) for k in params):
            defaults = {k: v for k, v in defaults.items() if not _is_selection(k)}
        if defaults:
            try:  # (a third-party rule sharing a built-in name gets only the parameters it accepts)
                accepted = accepted_parameters(info.load())
            except ImportError:
                accepted = {}  # (reported as the rule's Error when it is built)
            params = {**{k: v for k, v in defaults.items() if k in accepted}, **params}
        out.append((name, params, action_str))
    return out


def recommended_rules_for(trial) -> List[Tuple[str, dict]]:
    """The recommended rules (``rule_configs.RECOMMENDED``) for the framework that wrote ``trial``.

    :raises SMDebugValueError: the run does not tell its framework, or it has no recommended rules.
    """
    from smdebug.core.run_info import framework_of
    from smdebug.rules import rule_configs

    framework = framework_of(trial)
    if framework not in rule_configs.RECOMMENDED:
        what = f"was written by {framework!r}" if framework else "does not tell which framework wrote it"
        raise SMDebugValueError(
            f"{trial.path} {what}, and there are recommended rules for {', '.join(rule_configs.RECOMMENDED)} "
            "runs only: name the rules to evaluate (--rule NAME; `smdebug rules list` shows them)")
    return rule_configs.recommended_rules(framework)


def _with_stop_training(action_str: Optional[str]) -> str:
    from smdebug.rules.action.actions import parse_action_str
    import json

    actions = parse_action_str(action_str)
    if not any(str(a.get("name", "")).lower() == "stoptraining" for a in actions):
        actions.append(StopTraining().params)
    return json.dumps(actions)


def _run_removed(trial) -> Optional[BaseException]:
    """A local run whose folder was removed (or replaced by something else) while it was being followed:
    the error to fail the rules with; None while the folder is there (S3 prefixes have no folder to lose).
    The folder is known by its identity (device and inode) from the first look on: one replaced by another
    folder, or by a link to one (``/``), is no longer the run; nor is a run whose ``index`` folder, once there,
    was removed (nothing more can be read of it). Both went unnoticed until the timeout (probe 17b F9)."""
    root = getattr(trial.storage, "root", None)  # (local storage: the folder, made absolute and expanded)
    if not isinstance(root, str) or is_s3_path(str(trial.path)):
        return None
    try:
        st = os.stat(root)
    except OSError:
        st = None
    if st is None or not stat.S_ISDIR(st.st_mode):
        return NoSmdebugRun(root, "the run folder was removed while its run was being followed", hint="")
    index = os.path.isdir(os.path.join(root, "index"))
    seen = trial.__dict__.setdefault("_followed_folder", [st.st_dev, st.st_ino, index])
    if (st.st_dev, st.st_ino) != (seen[0], seen[1]):
        return NoSmdebugRun(root, "the run folder was replaced by another folder (or a link to one) while its run "
                                  "was being followed", hint="")
    if seen[2] and not index:
        return NoSmdebugRun(root, "the run's index folder was removed while its run was being followed", hint="")
    seen[2] = seen[2] or index
    return None


def _fail(a: _Active, error: BaseException, step: Optional[int], on_event, where: Optional[str] = None) -> None:
    """Mark the rule failed: Error with the message (and, for unreadable data, the file and the step)."""
    r = a.result
    if isinstance(error, UNREADABLE):
        r.error = f"{type(error).__name__}: {error}"
        r.error_file = getattr(error, "path", None)
        r.error_step = getattr(error, "step", None)
        if r.error_step is None:
            r.error_step = step
    else:
        r.error = f"{type(error).__name__} {where or f'at step {step}'}: {error}"
    r.status = ERROR
    a.done = True
    _emit(on_event, "error", r, None)


def _evaluate_step(active: Iterable[_Active], step: int, max_findings: int, on_event) -> None:
    for a in active:
        if a.done:
            continue
        try:
            a.rule.invoke(step)
        except RuleEvaluationConditionMet as e:
            _record(a, step, e.reason, max_findings, on_event)
            if e.end_of_rule:
                a.done = True
        except UNREADABLE as e:  # before _SKIP: MissingEventFile is a TensorUnavailableForStep
            logger.debug("%s: unreadable data at step %d: %s", a.result.name, step, e)
            _fail(a, e, step, on_event)
        except _SKIP as e:
            logger.debug("%s: nothing to evaluate at step %d: %s", a.result.name, step, e)
        except NoMoreData:
            a.done = True
        except Exception as e:  # noqa: BLE001 - a broken rule is reported, the others go on
            # (the verdict and the event say what failed; the traceback is for whoever debugs the rule: -v)
            logger.debug("%s failed at step %d", a.result.name, step, exc_info=True)
            _fail(a, e, step, on_event)


def _check_idle(active: Iterable[_Active], last_step: Optional[int], max_findings: int, on_event) -> None:
    for a in active:
        if a.done:
            continue
        try:
            reason = a.rule.check_idle()
            if reason:
                a.rule.condition_met(last_step if last_step is not None else -1, reason)
        except RuleEvaluationConditionMet as e:
            _record(a, e.step, e.reason, max_findings, on_event)
            if e.end_of_rule:
                a.done = True
        except Exception as e:  # noqa: BLE001 - a broken rule is reported, the others go on
            _fail(a, e, last_step, on_event, where="while idle")


def _record(a: _Active, step: int, reason: Optional[str], max_findings: int, on_event) -> None:
    mode_enum, mode_step = a.rule.base_trial.mode_modestep(step)  # (None, None): a step found while idle
    finding = Finding(step=step, reason=reason, mode=getattr(mode_enum, "name", None), mode_step=mode_step)
    a.result.findings_total += 1
    a.result.status = ISSUES
    if len(a.result.findings) < max_findings:
        a.result.findings.append(finding)
    _emit(on_event, "finding", a.result, finding)


def _emit(on_event, event: str, rule_result: RuleResult, finding: Optional[Finding]) -> None:
    if on_event is not None:
        on_event(event, rule_result, finding)
