"""What the rule runner reports: per rule a status and its findings, as objects and as JSON."""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional

# Statuses, as SageMaker Debugger reports them.
IN_PROGRESS = "InProgress"
NO_ISSUES = "NoIssuesFound"
ISSUES = "IssuesFound"
ERROR = "Error"

#: exit codes of ``smdebug rules run``
EXIT_CODES = {NO_ISSUES: 0, IN_PROGRESS: 0, ISSUES: 1, ERROR: 2}


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
    steps_evaluated: int = 0
    error: Optional[str] = None

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
    last_step: Optional[int] = None
    steps_evaluated: int = 0

    @property
    def status(self) -> str:
        """Error if any rule could not run, else IssuesFound if any rule fired, else NoIssuesFound
        (InProgress when the run was still training when evaluation stopped)."""
        statuses = {r.status for r in self.rules}
        for status in (ERROR, ISSUES, IN_PROGRESS):
            if status in statuses:
                return status
        return NO_ISSUES

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.status]

    def to_dict(self) -> dict:
        data = asdict(self)
        data["status"] = self.status
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, default=str)

    def save(self, path: str) -> None:
        """Write the JSON atomically (followers of a live run may read it at any moment)."""
        directory = os.path.dirname(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".rules-", suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(self.to_json())
        os.replace(tmp, path)
