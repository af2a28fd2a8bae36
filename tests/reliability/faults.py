#!/usr/bin/env python3
"""Storage and startup faults (issue 13): each refusal is one clear line and exit status 1,
never a signal; a full disk loses no acknowledged job and runs no unacknowledged one.

Cases: a text, truncated, 0-byte or deleted sluice.db; a read-only data dir (in a private
mount namespace); a second server on the same data dir or port; --listen 0.0.0.0 without
tokens; a full disk (a 3 MiB tmpfs mounted by this test, skipped with a message where the
machine allows no mount)."""
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import BIN, Serve, all_jobs, check, finish, http, job, run_to_exit, workdir  # noqa: E402

root, cfg = workdir("faults")
skipped = []


def refused(argv, what, needle):
    code, err = run_to_exit(argv)
    lines = [l for l in err.strip().splitlines() if l.strip()]
    check(code == 1, "%s: exit status 1, not a signal (got %d)" % (what, code))
    check(any(needle in l for l in lines), "%s: says %r (stderr: %s)" % (what, needle, err.strip()[-300:]))
    return err


def seeded_dir(tag, jobs=40):
    """A data dir with `jobs` acknowledged jobs, the server stopped cleanly."""
    d = os.path.join(root, tag)
    s = Serve(d, cfg)
    check(s.start(), tag + ": seed server starts")
    ids = []
    for i in range(jobs):
        st, body = http("POST", s.url + "/v1/jobs", job("seed-%d" % i, "x" * 200))
        if st == 202:
            ids.append(json.loads(body)["jobs"][0]["id"])
    s.stop()
    return d, ids


def serve_argv(d, extra=(), listen=None):
    return [BIN, "serve", "--config", cfg, "--data-dir", d, "--listen",
            listen or "127.0.0.1:0", "--quiet"] + list(extra)


# 1. A text file where the database should be.
d = os.path.join(root, "text")
os.makedirs(d)
with open(os.path.join(d, "sluice.db"), "w") as f:
    f.write("hello, I am not a database\n" * 100)
refused(serve_argv(d), "text sluice.db", "file is not a database")

# 2. Truncated (and half-written: a size that is no multiple of the page size).
d, _ = seeded_dir("truncated", jobs=300)
for extra in ("sluice.db-wal", "sluice.db-shm"):
    if os.path.exists(os.path.join(d, extra)):
        os.remove(os.path.join(d, extra))
size = os.path.getsize(os.path.join(d, "sluice.db"))
os.truncate(os.path.join(d, "sluice.db"), size // 2 + 123)
refused(serve_argv(d), "truncated sluice.db", "sluice.db cannot be used")

# 3. 0-byte and deleted databases beside an event log: refused, then --fresh-store continues
# the ids after the event log's.
for how in ("0-byte", "deleted"):
    d, ids = seeded_dir(how)
    for f in ("sluice.db-wal", "sluice.db-shm"):
        if os.path.exists(os.path.join(d, f)):
            os.remove(os.path.join(d, f))
    if how == "0-byte":
        open(os.path.join(d, "sluice.db"), "w").close()
    else:
        os.remove(os.path.join(d, "sluice.db"))
    refused(serve_argv(d), how + " sluice.db", "--fresh-store")
    s = Serve(d, cfg, extra=["--fresh-store"])
    check(s.start(), how + ": --fresh-store starts")
    st, body = http("POST", s.url + "/v1/jobs", job("after"))
    new_id = json.loads(body)["jobs"][0]["id"] if st == 202 else 0
    check(ids and new_id > max(ids), "%s: the next id (%d) is after every earlier one (%d)" %
          (how, new_id, max(ids) if ids else 0))
    s.stop()

# 4. A read-only data directory, in a private mount namespace (nothing of the host changes).
d, _ = seeded_dir("readonly", jobs=3)
probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
if probe.returncode == 0:
    script = ('mount --make-rprivate / && mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" "$1"'
              ' && shift && exec "$@"')
    refused(["unshare", "-m", "sh", "-c", script, "sh", d] + serve_argv(d), "read-only data dir",
            "sluice")
else:
    skipped.append("read-only data dir (unshare -m not allowed here)")

# 5. Two servers: the same data dir, then the same port.
d = os.path.join(root, "two")
first = Serve(d, cfg)
check(first.start(), "first server starts")
err = refused(serve_argv(d), "second server on the same data dir", "is in use by another sluice serve")
check(str(first.proc.pid) in err, "the message names the holder's pid %d" % first.proc.pid)
refused(serve_argv(os.path.join(root, "two-b"), listen="127.0.0.1:%d" % first.port),
        "second server on the same port", "address already in use")
check(http("GET", first.url + "/readyz")[0] == 200, "the first server still answers")
first.stop()

# 6. A non-loopback address without tokens.
refused(serve_argv(os.path.join(root, "open"), listen="0.0.0.0:0"), "0.0.0.0 without tokens",
        "listens on loopback only")

# 7. Other setup errors: a data dir that is a file, bad listen addresses, a missing or broken
# configuration file.
f = os.path.join(root, "a-file")
open(f, "w").close()
refused(serve_argv(os.path.join(f, "data")), "data dir below a file", "cannot create data directory")
refused(serve_argv(os.path.join(root, "p1"), listen="127.0.0.1:99999"), "port 99999", "port out of range")
refused(serve_argv(os.path.join(root, "p2"), listen="nonsense"), "listen without a port", "expected HOST:PORT")
refused([BIN, "serve", "--config", os.path.join(root, "nope.yaml"), "--data-dir",
         os.path.join(root, "p3"), "--quiet"], "missing config file", "File does not exist")
bad = os.path.join(root, "bad.yaml")
with open(bad, "w") as fh:
    fh.write("kind: [unclosed\n")
refused([BIN, "serve", "--config", bad, "--data-dir", os.path.join(root, "p4"), "--quiet"],
        "malformed config file", "malformed YAML")

# 8. A full disk: a 3 MiB tmpfs. Submissions of ~60 KB each until the store fails.
mnt = os.path.join(root, "tmpfs")
os.makedirs(mnt)
mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", mnt],
                         capture_output=True).returncode == 0
