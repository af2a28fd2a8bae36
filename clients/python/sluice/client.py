"""The client: one object per control plane, one method per thing a user does.

    >>> from sluice import Client
    >>> c = Client("http://gpu-head:7070", token="...")      # or $SLUICE_SERVER, $SLUICE_TOKEN
    >>> job = c.run(["python", "train.py"], queue="train", gpus=2, walltime_s=3600)
    >>> c.wait(job.id, until=("running",)).nodes
    >>> for chunk in c.follow_logs(job.id): print(chunk, end="")

The HTTP API it speaks is docs/api.md; every method's failure is a SluiceError (errors.py).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from typing import (Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple,
                    Union)

from ._http import DEFAULT_SERVER, Transport, error_of
from .errors import InvalidResponse, NotFound, PlanFailed
from .history import HistoryList, HistoryRecord, UsageRow, When
from .history import derived as history_rows
from .history import query as history_query
from .history import unix
from .models import FINISHED_STATES, LIVE_STATES, Explanation, Job, JobList, PlanResult, Submitted

#: What ``submit`` takes: YAML or JSON text (several documents separated by ``---``), one job
#: document as a dict, or a list of them.
Jobs = Union[str, bytes, Mapping[str, Any], Sequence[Mapping[str, Any]]]


def make_job(command: Sequence[str], *, queue: Optional[str] = None,
             namespace: Optional[str] = None, name: Optional[str] = None,
             gpus: Optional[int] = None, gang: int = 1, gpu_fraction: Optional[str] = None,
             cpu: Optional[str] = None, memory: Optional[str] = None,
             priority_class: Optional[str] = None, walltime_s: Optional[float] = None,
             working_dir: Optional[str] = None, env: Optional[Mapping[str, str]] = None,
             interactive: Optional[bool] = None,
             preemptible: Optional[bool] = None) -> Dict[str, Any]:
    """A sluice ``Job`` document (the single-pod-set shorthand of docs/config.md), as
    ``sluice run`` builds it: ``gang`` pods of ``gpus`` GPUs each (a gang gets torchrun's
    variables), ``gpu_fraction`` a share of one GPU (``"0.5"`` or ``"500m"``), ``cpu`` and
    ``memory`` per pod (``"8"``, ``"64Gi"``), ``walltime_s`` the run-time limit. Unlike
    ``sluice run`` it sends no environment and no directory unless given."""
    if isinstance(command, str) or not command or not all(isinstance(c, str) for c in command):
        raise ValueError("command must be a non-empty list of strings, e.g. ['python', 'train.py']")
    if gang < 1:
        raise ValueError("gang must be at least 1")
    if not (gpus or gpu_fraction or cpu or memory):
        raise ValueError("the job requests nothing: give gpus (or gpu_fraction, cpu, memory)")
    spec: Dict[str, Any] = {"pods": gang}
    if queue:
        spec["queue"] = queue
    if gpus:
        spec["gpus"] = gpus
    if gpu_fraction:
        spec["gpuFraction"] = str(gpu_fraction)
        spec.setdefault("gpus", 1)
    if cpu:
        spec["cpu"] = str(cpu)
    if memory:
        spec["memory"] = str(memory)
    if priority_class:
        spec["priorityClassName"] = priority_class
    if walltime_s is not None:
        if walltime_s <= 0:
            raise ValueError("walltime_s must be positive")
        spec["walltime"] = "%ds" % max(1, round(walltime_s))
    if interactive is not None:
        spec["interactive"] = interactive
    if preemptible is not None:
        spec["preemptible"] = preemptible
    spec["command"] = list(command)
    if env:
        spec["env"] = dict(env)
    if working_dir:
        spec["workingDir"] = working_dir
    if gang > 1:
        spec["distributedEnv"] = "torch"
    metadata: Dict[str, Any] = {"name": name or _name_from(command)}
    if namespace:
        metadata["namespace"] = namespace
    return {"apiVersion": "sluice.dev/v1alpha1", "kind": "Job", "metadata": metadata,
            "spec": spec}


class Client:
    """A sluice control plane (``sluice serve`` or ``sluice up``).

    Args:
        server: ``"http://host:port"`` (``"host:port"`` works), several comma-separated or as
            a list (replicas, docs/ha.md: a request goes to the first that answers and leads,
            and that one is asked first next time). Default ``$SLUICE_SERVER``, else
            ``http://127.0.0.1:7070``.
        token: bearer token (docs/api.md "Auth"); default ``$SLUICE_TOKEN``; none when the
            server has no tokens.
        timeout_s: how long to wait for an answer (logs and explanations may take the server
            a moment: it asks the node's agent).
        connect_timeout_s: how long to wait for a connection before trying the next server.

    Raises ConnectionFailed at once for a URL that is not ``http(s)://host[:port]``.
    """

    def __init__(self, server: Union[str, Sequence[str], None] = None,
                 token: Optional[str] = None, *, timeout_s: float = 60.0,
                 connect_timeout_s: float = 5.0) -> None:
        if server is None:
            server = os.environ.get("SLUICE_SERVER") or DEFAULT_SERVER
        if token is None:
            token = os.environ.get("SLUICE_TOKEN") or None
        self._http = Transport(server, token, connect_timeout_s, timeout_s)

    def __repr__(self) -> str:
        return "Client(%r)" % ",".join(self.servers)

    @property
    def servers(self) -> List[str]:
        """The server URLs, normalized, in the order given."""
        return list(self._http.servers)

    @property
    def leader(self) -> str:
        """The server that answered last: the one asked first next time."""
        return self._http.leader

    # --- jobs ---------------------------------------------------------------------------

    def submit(self, jobs: Jobs) -> List[Submitted]:
        """Submits job documents (sluice ``Job``, ``v1 Pod`` or ``batch/v1 Job``; docs/config.md):
        YAML or JSON text, one document as a dict, or a list of dicts. All-or-nothing: one bad
        document refuses the whole submission (BadRequest with the document's line and field;
        NotFound for an unknown queue; TooManyRequests when a pending cap is full)."""
        body, ctype = _submission_body(jobs)
        j = self._http.call_json("POST", "/v1/jobs", body=body, content_type=ctype)
        return [Submitted.from_json(x) for x in _list_field(j, "jobs")]

    def submit_file(self, path: Union[str, "os.PathLike[str]"]) -> List[Submitted]:
        """Submits the documents of one YAML or JSON file (as ``sluice submit FILE``)."""
        with open(path, "rb") as f:
            return self.submit(f.read())

    def run(self, command: Sequence[str], **options: Any) -> Submitted:
        """Submits one command as a job; ``options`` are those of :func:`make_job`
        (queue, namespace, name, gpus, gang, gpu_fraction, cpu, memory, priority_class,
        walltime_s, working_dir, env, interactive, preemptible)."""
        return self.submit(make_job(command, **options))[0]

    def jobs(self, state: Union[str, Iterable[str], None] = None, *, queue: Optional[str] = None,
             namespace: Optional[str] = None, user: Optional[str] = None,
             limit: Optional[int] = None, start: bool = False) -> JobList:
        """Jobs, newest first, filtered by state (``"pending"``, or several), LocalQueue,
        namespace and submitter: at most ``limit`` (default 500), fetched in pages of at most
        1000 (the server's page); the list's ``truncated`` says when more matched. ``start``:
        pending jobs carry their predicted start (``Job.predicted_start``, as
        ``sluice jobs --start``)."""
        want = 500 if limit is None else limit
        out = JobList()
        after = None
        while True:
            query = {"state": _csv(state), "queue": queue, "namespace": namespace, "user": user,
                     "limit": None if limit is None and after is None else want - len(out),
                     "start": 1 if start else None, "continue": after}
            j = self._http.call_json("GET", "/v1/jobs", query=query)
            out.extend(Job.from_json(x) for x in _list_field(j, "jobs"))
            out.truncated = bool(isinstance(j, dict) and j.get("truncated"))
            after = j.get("continue") if isinstance(j, dict) else None
            if not out.truncated or not isinstance(after, str) or len(out) >= want:
                return out

    def job(self, job_id: int, *, start: bool = False) -> Job:
        """One job: its state, placement, pending reason, exit codes (``start``: and, when
        pending, its predicted start)."""
        j = self._http.call_json("GET", "/v1/jobs/%d" % _job_id(job_id),
                                 query={"start": 1 if start else None})
        return Job.from_json(_object(j, "job"))

    def wait(self, job_id: int, until: Iterable[str] = FINISHED_STATES, *,
             timeout_s: Optional[float] = None, poll_s: float = 0.5) -> Job:
        """Polls the job until its state is one of ``until`` (default: ended), or it has ended
        (an ended job never reaches another state). ``until=("running",)`` waits for its start.
        Raises TimeoutError after ``timeout_s``."""
        wanted = set(until)
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:  # bounded by the job's end or the deadline
            job = self.job(job_id)
            if job.state in wanted or job.finished:
                return job
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError("job %d is still %s after %g s" % (job.id, job.state,
                                                                      timeout_s or 0))
            time.sleep(poll_s)

    def explain(self, job_id: int) -> Explanation:
        """Why the job is where it is, in words (``str()`` of the answer is the text)."""
        j = self._http.call_json("GET", "/v1/jobs/%d/explain" % _job_id(job_id))
        return Explanation.from_json(_object(j, "explanation"))

    def cancel(self, job_id: int) -> Job:
        """Cancels the job (a running one is stopped: signal, grace, kill); returns it."""
        j = self._http.call_json("POST", "/v1/jobs/%d/cancel" % _job_id(job_id))
        return Job.from_json(_object(j, "job"))

    # --- logs ---------------------------------------------------------------------------

    def logs(self, job_id: int, pod: int = 0, tail_bytes: Optional[int] = None) -> str:
        """A pod's stdout and stderr as its agent captured them. One answer holds at most the
        server's ``--log-max-bytes``: a longer log comes back as its head and its end with a
        line ``[... N bytes cut ...]`` between; ``tail_bytes`` asks for the end only.
        ServiceUnavailable (503) when the node is NotReady, GatewayTimeout (504) when its
        agent does not answer."""
        query = {"pod": _non_negative(pod, "pod"),
                 "tail_bytes": tail_bytes if tail_bytes and tail_bytes > 0 else None}
        return self._http.call("GET", "/v1/jobs/%d/logs" % _job_id(job_id),
                               query=query).text()

    def follow_logs(self, job_id: int, pod: int = 0, tail_bytes: Optional[int] = None, *,
                    poll_s: float = 1.0, timeout_s: Optional[float] = None) -> Iterator[str]:
        """Yields what the pod writes, as ``sluice logs -f`` prints it, until the job has
        ended and its last bytes are out: the log so far first (or its last ``tail_bytes``),
        then what it gains, polled every ``poll_s`` from the byte where the last answer ended
        (``offset``). Waits while the job is pending; a pod that runs again (after a
        preemption) starts a new log, announced by a line ``[... the pod started again: a new
        log ...]``. A node briefly away is waited for while the job lives. Raises
        TimeoutError after ``timeout_s``."""
        follower = _LogFollower(self, _job_id(job_id), _non_negative(pod, "pod"), tail_bytes)
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:  # bounded by the job's end or the deadline
            chunks, live = follower.step()
            yield from chunks
            if chunks:
                continue  # more may be waiting: an answer holds at most the server's cap
            if not live:
                return
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError("job %d still runs after %g s of following its log" % (
                    job_id, timeout_s or 0))
            time.sleep(poll_s)

    # --- history ---------------------------------------------------------------------

    def history(self, *, user: Optional[str] = None, namespace: Optional[str] = None,
                queue: Optional[str] = None, name: Optional[str] = None,
                state: Union[str, Iterable[str], None] = None, since: Optional[When] = None,
                until: Optional[When] = None, limit: Optional[int] = None) -> HistoryList:
        """Jobs past and present as accounting rows (``sacct``; ``GET /v1/history``), newest
        first: times, elapsed, GPUs, GPU-hours, exit code, preemptions, how it ended.
        Filters: submitter, namespace, LocalQueue, job name, states, and a window: jobs that
        lived in [``since``, ``until``] (submitted by ``until``, not ended before ``since``;
        Unix seconds, a datetime, or a UTC date such as ``"2026-12-01"``). ``limit``: at most
        that many rows (the server's default 1000); ``truncated`` says when more matched.

        A server without /v1/history (older than issue 17): the rows come from the jobs it
        still holds (``GET /v1/jobs``, the last ``--keep-finished-jobs``), each job's last run
        only, and the list's ``from_event_log`` is False."""
        q = history_query(user, namespace, queue, name, state, since, until, limit)
        try:
            j = self._http.call_json("GET", "/v1/history", query=q)
        except NotFound as e:
            if not e.error.startswith("no such endpoint"):
                raise
            return self._history_from_jobs(q)
        out = HistoryList(HistoryRecord.from_json(x) for x in _list_field(j, "jobs"))
        out.truncated = bool(isinstance(j, dict) and j.get("truncated"))
        return out

    def _history_from_jobs(self, q: Dict[str, Any]) -> HistoryList:
        jobs = self.jobs(q["state"], queue=q["queue"], namespace=q["namespace"], user=q["user"],
                         limit=q["limit"])
        out = HistoryList(history_rows(jobs, q, time.time()))
        out.truncated, out.from_event_log = jobs.truncated, False
        return out

    def usage(self, period: str = "month", by: str = "namespace", *,
              user: Optional[str] = None, namespace: Optional[str] = None,
              queue: Optional[str] = None, state: Union[str, Iterable[str], None] = None,
              since: Optional[When] = None, until: Optional[When] = None) -> List[UsageRow]:
        """GPU-hours per ``period`` (``day``, ``week`` from Monday, ``month``, ``all``; UTC) and
        per ``by`` (``namespace`` or ``user``) over the history's rows (``GET /v1/usage``): a
        run spanning a period boundary is split at it, running jobs count up to now. Sorted by
        period, then group. NotFound on a server without it (older than issue 17)."""
        if period not in ("day", "week", "month", "all"):
            raise ValueError("period must be day, week, month or all, not %r" % (period,))
        if by not in ("namespace", "user"):
            raise ValueError("by must be namespace or user, not %r" % (by,))
        q = history_query(user, namespace, queue, None, state, since, until, None)
        q.update(period=period, by=by)
        j = self._http.call_json("GET", "/v1/usage", query=q)
        return [UsageRow.from_json(x, by) for x in _list_field(j, "usage")]

    # --- cluster ------------------------------------------------------------------------

    def queues(self) -> List[Dict[str, Any]]:
        """Per ClusterQueue: cohort, pending per priority class, admitted, usage against
        nominal quota, borrowed, DRF share, fairness debt (``GET /v1/queues``)."""
        return _list_field(self._http.call_json("GET", "/v1/queues"), "queues")

    def local_queues(self) -> List[Dict[str, Any]]:
        """The LocalQueues this caller may submit to, with their ClusterQueue's pending and
        running jobs (``GET /v1/localqueues``)."""
        return _list_field(self._http.call_json("GET", "/v1/localqueues"), "queues")

    def nodes(self) -> List[Dict[str, Any]]:
        """Per node: ready, last heartbeat, GPUs and the jobs on them (``GET /v1/nodes``)."""
        return _list_field(self._http.call_json("GET", "/v1/nodes"), "nodes")

    def state(self) -> str:
        """The live state as YAML (``GET /v1/state``, an admin token where tokens are on): the
        configuration in force, running jobs where they run, pending jobs. ``sluice plan
        --config FILE`` replays it offline; ``sluice snapshot`` prints the same."""
        return self._http.call("GET", "/v1/state").text()

    def plan(self, jobs: Optional[Jobs] = None, *, now: Optional[When] = None,
             sluice_bin: Optional[str] = None, timeout_s: float = 300.0) -> PlanResult:
        """What would happen if ``jobs`` were submitted now (``sluice plan --server``): where
        each would be admitted, whom it would preempt, why it would wait. Nothing is
        submitted.

        The cycle is the scheduler's own C++ code, so this fetches the live state (as
        :meth:`state`, through this client's servers and token) and runs ``sluice plan
        --config STATE JOBS --json`` on it: ``sluice_bin``, else ``$SLUICE_BIN``, else
        ``sluice`` on the PATH. ``now`` defaults to the server's time in the state.
        Raises PlanFailed when the binary is missing or refuses the jobs."""
        binary = _find_sluice(sluice_bin)
        state = self.state()
        with tempfile.TemporaryDirectory(prefix="sluice-plan-") as tmp:
            argv = [binary, "plan", "--json", "--config", _write(tmp, "state.yaml", state)]
            if jobs is not None:
                argv.append(_write(tmp, "jobs.yaml", _plan_documents(jobs)))
            if now is not None:
                argv += ["--now", repr(unix(now))]
            return _run_plan(argv, timeout_s)


class _LogFollower:
    """One ``follow_logs``: the byte offset printed so far and one poll at a time."""

    NEW_RUN = "[... the pod started again: a new log ...]\n"

    def __init__(self, client: Client, job_id: int, pod: int, tail: Optional[int]) -> None:
        self.client, self.job_id, self.pod, self.tail = client, job_id, pod, tail
        self.offset = -1  # -1: nothing yielded yet (the first answer is the capped view)
        self.decoder = _Utf8()

    def step(self) -> Tuple[List[str], bool]:
        """One poll: (text gained, whether the job still lives)."""
        job = self.client.job(self.job_id)
        live = job.state in LIVE_STATES
        if len(job.placement) <= self.pod:
            return [], live  # pending: no pod to read yet
        query: Dict[str, Any] = {"pod": self.pod}
        if self.offset >= 0:
            query["offset"] = self.offset
        elif self.tail and self.tail > 0:
            query["tail_bytes"] = self.tail
        transport = self.client._http
        r = transport.request("GET", "/v1/jobs/%d/logs" % self.job_id, query=query)
        if r.status != 200:
            if live:
                return [], True  # the node is briefly away: keep following
            raise error_of(r, "GET", "/v1/jobs/%d/logs" % self.job_id)
        size = _int(r.header("X-Sluice-Log-Size"), max(self.offset, 0) + len(r.body))
        if self.offset >= 0 and size < self.offset:
            # Shorter than what was yielded: a new run's log. Read it from its start.
            self.offset = 0
            self.decoder = _Utf8()
            return [self.NEW_RUN], live
        self.offset = size
        text = self.decoder.feed(r.body)
        return ([text] if text else []), live


class _Utf8:
    """Decodes a byte stream cut anywhere (a character split between two answers)."""

    def __init__(self) -> None:
        import codecs
        self._d = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, data: bytes) -> str:
        return str(self._d.decode(data))


def _submission_body(jobs: Jobs) -> Tuple[bytes, str]:
    """The body and its Content-Type: text as given (JSON when it starts with ``{`` or ``[``,
    else YAML), dicts as JSON."""
    if isinstance(jobs, (str, bytes)):
        data = jobs.encode("utf-8") if isinstance(jobs, str) else jobs
        head = data.lstrip()[:1]
        return data, ("application/json" if head in (b"{", b"[") else "application/yaml")
    if isinstance(jobs, Mapping):
        return json.dumps(jobs).encode("utf-8"), "application/json"
    docs = list(jobs)
    if not docs or not all(isinstance(d, Mapping) for d in docs):
        raise ValueError("jobs must be text, a job document (dict) or a non-empty list of them")
    return json.dumps(docs).encode("utf-8"), "application/json"


def _plan_documents(jobs: Jobs) -> str:
    """The jobs as a file `sluice plan` reads: YAML documents separated by ``---`` (a JSON
    object is one; the plan reads no JSON array, which the server's submission takes)."""
    if isinstance(jobs, (str, bytes)):
        text = jobs.decode("utf-8") if isinstance(jobs, bytes) else jobs
        if not text.lstrip().startswith("["):
            return text
        try:
            docs = json.loads(text)
        except ValueError:
            return text  # let the plan say what is wrong with it
        return _plan_documents(docs) if isinstance(docs, list) else text
    if isinstance(jobs, Mapping):
        return json.dumps(jobs) + "\n"
    _submission_body(jobs)  # the same checks as submit
    return "---\n".join(json.dumps(d) + "\n" for d in jobs)


def _run_plan(argv: List[str], timeout_s: float) -> PlanResult:
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise PlanFailed("sluice plan did not finish within %g s" % timeout_s) from None
    except OSError as e:
        raise PlanFailed("cannot run %s: %s" % (argv[0], e)) from None
    err = p.stderr.decode("utf-8", "replace").strip()
    if p.returncode != 0:
        raise PlanFailed("sluice plan failed (exit %d): %s" % (p.returncode, err or "no message"))
    try:
        j = json.loads(p.stdout)
    except ValueError:
        raise PlanFailed("sluice plan printed no JSON: %r" % p.stdout[:200]) from None
    return PlanResult.from_json(_object(j, "plan"))


def _find_sluice(given: Optional[str]) -> str:
    for candidate in (given, os.environ.get("SLUICE_BIN")):
        if candidate:
            return candidate
    found = shutil.which("sluice")
    if not found:
        raise PlanFailed("plan runs the scheduler's cycle with the `sluice` binary, and none is "
                         "on the PATH: pass sluice_bin= or set SLUICE_BIN")
    return found


def _write(directory: str, name: str, text: str) -> str:
    path = os.path.join(directory, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def _object(j: object, what: str) -> Dict[str, Any]:
    if not isinstance(j, dict):
        raise InvalidResponse("the server's %s is not a JSON object: %.200r" % (what, j))
    return j


def _list_field(j: object, key: str) -> List[Dict[str, Any]]:
    v = _object(j, key).get(key)
    if not isinstance(v, list):
        raise InvalidResponse("the server's answer has no list %r" % key)
    return [x for x in v if isinstance(x, dict)]


def _job_id(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        if isinstance(v, str) and v.isdigit() and int(v) > 0:
            return int(v)
        raise ValueError("%r is not a job id (a positive number; Client.jobs() lists them)" % (v,))
    return v


def _non_negative(v: int, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ValueError("%s must be a non-negative integer, not %r" % (what, v))
    return v


def _csv(v: Union[str, Iterable[str], None]) -> Optional[str]:
    if v is None:
        return None
    return v if isinstance(v, str) else ",".join(v)


def _int(v: Optional[str], default: int) -> int:
    try:
        return int(v) if v is not None else default
    except ValueError:
        return default


def _name_from(command: Sequence[str]) -> str:
    """``["python", "train.py"]`` -> ``"train-py"``: the script (or program) name, as a
    metadata.name may spell it."""
    words = [os.path.basename(c) for c in command]
    pick = next((w for w in words[1:] if "." in w and not w.startswith("-")), words[0])
    name = "".join(ch if ch.isalnum() else "-" for ch in pick.lower()).strip("-")
    return (name or "job")[:50]


__all__ = ["Client", "make_job"]
