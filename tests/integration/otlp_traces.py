#!/usr/bin/env python3
"""OpenTelemetry traces (issue 18): a real `sluice up` (one node, fake GPUs) exports its jobs'
spans over OTLP/HTTP with the JSON encoding to a small collector on loopback started here.

No OpenTelemetry Collector is installed on the test machines (Debian has none), so the
collector checks what a receiver would parse against the OTLP/JSON definitions of
opentelemetry-proto (collector/trace/v1 ExportTraceServiceRequest, trace/v1 Span): the request
nesting resourceSpans > scopeSpans > spans, lowerCamelCase field names, trace and span ids as
32 and 16 hex digits (not base64: OTLP/JSON's rule), 64-bit times as decimal strings, typed
attribute values. Then the job's trace: one trace id; the root span `job`; `submit`,
`admission`, `run` and `finish` its children; `pod start` a child of `run`; the times in
lifecycle order; and the pod's TRACEPARENT (in its log) naming the run span, so a training
script's own spans join the job's trace.

Env: SLUICE_BIN. Exit 0 pass, 1 fail, 77 skip. Every wait is bounded."""
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

# check, free_port, http (as call), wait_for: the reliability suite's helpers.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reliability"))
from common import BIN, FAILURES, check, free_port, wait_for  # noqa: E402
from common import http as call  # noqa: E402

TMP = tempfile.mkdtemp(prefix="sluice-otlp-")
os.chmod(TMP, 0o711)  # a root agent runs pods as another user: they reach their work dirs
REQUESTS = []  # parsed ExportTraceServiceRequest bodies
LOCK = threading.Lock()

SPAN_FIELDS = {"traceId", "spanId", "traceState", "parentSpanId", "flags", "name", "kind",
               "startTimeUnixNano", "endTimeUnixNano", "attributes", "droppedAttributesCount",
               "events", "droppedEventsCount", "links", "droppedLinksCount", "status"}
VALUE_KINDS = {"stringValue", "boolValue", "intValue", "doubleValue", "arrayValue",
               "kvlistValue", "bytesValue"}




