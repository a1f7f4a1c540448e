"""StopTraining: end the training job that writes the trial."""

from __future__ import annotations

from typing import Optional

from smdebug.core.logger import get_logger
from smdebug.core.stop_signal import write_stop_signal

logger = get_logger()

# Runs this process already asked to stop, and which rule did: when several rules fire, the first one's
# signal (the earliest problem) is what the training job reports, not whichever wrote last.
_ASKED = {}


class StopTrainingAction:
    """Writes the stop signal into the trial's directory; every smdebug hook writing there stops at its
    next step boundary. With ``training_job_prefix`` it also stops the matching SageMaker training job
    (only if exactly one running job matches, so a loose prefix never stops someone else's job)."""

    def __init__(self, rule_name: str, trial, training_job_prefix: Optional[str] = None):
        self.rule_name = rule_name
        self.trial = trial
        self.training_job_prefix = training_job_prefix
        self.stopped = False

    # smdebug 1.0.x's attribute names, read by scripts written for it.
    _training_job_prefix = property(lambda self: self.training_job_prefix)
    _rule_name = property(lambda self: self.rule_name)

    def invoke(self, step: int, reason: Optional[str] = None) -> None:
        if self.stopped:
            return
        self.stopped = True
        if self.trial is not None:
            first = _ASKED.setdefault(self.trial.path, self.rule_name)
            if first != self.rule_name:  # said once, by the first rule: the others only in debug logs
                logger.debug("%s: %s already asked the job writing %s to stop", self.rule_name, first,
                             self.trial.path)
            else:
                write_stop_signal(self.trial.path, self.rule_name, step, reason)
                logger.warning("%s: asked the training job writing %s to stop (step %s)", self.rule_name,
                               self.trial.path, step)
        if self.training_job_prefix:
            self._stop_sagemaker_job()

    def _stop_sagemaker_job(self) -> None:
        from smdebug.rules.action.aws import client

        sagemaker = client("sagemaker")
        names, token = [], None
        for _ in range(50):  # the newest jobs come first; 50 pages is far more than a prefix should match
            kwargs = {"NameContains": self.training_job_prefix, "StatusEquals": "InProgress",
                      "SortBy": "CreationTime", "SortOrder": "Descending"}
            if token:
                kwargs["NextToken"] = token
            page = sagemaker.list_training_jobs(**kwargs)
            names += [j["TrainingJobName"] for j in page.get("TrainingJobSummaries", [])
                      if j["TrainingJobName"].startswith(self.training_job_prefix)]
            token = page.get("NextToken")
            if not token:
                break
        if len(names) != 1:
            logger.error("%s: not stopping any SageMaker job: %d running jobs match prefix %r", self.rule_name,
                         len(names), self.training_job_prefix)
            return
        sagemaker.stop_training_job(TrainingJobName=names[0])
        logger.warning("%s: stopped SageMaker training job %s", self.rule_name, names[0])
