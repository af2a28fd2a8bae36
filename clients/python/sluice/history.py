"""History and usage: jobs past and present as accounting rows (Slurm's ``sacct``), and
GPU-hours per period (chargeback).

A server with ``GET /v1/history`` and ``GET /v1/usage`` (docs/api.md "History") answers from
its event log, so its rows cover jobs dropped from memory and earlier runs of the server. An
older server lacks them (404): ``history`` then derives the rows from the jobs it still holds
(``GET /v1/jobs``), counting each job's last run only, and ``usage`` says it is not there.
"""
from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Union

from .models import LIVE_STATES, Job, _opt_float, _opt_int

#: A point in time: Unix seconds, a datetime (a naive one is local time), or what the server
#: reads: a UTC date or date-time (``"2026-12-01"``, ``"2026-12-01T10:00:00Z"``).
When = Union[float, int, datetime.datetime, str]


@dataclass
class HistoryRecord:
    """One job as an accounting row (the API's HistoryRow). Times are Unix seconds.

    ``elapsed_s``: first start to end (to now while it runs; 0 if it never started);
    ``gpu_hours``: its GPUs times the time of its runs; ``exit_code``: the first failing pod's,
    0 for success, None when no pod exited; ``reason``: how it ended; ``raw``: the whole row."""

    id: int
    name: str = ""
    user: str = ""
    namespace: str = ""
    queue: str = ""
    state: str = ""
    submit_time: Optional[float] = None
    start_time: Optional[float] = None
    end_time: Optional[float] = None
    elapsed_s: float = 0.0
    gpus: float = 0.0
    gpu_hours: float = 0.0
    exit_code: Optional[int] = None
    preemptions: int = 0
    reason: str = ""
    array_job: Optional[int] = None
    array_task: Optional[int] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def wait_s(self) -> Optional[float]:
        """Submission to first start; None when it never started."""
        if self.start_time is None or self.submit_time is None:
            return None
        return self.start_time - self.submit_time

    @classmethod
    def from_json(cls, j: Mapping[str, Any]) -> "HistoryRecord":
        return cls(
            id=int(j["id"]), name=str(j.get("name") or ""), user=str(j.get("user") or ""),
            namespace=str(j.get("namespace") or ""), queue=str(j.get("queue") or ""),
            state=str(j.get("state") or ""), submit_time=_opt_float(j.get("submit_time")),
            start_time=_opt_float(j.get("start_time")), end_time=_opt_float(j.get("end_time")),
            elapsed_s=_opt_float(j.get("elapsed_s")) or 0.0,
            gpus=_opt_float(j.get("gpus")) or 0.0,
            gpu_hours=_opt_float(j.get("gpu_hours")) or 0.0,
            exit_code=_opt_int(j.get("exit_code")),
            preemptions=_opt_int(j.get("preemptions")) or 0,
            reason=str(j.get("reason") or ""), array_job=_opt_int(j.get("array_job")),
            array_task=_opt_int(j.get("array_task")), raw=dict(j))

    @classmethod
    def from_job(cls, job: Job, now: float) -> "HistoryRecord":
        """The row of a JobView (a server without /v1/history): its last run only."""
        began = job.start_time if job.start_time is not None else job.admit_time
        end = job.end_time if job.end_time is not None else (
            now if job.state in LIVE_STATES else None)
        elapsed = max(end - began, 0.0) if began is not None and end is not None else 0.0
        gpus = job.gpu_milli / 1000.0
        return cls(job.id, job.name, job.user, job.namespace, job.queue, job.state,
                   job.submit_time, began, job.end_time, elapsed, gpus, gpus * elapsed / 3600.0,
                   job.exit_code, job.preemptions, job.reason or "", raw=dict(job.raw))


class HistoryList(List[HistoryRecord]):
    """Rows, newest job first; ``truncated`` is True when more matched than ``limit``;
    ``from_event_log`` is False when the server had no /v1/history and the rows were derived
    from the jobs it holds (their last runs only)."""

    truncated: bool = False
    from_event_log: bool = True


@dataclass
class UsageRow:
    """GPU-hours of one period and group (``GET /v1/usage``): ``group`` is the namespace or
    the user (as asked with ``by``), ``jobs`` the jobs that ran in that period."""

    period: str
    group: str
    gpu_hours: float
    jobs: int
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, j: Mapping[str, Any], by: str) -> "UsageRow":
        return cls(str(j.get("period") or ""), str(j.get(by) or ""),
                   _opt_float(j.get("gpu_hours")) or 0.0, _opt_int(j.get("jobs")) or 0, dict(j))


def query(user: Optional[str], namespace: Optional[str], queue: Optional[str],
          name: Optional[str], state: Union[str, Iterable[str], None], since: Optional[When],
          until: Optional[When], limit: Optional[int]) -> Dict[str, Any]:
    """The query string of /v1/history and /v1/usage."""
    states = state if state is None or isinstance(state, str) else ",".join(state)
    return {"user": user, "namespace": namespace, "queue": queue, "name": name,
            "state": states, "since": _param(since), "until": _param(until), "limit": limit}


def derived(jobs: List[Job], q: Mapping[str, Any], now: float) -> List[HistoryRecord]:
    """The rows of a server without /v1/history, with its window rule: a job that lived in
    [since, until] (submitted by ``until``, not ended before ``since``) and has the name."""
    lo, hi = unix(q.get("since")), unix(q.get("until"))
    out = []
    for job in jobs:
        if q.get("name") and job.name != q["name"]:
            continue
        if hi is not None and job.submit_time is not None and job.submit_time > hi:
            continue
        if lo is not None and job.end_time is not None and job.end_time < lo:
            continue
        out.append(HistoryRecord.from_job(job, now))
    return out


def unix(v: Optional[When]) -> Optional[float]:
    """Unix seconds of a When (a date without a zone is UTC, as the server reads it)."""
    if v is None:
        return None
    if isinstance(v, datetime.datetime):
        return v.timestamp()
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            pass
        try:
            t = datetime.datetime.fromisoformat(v.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError("%r is neither Unix seconds nor a date (2026-12-01, "
                             "2026-12-01T10:00:00Z)" % v) from None
        if t.tzinfo is None:
            t = t.replace(tzinfo=datetime.timezone.utc)
        return t.timestamp()
    return float(v)


def _param(v: Optional[When]) -> Optional[str]:
    if v is None:
        return None
    if isinstance(v, str):
        unix(v)  # refuse what the server would refuse, before sending
        return v
    return repr(unix(v))

