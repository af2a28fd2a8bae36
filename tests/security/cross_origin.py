#!/usr/bin/env python3
"""Another site's page cannot act through a user's browser (net::cross_origin).

A server without tokens takes every caller as its admin, and a page of any site can send a
"simple" POST to 127.0.0.1 from the browser of someone who runs one. Such a request carries an
Origin header that is not the server's own: it is refused (403) for every write (submit, cancel,
cordon, configuration), and changes nothing; reads still answer. The server's own dashboard
(same origin) and clients that send no Origin (the CLI, curl, kubectl, agents) are served.

Real `sluice serve` without tokens on loopback; stopped by its PID."""
import http.client as httplib
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "reliability"))
from common import Serve, check, finish, http, job, workdir  # noqa: E402


def call(port, method, path, origin=None, body=None, host=None):
    """(status, body) of one request with exactly the headers a browser would send."""
    conn = httplib.HTTPConnection("127.0.0.1", port, timeout=10)
    headers = {"Host": host or "127.0.0.1:%d" % port}
    if origin is not None:
        headers["Origin"] = origin
    if body is not None:
        headers["Content-Type"] = "text/plain"  # a simple request: no preflight
    conn.request(method, path, body=body, headers=headers)
    r = conn.getresponse()
    return r.status, r.read().decode("utf-8", "replace")


def main():
    d, cfg = workdir("origin")
    serve = Serve(os.path.join(d, "data"), cfg)
    check(serve.start(), "server started")
    port = serve.port
    evil = "http://evil.example"

    st, body = call(port, "POST", "/v1/jobs", origin=evil, body=job("from-evil"))
    check(st == 403 and "another origin" in body, "a cross-origin submit is 403: %d %s" % (st, body))
    st, body = call(port, "POST", "/v1/jobs", origin="null", body=job("from-sandbox"))
    check(st == 403, "Origin: null (a sandboxed page) is refused: %d" % st)
    st, body = http("GET", serve.url + "/v1/jobs")
    check(st == 200 and json.loads(body)["jobs"] == [], "nothing was submitted: %s" % body[:200])

    # No Origin (the CLI, curl): served. The same origin (the dashboard): served.
    st, body = call(port, "POST", "/v1/jobs", body=job("from-cli"))
    check(st in (200, 201, 202), "a submit without Origin is served: %d %s" % (st, body[:200]))
    jid = json.loads(body)["jobs"][0]["id"]
    st, _ = call(port, "POST", "/v1/jobs/%d/hold" % jid, origin="http://127.0.0.1:%d" % port)
    check(st == 200, "the server's own origin may write (the dashboard's actions): %d" % st)
    st, _ = call(port, "POST", "/v1/jobs/%d/hold" % jid, origin="HTTP://127.0.0.1:%d" % port)
    check(st == 200, "origins compare without case: %d" % st)

    # Writes of every kind are refused cross-origin, and change nothing.
    for method, path, what in (("POST", "/v1/jobs/%d/cancel" % jid, "cancel"),
                               ("POST", "/v1/nodes/n1/cordon", "cordon"),
                               ("DELETE", "/api/v1/namespaces/team-a/pods/x", "kube delete"),
                               ("PUT", "/v1/config", "configuration")):
        st, body = call(port, method, path, origin=evil, body="{}")
        check(st == 403, "cross-origin %s is 403: %d %s" % (what, st, body[:120]))
    # A page on another port of the same host is another origin too.
    st, _ = call(port, "POST", "/v1/jobs/%d/cancel" % jid, origin="http://127.0.0.1:1")
    check(st == 403, "another port is another origin: %d" % st)
    st, body = http("GET", serve.url + "/v1/jobs/%d" % jid)
    check(st == 200 and json.loads(body)["state"] == "pending", "the job is still there: %s"
          % body[:200])
    st, body = http("GET", serve.url + "/v1/nodes")
    check(st == 200 and not any(n.get("cordoned") for n in json.loads(body)["nodes"]),
          "no node was cordoned")
    # Reads answer (a browser keeps another origin's page from reading them without CORS).
    st, _ = call(port, "GET", "/v1/jobs", origin=evil)
    check(st == 200, "a cross-origin read is answered: %d" % st)
    serve.stop()
    finish("cross_origin", "cross-origin writes refused without tokens")


if __name__ == "__main__":
    main()
