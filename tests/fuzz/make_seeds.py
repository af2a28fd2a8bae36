#!/usr/bin/env python3
"""make_seeds.py OUT_DIR: the seed corpus of every fuzz target, as OUT_DIR/<target>/.

Seeds come from files already in the repository: the committed inputs under seeds/<target>/
(exact fuzzer inputs, mode byte included, and every crash a target found), the example and
scenario YAML, and the raw string literals (R"(...)") of the unit tests that feed the same
parser. Nothing is taken from ../shared/traces: the trace readers' seeds are the hand-written
rows under seeds/.
"""
import glob
import hashlib
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
RAW = re.compile(r'R"([^()\\ ]{0,16})\((.*?)\)\1"', re.S)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def files(*patterns):
    out = []
    for p in patterns:
        out += sorted(glob.glob(os.path.join(ROOT, p), recursive=True))
    return out


def raw_strings(*patterns):
    """The raw string literals of the C++ files matched."""
    out = []
    for path in files(*patterns):
        text = read(path).decode("utf-8", "replace")
        out += [m.group(2).encode() for m in RAW.finditer(text) if m.group(2).strip()]
    return out


def http_requests():
    """The server's request reader (fuzz_http_request): requests with chunked bodies, chunk
    extensions, trailers, many headers, pipelining, and lines past the limits; each in a few
    modes (first byte: piece size, a route with a larger body limit, small limits)."""
    head = b"POST /v1/jobs HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\n"
    chunked = head + b"Transfer-Encoding: chunked\r\n\r\n"
    reqs = [
        b"GET /v1/jobs?state=pending&limit=10 HTTP/1.1\r\nHost: h\r\n\r\n",
        b"GET /v1/jobs/%41%2f?x=%zz+y HTTP/1.0\r\n\r\n",
        head + b"Content-Length: 7\r\n\r\n{\"a\":1}",
        head + b"Content-Length: 3\r\nExpect: 100-continue\r\n\r\nabc",
        chunked + b"5\r\nhello\r\n0\r\n\r\n",
        chunked + b"5;a=b;c=\"q \\\" d\"\r\nhello\r\n6;ext\r\n world\r\n0;last=1\r\n\r\n",
        chunked + b"5\r\nhello\r\n0\r\nX-Trailer: 1\r\nChecksum: abc\r\n\r\n",
        chunked + b"5\r\nhello\r\n0\r\n" + b"".join(b"T%d: v\r\n" % i for i in range(200))
        + b"\r\n",
        chunked + b"5;" + b"a" * 70000,  # a size line without its CRLF: the buffer bound
        chunked + b"5\r\nhello\r\n0\r\nX: " + b"b" * 70000 + b"\r\n\r\n",  # a long trailer
        head + b"Transfer-Encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
        head + b"Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
        b"GET / HTTP/1.1\r\n" + b"".join(b"H%d: v\r\n" % i for i in range(120)) + b"\r\n",
        b"GET /" + b"a" * 5000 + b" HTTP/1.1\r\n\r\n",
        b"GET /a HTTP/1.1\r\nHost: h\r\n\r\n" + chunked + b"3\r\nabc\r\n0\r\n\r\n"
        + b"GET /b HTTP/1.1\r\nConnection: close\r\n\r\n",
        head + b"Content-Length: 99999999999\r\n\r\n",
        chunked + b"fffffffffffffffff\r\n",
    ]
    return [bytes([mode]) + r for r in reqs for mode in (0x00, 0x01, 0x07, 0x40, 0x80, 0x85)]


# What kubectl 1.32 sends: drain's eviction, auth can-i's review, and can-i --list's.
KUBECTL_EVICTION = (b'{"kind":"Eviction","apiVersion":"policy/v1","metadata":{"name":"x-0",'
                    b'"namespace":"ns","creationTimestamp":null},"deleteOptions":{}}')
KUBECTL_ACCESS_REVIEW = (b'{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1",'
                         b'"metadata":{"creationTimestamp":null},"spec":{"resourceAttributes":'
                         b'{"namespace":"team-a","verb":"create","group":"batch","resource":"jobs"}},'
                         b'"status":{"allowed":false}}')
KUBECTL_RULES_REVIEW = (b'{"kind":"SelfSubjectRulesReview","apiVersion":"authorization.k8s.io/v1",'
                        b'"metadata":{"creationTimestamp":null},"spec":{"namespace":"team-a"},'
                        b'"status":{"resourceRules":null,"nonResourceRules":null,"incomplete":false}}')


def pb(number, data):
    """A length-delimited protobuf field."""
    n, head = len(data), bytes([number << 3 | 2])
    while n > 0x7f:
        head += bytes([n & 0x7f | 0x80])
        n >>= 7
    return head + bytes([n]) + data


