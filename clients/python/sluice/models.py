"""What the server's JSON becomes: small dataclasses, each keeping the whole answer in ``raw``.

Fields follow docs/api.md ("JobView"); a field an older server does not send keeps its default,
and fields a newer server adds are in ``raw``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional

#: States of a job that has ended (docs/api.md "States").
FINISHED_STATES = ("succeeded", "failed", "cancelled", "rejected")
#: States of a job that may still run.
LIVE_STATES = ("pending", "running")


def _opt_float(v: Any) -> Optional[float]:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _opt_int(v: Any) -> Optional[int]:
    return int(v) if isinstance(v, int) and not isinstance(v, bool) else None


@dataclass
class Placement:
    """Where one pod of a job runs: its node and GPU indices."""

    pod: int
    node: str
    gpus: List[int] = field(default_factory=list)

    @classmethod
    def from_json(cls, j: Mapping[str, Any]) -> "Placement":
        return cls(int(j.get("pod", 0)), str(j.get("node", "")),
                   [int(g) for g in j.get("gpus") or [] if isinstance(g, int)])


@dataclass
class PodExit:
    """How one pod's process ended."""

    pod: int
    exit_code: int
    signal: int = 0
    reason: str = ""

    @classmethod
    def from_json(cls, j: Mapping[str, Any]) -> "PodExit":
        return cls(int(j.get("pod", 0)), int(j.get("exit_code", 0)), int(j.get("signal", 0)),
                   str(j.get("reason", "")))


@dataclass
class Job:
    """One job as the server shows it (``GET /v1/jobs/{id}``). Times are Unix seconds."""

    id: int
    name: str = ""
    namespace: str = ""
    queue: str = ""
    cluster_queue: str = ""
    state: str = ""
    user: str = ""
    priority_class: str = ""
    priority: int = 0
    preemptible: bool = False
    interactive: bool = False
    started: bool = False
    submit_time: Optional[float] = None
    admit_time: Optional[float] = None
    start_time: Optional[float] = None
    end_time: Optional[float] = None
    pods: int = 0
    gpus: int = 0
    gpu_milli: int = 0
    command: List[str] = field(default_factory=list)
    working_dir: str = ""
    flavors: List[str] = field(default_factory=list)
    placement: List[Placement] = field(default_factory=list)
    reason: Optional[str] = None
    exit_code: Optional[int] = None
    preemptions: int = 0
    pod_exits: List[PodExit] = field(default_factory=list)
    # With ``start=True``, a pending job's forecast (docs/api.md, ``predicted_start``):
    # {"status": "estimated", "time": ..., "in_s": ..., "assumes": ...}, or status "never",
    # "beyond-bound", "held", "next-cycle"; None otherwise.
    predicted_start: Optional[Dict[str, Any]] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, j: Mapping[str, Any]) -> "Job":
        return cls(
            id=int(j["id"]), name=str(j.get("name") or ""),
            namespace=str(j.get("namespace") or ""), queue=str(j.get("queue") or ""),
            cluster_queue=str(j.get("cluster_queue") or ""), state=str(j.get("state") or ""),
            user=str(j.get("user") or ""), priority_class=str(j.get("priority_class") or ""),
            priority=_opt_int(j.get("priority")) or 0, preemptible=bool(j.get("preemptible")),
            interactive=bool(j.get("interactive")), started=bool(j.get("started")),
            submit_time=_opt_float(j.get("submit_time")),
            admit_time=_opt_float(j.get("admit_time")),
            start_time=_opt_float(j.get("start_time")), end_time=_opt_float(j.get("end_time")),
            pods=_opt_int(j.get("pods")) or 0, gpus=_opt_int(j.get("gpus")) or 0,
            gpu_milli=_opt_int(j.get("gpu_milli")) or 0,
            command=[str(c) for c in j.get("command") or []],
            working_dir=str(j.get("working_dir") or ""),
            flavors=[str(f) for f in j.get("flavors") or []],
            placement=[Placement.from_json(p) for p in j.get("placement") or []],
            reason=j.get("reason") if isinstance(j.get("reason"), str) else None,
            exit_code=_opt_int(j.get("exit_code")),
            preemptions=_opt_int(j.get("preemptions")) or 0,
            pod_exits=[PodExit.from_json(p) for p in j.get("pod_exits") or []],
            predicted_start=(dict(j["predicted_start"])
                             if isinstance(j.get("predicted_start"), dict) else None),
            raw=dict(j))

    @property
    def finished(self) -> bool:
        """True once the job has ended (succeeded, failed, cancelled or rejected)."""
        return self.state in FINISHED_STATES

    @property
    def nodes(self) -> List[str]:
        """The distinct nodes its pods run (or ran) on, in pod order."""
        out: List[str] = []
        for p in self.placement:
            if p.node not in out:
                out.append(p.node)
        return out


class JobList(List[Job]):
    """A list of jobs, newest first; ``truncated`` is True when more jobs matched than the
    limit the server applied (raise ``limit`` or narrow the filters)."""

    truncated: bool = False


@dataclass
class Submitted:
    """One accepted job of a submission."""

    id: int
    name: str
    queue: str

    @classmethod
    def from_json(cls, j: Mapping[str, Any]) -> "Submitted":
        return cls(int(j["id"]), str(j.get("name") or ""), str(j.get("queue") or ""))


@dataclass
class Explanation:
    """Why a job is where it is, in the scheduler's words; ``str()`` gives the text."""

    id: int
    state: str
    explanation: str

    def __str__(self) -> str:
        return self.explanation

    @classmethod
    def from_json(cls, j: Mapping[str, Any]) -> "Explanation":
        return cls(int(j["id"]), str(j.get("state") or ""), str(j.get("explanation") or ""))


@dataclass
class PlanResult:
    """What one scheduling cycle would decide (``sluice plan --json``), as lists of dicts:
    ``admitted`` (``job``, ``queue``, ``flavors``, ``borrowing``, ``placement``), ``preempted``
    (``victim``, ``preemptor``, ``reason``, ``grace_s``), ``rejected`` and ``pending`` (``job``,
    ``queue``, ``reason``); ``now_s`` is the cycle's time."""

    admitted: List[Dict[str, Any]] = field(default_factory=list)
    preempted: List[Dict[str, Any]] = field(default_factory=list)
    rejected: List[Dict[str, Any]] = field(default_factory=list)
    pending: List[Dict[str, Any]] = field(default_factory=list)
    now_s: Optional[float] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, j: Mapping[str, Any]) -> "PlanResult":
        def rows(key: str) -> List[Dict[str, Any]]:
            v = j.get(key)
            return [dict(x) for x in v if isinstance(x, dict)] if isinstance(v, list) else []
        return cls(rows("admitted"), rows("preempted"), rows("rejected"), rows("pending"),
                   _opt_float(j.get("now_s")), dict(j))

    def admitted_jobs(self) -> List[str]:
        """The names of the jobs the cycle would admit."""
        return [str(a.get("job")) for a in self.admitted]

