"""Rule runner results (``smdebug rules run ... -o FILE``) read for the report, trusting nothing.

The document comes from a file anyone may have edited: every field is checked for its type, and what
does not fit is left out with a note the page shows ("findings of X: 3 entries are not objects"),
never a traceback. Statuses are shown as they are written: the known ones get their colour and meaning,
an unknown one is shown as-is, and only ``NoIssuesFound`` reads as a pass.
"""

from __future__ import annotations

import datetime
import json
import math
from dataclasses import dataclass, field
from typing import Any, List, Optional

from smdebug.core.bounded_json import JsonTooLarge, loads_bounded

#: rule results the report picks up from the run's own directory
RULE_RESULTS_FILE = "rule_results.json"

#: status -> (css class, what it means); anything else is shown as-is with the "unknown" class
STATUSES = {
    "NoIssuesFound": ("ok", "evaluated, no issue found"),
    "IssuesFound": ("bad", "the rule fired"),
    "NotEvaluated": ("skip", "nothing this rule looks at was found: not a pass"),
    "NotApplicable": ("na", "the run has nothing of the kind this rule judges (no such layers, no images, no validation)"),
    "Error": ("err", "the rule could not run or read the data: not a pass"),
    "InProgress": ("wait", "not final: the run had not ended when the rules were evaluated"),
    "TrainingFailed": ("bad", "no rule fired, but training did not end normally (an unhandled exception or "
                              "SIGTERM): the rules judged only the steps saved before it died"),
}
MAX_TEXT = 2000  # characters of any one text shown from the document
MAX_PATH = 4096  # characters of the run's path the document names (longer: clipped, so never this run's)
#: rules and findings per rule kept from the document (the rule runner keeps 100 findings per rule; a
#: hand-made file of 1,000,000 findings made a 380 MB page in 73 s and 2.9 GB of memory)
MAX_RULES = 500
MAX_FINDINGS_PER_RULE = 1000


@dataclass
class Finding:
    rule: str
    step: int
    mode: Optional[str]
    mode_step: Optional[int]
    reason: str
    tensor: Optional[str] = None  # the tensor the finding is about, when the rule says


@dataclass
class Verdict:
    name: str
    status: str
    pack: Optional[str] = None
    params: List[tuple] = field(default_factory=list)
    findings: List[Finding] = field(default_factory=list)
    findings_total: int = 0
    steps_evaluated: Optional[int] = None
    error: Optional[str] = None
    detail: Optional[str] = None


@dataclass
class RuleResults:
    source: str
    status: str
    verdicts: List[Verdict]
    started: Optional[str] = None  # ISO times
    finished: Optional[str] = None
    last_step: Optional[int] = None
    steps_evaluated: Optional[int] = None
    training_ended: Optional[bool] = None
    #: why an InProgress verdict is not final (the runner's ``not_final``: still training, waiting for a worker)
    not_final: Optional[str] = None
    problems: List[str] = field(default_factory=list)  # what was wrong in the document
    #: the run the document says it judged (its ``trial``), as written
    trial: Optional[str] = None
    #: why the run's own rule_results.json could not be used at all (then there are no verdicts)
    unusable: Optional[str] = None
    #: what in the document does not fit the run it is shown with (another run's path, other steps)
    mismatch: List[str] = field(default_factory=list)

    @property
    def findings(self) -> List[Finding]:
        return [f for v in self.verdicts for f in v.findings]


class RuleResultsError(Exception):
    """The document cannot be used at all (unreadable, not JSON, not a rule runner result)."""


def status_class(status: str) -> str:
    return STATUSES.get(status, ("unknown", ""))[0]


def status_meaning(status: str) -> str:
    return STATUSES.get(status, ("", "status not known to this version of smdebug; shown as written"))[1]


def _text(value: Any, limit: int = MAX_TEXT) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str) if value is not None else ""
    return text if len(text) <= limit else text[:limit] + "…"


def _int(value: Any) -> Optional[int]:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value == int(value):
        return int(value)
    return None


