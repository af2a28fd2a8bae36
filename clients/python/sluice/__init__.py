"""sluice: a Python client for the sluice GPU cluster scheduler (standard library only).

    from sluice import Client
    c = Client()                      # $SLUICE_SERVER / $SLUICE_TOKEN, else http://127.0.0.1:7070
    job = c.run(["python", "train.py"], queue="train", gpus=1)
    print(c.explain(job.id))

See clients/python/README.md and docs/python.md; the HTTP API is docs/api.md.
"""
from ._http import DEFAULT_SERVER, __version__, normalize_server_url
from .client import Client, make_job
from .errors import (BadRequest, Conflict, ConnectionFailed, Forbidden, GatewayTimeout,
                     HTTPError, InvalidResponse, NotFound, PayloadTooLarge, PlanFailed,
                     ServiceUnavailable, SluiceError, TooManyRequests, Unauthorized)
from .history import HistoryList, HistoryRecord, UsageRow
from .models import (FINISHED_STATES, LIVE_STATES, Explanation, Job, JobList, PlanResult,
                     Placement, PodExit, Submitted)

__all__ = [
    "Client", "make_job", "normalize_server_url", "DEFAULT_SERVER", "__version__",
    "SluiceError", "ConnectionFailed", "InvalidResponse", "PlanFailed", "HTTPError",
    "BadRequest", "Unauthorized", "Forbidden", "NotFound", "Conflict", "PayloadTooLarge",
    "TooManyRequests", "ServiceUnavailable", "GatewayTimeout",
    "Job", "JobList", "Placement", "PodExit", "Submitted", "Explanation", "HistoryRecord",
    "HistoryList", "UsageRow",
    "PlanResult", "FINISHED_STATES", "LIVE_STATES",
]
