"""What the rule runner reports: per rule a status and its findings, as objects and as JSON."""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional

# Statuses: SageMaker Debugger's four, and NotEvaluated (the rule ran but found nothing it could evaluate).
IN_PROGRESS = "InProgress"
NO_ISSUES = "NoIssuesFound"
ISSUES = "IssuesFound"
ERROR = "Error"
NOT_EVALUATED = "NotEvaluated"
# The run was read and holds nothing of the kind the rule judges (no tanh/sigmoid layer, no image input,
# no validation at all): an answer about the run, unlike NotEvaluated, where data the rule needs is missing.
NOT_APPLICABLE = "NotApplicable"
# A run-level status only: no rule found an issue or failed, but training did not end normally (its process
# raised an exception nobody caught, or was stopped by SIGTERM): the rules judged what it saved up to there,
# not the training that was meant to happen. (Read from the note the hook leaves: trial.abnormal_ends().)
TRAINING_FAILED = "TrainingFailed"

#: the run's status is the first of these that any rule has (NotApplicable rules do not count; a run where
#: every rule is NotApplicable was judged by none: NotEvaluated)
PRECEDENCE = (ERROR, ISSUES, TRAINING_FAILED, NOT_EVALUATED, IN_PROGRESS, NO_ISSUES)

#: exit codes of ``smdebug rules run``. InProgress is not 0: its verdict is not final (the run has not ended),
#: and a script gating on ``rules run`` must not take a run still training, or one waiting for a worker that
#: never started, for a judged one. TrainingFailed is not 0 either: a gate must not pass a job that died.
EXIT_CODES = {NO_ISSUES: 0, IN_PROGRESS: 4, ISSUES: 1, ERROR: 2, NOT_EVALUATED: 3, NOT_APPLICABLE: 3,
              TRAINING_FAILED: 5}


@dataclass
class Finding:
    step: int
    reason: Optional[str]
    mode: Optional[str] = None
    mode_step: Optional[int] = None
    time: float = field(default_factory=time.time)


@dataclass
class RuleResult:
    name: str
    requested_as: str
    pack: Optional[str] = None
    params: Dict[str, object] = field(default_factory=dict)
    status: str = IN_PROGRESS
    findings: List[Finding] = field(default_factory=list)
    findings_total: int = 0  # findings beyond the kept ones are only counted
    #: steps at which the rule judged real data (read a value); NoIssuesFound needs at least one
    steps_evaluated: int = 0
    #: tensors whose values the rule read at those steps
    tensors_evaluated: int = 0
    #: NotEvaluated (and InProgress with nothing yet): what the rule looked for and what the run has;
    #: NoIssuesFound: what the rule could not judge, if it says (``Rule.caveat``), else None
    detail: Optional[str] = None
    error: Optional[str] = None
    #: for an Error from unreadable data: the damaged or missing file, and the step
    error_file: Optional[str] = None
    error_step: Optional[int] = None

    @property
    def first_finding(self) -> Optional[Finding]:
        return self.findings[0] if self.findings else None


@dataclass
class RunResult:
    trial: str
    rules: List[RuleResult]
    follow: bool = False
    started: float = field(default_factory=time.time)
    finished: Optional[float] = None
    training_ended: bool = False
    interrupted: bool = False
    #: why the verdict is not final, when the run had not ended (None once it has)
    not_final: Optional[str] = None
    #: the run had not ended because fewer workers than its collections name ever wrote, all of them ended
    #: (the trial waits SMDEBUG_ENDED_WORKERS_WAIT for a late one)
    waiting_for_workers: bool = False
    #: the run was read as ended at the caller's request (``--ended``, ``run_rules(..., ended=True)``): a job that
    #: died wrote no end marker
    read_as_ended: bool = False
    last_step: Optional[int] = None
    #: steps of the run the runner went through (each rule's own count is RuleResult.steps_evaluated)
    steps_evaluated: int = 0
    #: what the run's hooks left in it on stopping early or losing steps (``trial.hook_failures()``): the run
    #: holds less than training saved, which every verdict on it is subject to
    hook_failures: List[str] = field(default_factory=list)
    #: the notes among ``hook_failures`` that say a training process did not end normally (an unhandled
    #: exception, SIGTERM: ``trial.abnormal_ends()``); with no issue found, the run's status is TrainingFailed
    abnormal_ends: List[str] = field(default_factory=list)
    #: the run ended because a rule asked it to stop while it trained (``--follow --stop-training``:
    #: ``trial.stopped_on_request()``), None otherwise: it ended early, on an issue found live, so it is never
    #: "no issues" even where no rule finds the issue again in what was saved
    stopped_on_request: Optional[str] = None

    @property
    def status(self) -> str:
        """The first of Error, IssuesFound (also when a rule stopped the training while it ran), TrainingFailed
        (no rule's: training did not end normally),
        NotEvaluated, InProgress that any rule has; else NoIssuesFound (NotEvaluated when every rule is
        NotApplicable: no rule judged anything)."""
        statuses = {r.status for r in self.rules} - {NOT_APPLICABLE}
        if self.abnormal_ends:
            statuses.add(TRAINING_FAILED)
        if self.stopped_on_request:
            statuses.add(ISSUES)
        if self.rules and not statuses:
            return NOT_EVALUATED
        for status in PRECEDENCE:
            if status in statuses:
                return status
        return NO_ISSUES

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.status]

    def to_dict(self) -> dict:
        data = asdict(self)
        data["status"] = self.status
        data["exit_code"] = self.exit_code
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, default=str)

    def save(self, path: str) -> None:
        """Write the JSON to a local path or ``s3://bucket/key``, atomically (followers of a live run may
        read it at any moment)."""
        from smdebug.core.storage.base import is_s3_path, s3_object_problem
        from smdebug.core.storage.factory import get_storage

        if is_s3_path(path):
            from smdebug.core.output_guard import refuse_run_output

            problem = s3_object_problem(path)
            if problem:  # (s3:// was taken for the local folder "" and the file "s3:")
                raise ValueError(f"{path}: {problem}")
            folder, _, name = path.strip().rpartition("/")
            refuse_run_output(path.strip())  # (never over a run's own objects: the run would be unreadable)
        else:
            from smdebug.core.storage.safe_fs import check_output_path

            check_output_path(os.path.abspath(os.path.expanduser(path)))  # (never replace /dev/null or a FIFO)
            folder, name = os.path.split(os.path.abspath(os.path.expanduser(path)))
            os.makedirs(folder, exist_ok=True)
        get_storage(folder).write_atomic(name, self.to_json().encode("utf-8"))