class Collector(http.server.BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        ok = self.path == "/v1/traces" and \
            self.headers.get("Content-Type", "").startswith("application/json")
        if ok:
            with LOCK:
                REQUESTS.append(json.loads(body))
        self.send_response(200 if ok else 415)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass








def check_value(v, where):
    kinds = set(v) & VALUE_KINDS
    check(len(kinds) == 1 and len(v) == 1, "%s: one typed value (%s)" % (where, v))
    if "intValue" in v:
        check(isinstance(v["intValue"], str) and re.fullmatch(r"-?\d+", v["intValue"]),
              "%s: intValue is a decimal string" % where)


def spans_checked():
    """Every request against the OTLP/JSON shape; returns all spans."""
    out = []
    with LOCK:
        reqs = list(REQUESTS)
    for req in reqs:
        check(set(req) == {"resourceSpans"}, "request has only resourceSpans")
        for rs in req["resourceSpans"]:
            attrs = {a["key"]: a["value"] for a in rs["resource"]["attributes"]}
            check(attrs.get("service.name") == {"stringValue": "sluice"}, "service.name is sluice")
            for ss in rs["scopeSpans"]:
                check(ss["scope"]["name"] == "sluice", "scope name")
                for s in ss["spans"]:
                    out.append(s)
    for s in out:
        where = "span %s" % s.get("name")
        check(set(s) <= SPAN_FIELDS, "%s: only OTLP Span fields (%s)" % (where, set(s) - SPAN_FIELDS))
        check(re.fullmatch(r"[0-9a-f]{32}", s["traceId"]) and s["traceId"] != "0" * 32,
              "%s: traceId is 32 hex digits" % where)
        check(re.fullmatch(r"[0-9a-f]{16}", s["spanId"]), "%s: spanId is 16 hex digits" % where)
        if "parentSpanId" in s:
            check(re.fullmatch(r"[0-9a-f]{16}", s["parentSpanId"]), "%s: parentSpanId" % where)
        for k in ("startTimeUnixNano", "endTimeUnixNano"):
            check(isinstance(s[k], str) and s[k].isdigit(), "%s: %s is a decimal string" % (where, k))
        check(int(s["startTimeUnixNano"]) <= int(s["endTimeUnixNano"]), "%s: start <= end" % where)
        check(s["status"]["code"] in (0, 1, 2), "%s: status code" % where)
        for a in s["attributes"]:
            check_value(a["value"], "%s attribute %s" % (where, a["key"]))
    return out


def main():
    collector = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=collector.serve_forever, daemon=True).start()
    endpoint = "http://127.0.0.1:%d/v1/traces" % collector.server_address[1]
    port = free_port()
    url = "http://127.0.0.1:%d" % port
    log = open(os.path.join(TMP, "up.log"), "ab")
    up = subprocess.Popen([BIN, "up", "--nodes", "1", "--gpus", "fake:2xH100", "--listen",
                           "127.0.0.1:%d" % port, "--data-dir", os.path.join(TMP, "data"),
                           "--otlp-endpoint", endpoint], stdout=log, stderr=subprocess.STDOUT)
    try:
        def node_ready():
            st, body = call("GET", url + "/v1/nodes")
            return st == 200 and any(n.get("ready") for n in json.loads(body)["nodes"])
        ready = wait_for(node_ready, 60, "sluice up and its node")
        if not ready:
            return
        job = ("apiVersion: sluice.dev/v1alpha1\nkind: Job\nmetadata: {name: traced}\n"
               "spec: {queue: default, gpus: 1, command: [sh, -c, 'echo \"tp=$TRACEPARENT\"']}\n")
        req = urllib.request.Request(url + "/v1/jobs", data=job.encode(), method="POST")
        req.add_header("Content-Type", "application/yaml")
        with urllib.request.urlopen(req, timeout=30) as r:
            jid = json.loads(r.read())["jobs"][0]["id"]

        def state():
            st, body = call("GET", "%s/v1/jobs/%d" % (url, jid))
            return json.loads(body)["state"] if st == 200 else None
        check(wait_for(lambda: state() in ("succeeded", "failed"), 60, "the job to end")
              and state() == "succeeded", "job %d succeeded" % jid)

        def job_spans():
            spans = [s for s in spans_checked() if any(
                a["key"] == "sluice.job.id" and a["value"] == {"intValue": str(jid)}
                for a in s["attributes"])]
            if not spans:
                return None
            trace = spans[0]["traceId"]
            mine = [s for s in spans_checked() if s["traceId"] == trace]
            names = sorted(s["name"] for s in mine)
            return mine if names == sorted(["job", "submit", "admission", "run", "pod start",
                                            "finish"]) else None
        spans = wait_for(job_spans, 30, "the job's six spans at the collector")
        if not spans:
            print("received:", json.dumps(REQUESTS)[:2000])
            return
        by = {s["name"]: s for s in spans}
        root = by["job"]
        check(len({s["traceId"] for s in spans}) == 1, "one trace for the job")
        check(len({s["spanId"] for s in spans}) == len(spans), "span ids are unique")
        check("parentSpanId" not in root, "the job span is the root")
        for n in ("submit", "admission", "run", "finish"):
            check(by[n].get("parentSpanId") == root["spanId"], "%s is a child of job" % n)
        check(by["pod start"].get("parentSpanId") == by["run"]["spanId"],
              "pod start is a child of run")
        t = {n: (int(s["startTimeUnixNano"]), int(s["endTimeUnixNano"])) for n, s in by.items()}
        check(t["job"][0] == t["submit"][0] == t["admission"][0], "submit and the wait begin the job")
        check(t["admission"][1] == t["run"][0] == t["pod start"][0], "admission ends as the run begins")
        check(t["pod start"][1] <= t["run"][1] == t["finish"][0] == t["job"][1],
              "the pod starts within the run; the run ends at finish, the end of the job")
        check(abs(t["job"][0] / 1e9 - time.time()) < 600, "times are Unix nanoseconds")
        attrs = {a["key"]: a["value"] for a in by["finish"]["attributes"]}
        check(attrs.get("sluice.state") == {"stringValue": "succeeded"}, "finish says succeeded")
        check(root["status"]["code"] == 1 and by["run"]["status"]["code"] == 1,
              "job and run end OK")
        st, body = call("GET", "%s/v1/jobs/%d/logs" % (url, jid))
        want = "tp=00-%s-%s-01" % (root["traceId"], by["run"]["spanId"])
        check(st == 200 and want in body,
              "the pod's TRACEPARENT names the run span (%s; log: %r)" % (want, body[:200]))
    finally:
        up.terminate()
        try:
            up.wait(timeout=60)
        except subprocess.TimeoutExpired:
            up.kill()
            up.wait()
        collector.shutdown()


if __name__ == "__main__":
    try:
        main()
    finally:
        if FAILURES:
            print("--- up.log")
            sys.stdout.write(open(os.path.join(TMP, "up.log"), errors="replace").read()[-4000:])
        if not FAILURES or os.environ.get("SLUICE_KEEP_TMP") != "1":
            shutil.rmtree(TMP, ignore_errors=True)
    print("otlp_traces: %s" % ("FAILED: %d" % len(FAILURES) if FAILURES else "ok"))
    sys.exit(1 if FAILURES else 0)