if not mounted:
    skipped.append("disk full (cannot mount a tmpfs here)")
else:
    try:
        # No free-space floor here: this case is the store failing on a write.
        s = Serve(os.path.join(mnt, "data"), cfg, extra=["--min-free-disk", "0"])
        check(s.start(), "disk full: server starts on a 3 MiB tmpfs")
        acked, refused_at, answers = [], None, {}
        for i in range(200):
            st, body = http("POST", s.url + "/v1/jobs", job("fill-%d" % i, "y" * 60000))
            answers[st] = answers.get(st, 0) + 1
            if st == 202:
                acked.append(json.loads(body)["jobs"][0]["id"])
            elif refused_at is None:
                refused_at = (i, st, body)
                break
        check(refused_at is not None and refused_at[1] == 503,
              "disk full: a submission is refused with 503 (%s)" % (refused_at and refused_at[:2],))
        st, body = http("GET", s.url + "/readyz")
        check(st == 503 and "store failed" in body, "disk full: /readyz is not ready (%d %s)" % (st, body.strip()))
        st, body = http("POST", s.url + "/v1/jobs", job("tiny"))
        check(st == 503, "disk full: later submissions are refused too (%d)" % st)
        st, got = all_jobs(s.url)
        listed = {j["id"] for j in got}
        check(listed == set(acked), "disk full: the server lists exactly the %d acknowledged jobs "
              "(listed %d)" % (len(acked), len(listed)))
        # A cancel now is refused before anything changes (issue 35: it answered 503 and still
        # showed the job cancelled, pending again after a restart).
        if acked:
            st, _ = http("POST", s.url + "/v1/jobs/%d/cancel" % acked[0])
            st2, body = http("GET", s.url + "/v1/jobs/%d" % acked[0])
            shown = json.loads(body).get("state") if st2 == 200 else None
            check(st == 503 and shown == "pending",
                  "disk full: a refused cancel changes nothing (%d, the job shows %s)" % (st, shown))
        s.kill9()
        subprocess.run(["mount", "-o", "remount,size=64m", mnt], check=True)
        s2 = Serve(os.path.join(mnt, "data"), cfg, port=s.port, extra=["--min-free-disk", "0"])
        check(s2.start(), "disk full: restarts once there is room")
        st, got = all_jobs(s2.url)
        back = {j["id"] for j in got}
        check(set(acked) <= back, "disk full: every acknowledged job is back after the restart")
        check(back == set(acked), "disk full: no unacknowledged job appeared (%d extra)" % len(back - set(acked)))
        st, body = http("POST", s2.url + "/v1/jobs", job("after-full"))
        check(st == 202 and json.loads(body)["jobs"][0]["id"] > max(acked or [0]),
              "disk full: a new submission gets a new id")
        s2.stop()
        print("disk full: %d acknowledged before the disk filled; answers %s" % (len(acked), answers))
    finally:
        subprocess.run(["umount", "-l", mnt])

# 9. The free-space floor (--min-free-disk): below it, a change is refused with 507 before the
#    state changes, so memory and disk agree and the store never fails. A 4 MiB tmpfs, a 2 MiB
#    floor, ~60 KB submissions.
mnt2 = os.path.join(root, "tmpfs-floor")
os.makedirs(mnt2)
if mounted and subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mnt2],
                              capture_output=True).returncode == 0:
    try:
        s = Serve(os.path.join(mnt2, "data"), cfg, extra=["--min-free-disk", "2"])
        check(s.start(), "floor: server starts on a 4 MiB tmpfs with a 2 MiB floor")
        acked, first_refusal = [], None
        for i in range(200):
            st, body = http("POST", s.url + "/v1/jobs", job("floor-%d" % i, "z" * 60000))
            if st == 202:
                acked.append(json.loads(body)["jobs"][0]["id"])
            else:
                first_refusal = (st, body)
                break
        check(first_refusal is not None and first_refusal[0] == 507 and
              "--min-free-disk" in first_refusal[1],
              "floor: a submission below the floor gets 507 naming the flag (%s)"
              % (first_refusal and (first_refusal[0], first_refusal[1][:160]),))
        st, _ = http("POST", s.url + "/v1/jobs/%d/cancel" % acked[0])
        st2, body = http("GET", s.url + "/v1/jobs/%d" % acked[0])
        check(st == 507 and json.loads(body).get("state") == "pending",
              "floor: a cancel below the floor gets 507 and the job stays pending (%d)" % st)
        st, body = http("GET", s.url + "/readyz")
        check(st == 200, "floor: the store never failed (/readyz %d)" % st)
        s.kill9()
        s2 = Serve(os.path.join(mnt2, "data"), cfg, port=s.port, extra=["--min-free-disk", "0"])
        check(s2.start(), "floor: restarts")
        st, got = all_jobs(s2.url)
        back = {j["id"]: j["state"] for j in got}
        check(set(back) == set(acked) and all(v == "pending" for v in back.values()),
              "floor: after a restart exactly the %d acknowledged jobs, all pending" % len(acked))
        s2.stop()
    finally:
        subprocess.run(["umount", "-l", mnt2])

if not os.environ.get("KEEP"):
    shutil.rmtree(root, ignore_errors=True)
for s in skipped:
    print("skipped: " + s)
finish("reliability.faults", "%d case(s) skipped" % len(skipped))
