#!/usr/bin/env python3
"""Every byte before a body is bounded (issue 41, item 2), without any token.

Before: `POST /v1/jobs` with `Transfer-Encoding: chunked` and a chunk-size line `5;` followed by
megabytes without a CRLF was buffered whole (256 MB sent: RSS 24 -> 289 MB), and so was a
trailer; 4,000 small header fields were accepted. Now each is answered 431 once it passes the
header limit (16 KiB), and the server's memory stays where it was. A normal chunked
submission still works; the agent's endpoints (the same HTTP stack) refuse the same way.

Real processes on loopback, stopped by their PIDs."""
import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import (BIN, Serve, check, finish, free_port, http, job, rss_mib,  # noqa: E402
                    stop_processes, wait_for, workdir)

MIB = 1 << 20


def send_raw(port, head, filler=b"", filler_bytes=0):
    """Sends head, then filler_bytes of filler (without a CRLF), and returns the status line the
    server answered with ("" when it closed without one)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    sent = 0
    try:
        s.sendall(head)
        chunk = filler * (64 * 1024 // max(len(filler), 1)) if filler else b""
        while sent < filler_bytes:
            s.sendall(chunk)
            sent += len(chunk)
    except OSError:
        pass  # the server closed on us: what it answered is below
    try:
        s.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    data = b""
    try:
        while True:
            part = s.recv(4096)
            if not part:
                break
            data += part
    except OSError:
        pass
    s.close()
    line = data.split(b"\r\n", 1)[0].decode("latin-1")
    return line, sent


def post_head(extra=b""):
    return (b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + extra +
            b"Transfer-Encoding: chunked\r\n\r\n")


def attacks(name, port, pid):
    rss0 = rss_mib(pid)
    # 1. A chunk-size line with an extension and no end: 32 MB on two connections.
    for _ in range(2):
        line, sent = send_raw(port, post_head() + b"5;", b"x", 16 * MIB)
        check(line.startswith("HTTP/1.1 431"),
              "%s: a chunk extension without CRLF is refused with 431 after %d KiB sent (%r)"
              % (name, sent // 1024, line))
    # 2. A trailer without end.
    line, sent = send_raw(port, post_head() + b"2\r\n{}\r\n0\r\nX-Trailer: ", b"y", 16 * MIB)
    check(line.startswith("HTTP/1.1 431"), "%s: an endless trailer is refused with 431 (%r)"
          % (name, line))
    # 3. Many small header fields.
    fields = b"".join(b"X-F%d: v\r\n" % i for i in range(400))
    line, _ = send_raw(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + fields + b"\r\n")
    check(line.startswith("HTTP/1.1 431"), "%s: 400 header fields are refused with 431 (%r)"
          % (name, line))
    rss1 = rss_mib(pid)
    check(rss1 - rss0 < 32, "%s: memory stays bounded (RSS %.0f -> %.0f MiB)" % (name, rss0, rss1))
    return rss0, rss1


def main():
    root, cfg = workdir("unbounded-prefix")
    srv = Serve(os.path.join(root, "data"), cfg)
    check(srv.start(), "server starts")
    rss = attacks("server", srv.port, srv.proc.pid)
    # A normal chunked submission still works.
    body = job("chunked-ok").encode()
    head = post_head()
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    s.sendall(head + b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n")
    reply = s.recv(4096).split(b"\r\n", 1)[0]
    s.close()
    check(reply.startswith(b"HTTP/1.1 202"), "a well-formed chunked submission is accepted (%r)"
          % reply)
    check(http("GET", srv.url + "/healthz")[0] == 200, "the server still answers")
    # The agent's endpoints: the same stack.
    port = free_port()
    agent = subprocess.Popen([BIN, "agent", "--server", srv.url, "--name", "n0", "--gpus",
                              "fake:4xH100", "--state-dir", os.path.join(root, "agent"),
                              "--listen", "127.0.0.1:%d" % port, "--no-fencer"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        up = wait_for(lambda: http("GET", "http://127.0.0.1:%d/healthz" % port)[0] == 200, 20,
                      "the agent's endpoints")
        if up:
            attacks("agent", port, agent.pid)
    finally:
        stop_processes([agent])
    srv.stop()
    finish("reliability.unbounded_prefix", "server RSS %.0f -> %.0f MiB" % rss)


if __name__ == "__main__":
    main()
