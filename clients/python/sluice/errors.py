"""What a failed call raises.

Every exception is a :class:`SluiceError`. A reply the server gave with a 4xx/5xx status is an
:class:`HTTPError` (or one of its subclasses, by status) carrying the server's own words: its
``{"error": ..., "details": [...]}`` body, as ``sluice`` prints them. No usable reply at all
(no server reachable, a timeout, a bad URL) is a :class:`ConnectionFailed`.
"""
from __future__ import annotations

import json
from typing import Dict, List, Optional, Type

_PHRASES: Dict[int, str] = {
    400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
    405: "Method Not Allowed", 409: "Conflict", 413: "Payload Too Large",
    415: "Unsupported Media Type", 429: "Too Many Requests", 500: "Internal Server Error",
    502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout",
}


class SluiceError(Exception):
    """Base class of every error this client raises."""


class ConnectionFailed(SluiceError):
    """No usable reply: no server could be reached, a request timed out, or a URL is unusable.

    ``servers`` lists the URLs tried, ``reasons`` why each failed (same order)."""

    def __init__(self, message: str, servers: Optional[List[str]] = None,
                 reasons: Optional[List[str]] = None) -> None:
        super().__init__(message)
        self.servers: List[str] = list(servers or [])
        self.reasons: List[str] = list(reasons or [])


class InvalidResponse(SluiceError):
    """The server answered 2xx with a body this client cannot read (not JSON where JSON is due)."""


class HTTPError(SluiceError):
    """The server refused or failed the request.

    Attributes:
        status: the HTTP status (e.g. 404).
        error: the server's message (its ``error`` field, else its text).
        details: the server's ``details`` lines (may be empty).
        server: the URL of the server that answered.
        method, path: the request.
        retry_after: the ``Retry-After`` header in seconds (429, 503), else None.
        body: the raw body as text.

    ``str(e)`` reads as ``sluice`` prints it: ``HTTP 404 Not Found: no job 999``, then each
    detail on its own line, then a hint for 401, 403 and 429.
    """

    def __init__(self, status: int, body: str, *, server: str = "", method: str = "",
                 path: str = "", retry_after: Optional[float] = None) -> None:
        self.status = status
        self.body = body
        self.server = server
        self.method = method
        self.path = path
        self.retry_after = retry_after
        self.error, self.details = _parse_error_body(body)
        super().__init__(self._message())

    def _message(self) -> str:
        msg = "HTTP %d" % self.status
        phrase = _PHRASES.get(self.status)
        if phrase:
            msg += " " + phrase
        if self.error:
            msg += ": " + self.error
        for d in self.details:
            msg += "\n  " + d
        if self.status == 429:
            msg += "\n  the server is shedding load (a pending cap is full); " + (
                "retry after %g s (Retry-After)" % self.retry_after
                if self.retry_after is not None else "retry later")
        elif self.status == 401:
            msg += "\n  %s wants a token: pass token= or set SLUICE_TOKEN" % (
                self.server or "the server")
        elif self.status == 403:
            msg += "\n  the token is not allowed to do this (wrong namespace or role)"
        return msg


class BadRequest(HTTPError):
    """400: a malformed document or query; ``error``/``details`` say where."""


class Unauthorized(HTTPError):
    """401: no token, or an unknown one."""


class Forbidden(HTTPError):
    """403: the token may not do this (another namespace, not admin, a uid it may not use)."""


class NotFound(HTTPError):
    """404: no such job (or one in a namespace the token does not hold), queue or node."""


class Conflict(HTTPError):
    """409: the change would strand work (a configuration dropping a node or queue in use)."""


class PayloadTooLarge(HTTPError):
    """413: a body or one of its parts is over a limit (docs/api.md "Limits")."""


class TooManyRequests(HTTPError):
    """429: a pending cap is full; ``retry_after`` says when to try again."""


class ServiceUnavailable(HTTPError):
    """503: the store failed, a node is NotReady (logs), or the server is overloaded."""


class GatewayTimeout(HTTPError):
    """504: a node's agent did not answer in time (logs)."""


_BY_STATUS: Dict[int, Type[HTTPError]] = {
    400: BadRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound, 409: Conflict,
    413: PayloadTooLarge, 429: TooManyRequests, 503: ServiceUnavailable, 504: GatewayTimeout,
}


def http_error(status: int, body: str, **kwargs: object) -> HTTPError:
    """The HTTPError subclass for ``status`` (HTTPError itself for the others)."""
    cls = _BY_STATUS.get(status, HTTPError)
    return cls(status, body, **kwargs)  # type: ignore[arg-type]


def _parse_error_body(body: str) -> "tuple[str, List[str]]":
    """The server's ``{"error", "details"}``; else its text, cut to something readable. A
    detail that repeats the error (a parser message used for both) is dropped."""
    try:
        j = json.loads(body)
    except ValueError:
        j = None
    if isinstance(j, dict) and "error" in j:
        error = j["error"] if isinstance(j["error"], str) else json.dumps(j["error"])
        details: List[str] = []
        raw = j.get("details")
        if isinstance(raw, list):
            for d in raw:
                text = d if isinstance(d, str) else json.dumps(d)
                if text != error:
                    details.append(text)
        return error, details
    text = body.strip()
    if len(text) > 500:
        text = text[:500] + "..."
    return text, []


class PlanFailed(SluiceError):
    """``plan`` could not run the scheduler's cycle: no ``sluice`` binary, or it refused the
    state or the jobs (its message says why)."""