def _time(value: Any) -> Optional[str]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return datetime.datetime.fromtimestamp(value, datetime.timezone.utc).isoformat(timespec="seconds")
    except (OverflowError, OSError, ValueError):
        return None


def read_text(path: str) -> str:
    """The file's text, local or ``s3://`` (the command line's one reader of files it is given)."""
    from smdebug.cli._common import CliError, read_file

    try:
        data = read_file(path, "rule results")
    except CliError as e:
        raise RuleResultsError(str(e)) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RuleResultsError(f"{path} is not UTF-8 text: {e}") from None


def parse(text: str, source: str) -> RuleResults:
    try:
        doc = loads_bounded(text)
    except JsonTooLarge as e:
        raise RuleResultsError(f"{source} refused: {e}") from None
    except (ValueError, RecursionError) as e:
        raise RuleResultsError(f"{source} is not JSON: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("rules"), list):
        raise RuleResultsError(f"{source} does not look like a rule runner result (no 'rules' list)")
    problems: List[str] = []
    verdicts = []
    if len(doc["rules"]) > MAX_RULES:
        problems.append(f"{len(doc['rules'])} rule entries: only the first {MAX_RULES} are shown")
    unreadable = 0  # entries whose verdict cannot be read: never counted as a pass
    for i, r in enumerate(doc["rules"][:MAX_RULES]):
        if not isinstance(r, dict):
            problems.append(f"rule entry {i + 1} is a {type(r).__name__}, not an object: left out, counted as "
                            "Error in the overall verdict")
            unreadable += 1
            continue
        verdicts.append(_verdict(r, i, problems))
    worked_out = _overall(verdicts, unreadable)
    status = doc.get("status")
    if not isinstance(status, str):
        if status is not None:
            problems.append("the overall 'status' is not a string: worked out from the rules")
        status = worked_out
    elif status == "NoIssuesFound" and worked_out != status:  # (a pass its own rules do not support)
        problems.append(f"the overall 'status' says NoIssuesFound, its rules say {worked_out}: {worked_out} shown")
        status = worked_out
    out = RuleResults(source=source, status=_text(status, 100), verdicts=verdicts, problems=problems)
    for key in ("started", "finished"):
        if doc.get(key) is not None:
            when = _time(doc[key])
            if when is None:
                problems.append(f"'{key}' is not a time (seconds since 1970): {_text(doc[key], 60)}")
            setattr(out, key, when)
    out.last_step = _int(doc.get("last_step"))
    out.steps_evaluated = _int(doc.get("steps_evaluated"))
    if isinstance(doc.get("training_ended"), bool):
        out.training_ended = doc["training_ended"]
    if isinstance(doc.get("not_final"), str):
        out.not_final = _text(doc["not_final"])
    if isinstance(doc.get("trial"), str):
        out.trial = _text(doc["trial"], MAX_PATH)
    return out


def _overall(verdicts: List[Verdict], unreadable: int = 0) -> str:
    """The run's verdict from its rules' (as the rule runner works it out). A status this version does not
    know, or an entry that could not be read, counts as Error: it used to count as nothing, and a file
    whose only rule said "Passed" (or [1]) read as NoIssuesFound."""
    statuses = {v.status if v.status in STATUSES else "Error" for v in verdicts} - {"NotApplicable"}
    if unreadable:
        statuses.add("Error")
    if verdicts and not statuses:
        return "NotEvaluated"
    for s in ("Error", "IssuesFound", "NotEvaluated", "InProgress"):
        if s in statuses:
            return s
    return "NoIssuesFound" if verdicts else "NotEvaluated"


def _verdict(r: dict, index: int, problems: List[str]) -> Verdict:
    name = r.get("name")
    if not isinstance(name, str) or not name:
        name = f"rule {index + 1}"
        problems.append(f"rule entry {index + 1} has no name")
    name = _text(name, 200)
    status = r.get("status")
    if not isinstance(status, str):
        problems.append(f"{name}: 'status' is not a string: counted as Error in the overall verdict")
        status = "?"
    elif status not in STATUSES:
        problems.append(f"{name}: status {_text(status, 100)!r} is not one this version of smdebug knows: "
                        "counted as Error in the overall verdict")
    v = Verdict(name=name, status=_text(status, 100))
    if isinstance(r.get("pack"), str):
        v.pack = _text(r["pack"], 200)
    params = r.get("params")
    if isinstance(params, dict):
        v.params = [(_text(k, 200), _text(val, 500)) for k, val in params.items()]
    elif params is not None:
        problems.append(f"{name}: 'params' is a {type(params).__name__}, not an object: not shown")
    findings = r.get("findings")
    if findings is None:
        findings = []
    elif not isinstance(findings, list):
        problems.append(f"{name}: 'findings' is a {type(findings).__name__}, not a list: not shown")
        findings = []
    bad = 0
    if len(findings) > MAX_FINDINGS_PER_RULE:
        problems.append(f"{name}: {len(findings)} findings listed: only the first {MAX_FINDINGS_PER_RULE} are shown "
                        "(all are counted)")
    for f in findings[:MAX_FINDINGS_PER_RULE]:
        finding = _finding(f, name)
        if finding is None:
            bad += 1
        else:
            v.findings.append(finding)
    if bad:
        problems.append(f"{name}: {bad} of {len(findings)} findings are not objects with an integer 'step': left out")
    total = r.get("findings_total")
    if total is None:
        v.findings_total = len(findings)
    elif _int(total) is None or _int(total) < 0:
        problems.append(f"{name}: 'findings_total' is not a count ({_text(total, 60)}): counted the listed findings")
        v.findings_total = len(findings)
    else:
        v.findings_total = max(_int(total), len(findings))
    v.steps_evaluated = _int(r.get("steps_evaluated"))
    if r.get("error") is not None:
        v.error = _text(r["error"])
    if r.get("detail") is not None:
        v.detail = _text(r["detail"])
    return v


def _finding(f: Any, rule: str) -> Optional[Finding]:
    if not isinstance(f, dict):
        return None
    step = _int(f.get("step"))
    if step is None:
        return None
    mode = f.get("mode") if isinstance(f.get("mode"), str) else None
    reason = f.get("reason")
    tensor = f.get("tensor") if isinstance(f.get("tensor"), str) else None
    return Finding(rule=rule, step=step, mode=_text(mode, 40) if mode else None, mode_step=_int(f.get("mode_step")),
                   reason=_text(reason) if reason is not None else "condition met", tensor=tensor)


def load(trial, path: Optional[str] = None) -> Optional[RuleResults]:
    """The results at ``path`` (local or s3://), else the run's own rule_results.json, else None, with
    what in them does not fit ``trial`` in ``mismatch``.

    Raises RuleResultsError for a ``path`` that cannot be used. A rule_results.json in the run that
    cannot be used is no error of the command: its ``unusable`` says why, and the page shows it.
    """
    from smdebug.cli.report.origin import mismatches

    res = parse(read_text(path), path) if path else _own(trial)
    if res is not None and res.unusable is None:
        res.mismatch = mismatches(res.trial, res.last_step, res.steps_evaluated, trial)
    return res


def _own(trial) -> Optional[RuleResults]:
    """The run's own rule_results.json, if it has one."""
    from smdebug.cli._common import MAX_DOCUMENT_BYTES

    source = trial.storage.full_path(RULE_RESULTS_FILE)
    try:
        if not trial.storage.exists(RULE_RESULTS_FILE):
            return None
        # (a regular file only, of a size a document can have: read through the run's storage, which
        # follows no link inside the run and never blocks on a FIFO)
        text = trial.storage.read_limited(RULE_RESULTS_FILE, MAX_DOCUMENT_BYTES).decode("utf-8")
    except Exception as e:  # noqa: BLE001 - an unreadable file in the run: said in the page
        return _unusable(source, f"cannot read {source}: {e}")
    try:
        return parse(text, source)
    except RuleResultsError as e:
        return _unusable(source, str(e))


def _unusable(source: str, why: str) -> RuleResults:
    return RuleResults(source=source, status="Error", verdicts=[], problems=[why], unusable=why)