def k8s_protobuf(api_version, kind, raw):
    """Kubernetes' protobuf envelope: "k8s\\0", runtime.Unknown {typeMeta, raw, "", ""}."""
    return (b"k8s\0" + pb(1, pb(1, api_version) + pb(2, kind)) + pb(2, raw) + pb(3, b"")
            + pb(4, b""))


# The same three in Kubernetes' protobuf encoding, as kubectl's typed clients send them.
PROTOBUF_BODIES = [
    k8s_protobuf(b"policy/v1", b"Eviction",
                 pb(1, pb(1, b"x-0") + pb(3, b"ns")) + pb(2, b"\x08\x1e" + pb(2, pb(1, b"u1")))),
    k8s_protobuf(b"authorization.k8s.io/v1", b"SelfSubjectAccessReview",
                 pb(1, b"") + pb(2, pb(1, pb(1, b"team-a") + pb(2, b"create") + pb(3, b"batch")
                                       + pb(5, b"jobs")))),
    k8s_protobuf(b"authorization.k8s.io/v1", b"SelfSubjectRulesReview",
                 pb(1, b"") + pb(2, pb(1, b"team-a"))),
]


def main():
    out_dir = sys.argv[1]
    yaml_docs = files("examples/config/*.yaml", "examples/demo/*.yaml", "examples/philly/*.yaml",
                      "examples/philly/autoscale/*.yaml", "examples/openb/*.yaml",
                      "tests/scenarios/*.yaml")
    job_files = files("examples/config/jobs.yaml", "examples/demo/jobs.yaml")
    job_tests = raw_strings("tests/unit/config/jobs_test.cc",
                            "tests/unit/config/json_fast_path_test.cc")
    config_tests = raw_strings("tests/unit/config/*_test.cc", "tests/unit/config/kinds/*_test.cc")
    seeds = {
        "jobs_json": [read(p) for p in job_files] + job_tests,
        "jobs_yaml": [read(p) for p in job_files] + job_tests,
        # Mode byte 0: one source, not strict; 2: two sources split at the NUL.
        "config_load": [b"\x00" + read(p) for p in yaml_docs] + [b"\x00" + s for s in config_tests]
        + [b"\x02" + read(os.path.join(ROOT, "examples/config/cluster.yaml")) + b"\x00"
           + read(os.path.join(ROOT, "examples/config/queues.yaml"))],
        "gateway_config": [read(p) for p in files("examples/gateway/*.yaml")]
        + raw_strings("tests/gateway/config_test.cc"),
        "http_request": http_requests(),
        # Mode byte 0: a merge patch of a Job, 1: a strategic merge patch, 5: of a Node.
        "kube_patch": [m + s for s in raw_strings("tests/unit/server/kube_patch_test.cc",
                                                  "tests/unit/server/kube_meta_test.cc")
                       for m in (b"\x00", b"\x01", b"\x05")],
        # Mode byte 0: an Eviction (of pod x-0), 1: a SelfSubjectAccessReview, 2: a
        # SelfSubjectRulesReview, as JSON; 4, 5, 6: the same in protobuf. kubectl's own bodies,
        # and the unit tests' strings.
        "kube_body": [b"\x00" + KUBECTL_EVICTION, b"\x01" + KUBECTL_ACCESS_REVIEW,
                      b"\x02" + KUBECTL_RULES_REVIEW]
        + [bytes([4 + i]) + b for i, b in enumerate(PROTOBUF_BODIES)]
        + [m + s for s in raw_strings("tests/unit/server/kube_review_test.cc")
           for m in (b"\x00", b"\x01", b"\x02")],
        # Mode byte 0: an object, 1: a merge patch (5: strategic, 9: JSON patch), 2: a
        # server-side apply (6: forced), 3: a configuration's text split and joined.
        "kube_config": [m + s for s in raw_strings("tests/unit/server/kube_config_docs_test.cc",
                                                   "tests/unit/server/kube_apply_test.cc")
                        for m in (b"\x00", b"\x01", b"\x05", b"\x09", b"\x02", b"\x06")]
        + [b"\x03" + read(p) for p in yaml_docs],
        # Mode byte 0: a cordon's or drain's reason, 1: a reclaim's notice.
        "node_body": [b"\x00" + b'{"reason": "swap GPU 3"}', b"\x00",
                      b"\x01" + b'{"notice": "30s"}', b"\x01" + b'{"notice": 90}',
                      b"\x01" + b'{"notice": "1h30m"}'],
    }
    targets = [os.path.basename(d) for d in sorted(glob.glob(os.path.join(HERE, "seeds", "*")))]
    for t in set(targets) | set(seeds):
        d = os.path.join(out_dir, t)
        os.makedirs(d, exist_ok=True)
        inputs = seeds.get(t, []) + [read(p) for p in files(f"tests/fuzz/seeds/{t}/*")]
        for data in inputs:
            name = hashlib.sha1(data).hexdigest()  # libFuzzer's own naming: no duplicates
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
