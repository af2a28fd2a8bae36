"""Unit tests of the client against a loopback HTTP server whose answers each test chooses
(fake_server.py): real sockets, no sluice server. Run: python3 -m unittest discover -s
clients/python/tests (or ctest -R unit.python_client)."""
from __future__ import annotations

import datetime
import json
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import sluice  # noqa: E402
from fake_server import Answer, FakeServer, Seen, free_port, job_view  # noqa: E402


class SubmitTest(unittest.TestCase):
    def setUp(self) -> None:
        self.s = FakeServer().__enter__()
        self.addCleanup(self.s.__exit__)
        self.s.route("POST", "/v1/jobs", Answer(202, {"jobs": [
            {"id": 17, "name": "bert", "queue": "train"}]}))
        self.c = sluice.Client(self.s.url, token="t0k3n-0123456789abcdef")

    def test_dict_is_sent_as_json_with_the_bearer_token(self) -> None:
        got = self.c.submit({"kind": "Job", "metadata": {"name": "bert"}})
        self.assertEqual(got, [sluice.Submitted(17, "bert", "train")])
        req = self.s.requests("/v1/jobs")[0]
        self.assertEqual(req.headers["content-type"], "application/json")
        self.assertEqual(req.headers["authorization"], "Bearer t0k3n-0123456789abcdef")
        self.assertIn("x-sluice-user", req.headers)  # the submitter, for servers without tokens
        self.assertEqual(json.loads(req.body)["metadata"]["name"], "bert")

    def test_text_is_sent_as_yaml_or_json_by_its_first_character(self) -> None:
        self.c.submit("kind: Job\nmetadata: {name: a}\n---\nkind: Job\n")
        self.c.submit('  [{"kind": "Job"}]')
        self.c.submit([{"kind": "Job"}, {"kind": "Job"}])
        types = [r.headers["content-type"] for r in self.s.requests("/v1/jobs")]
        self.assertEqual(types, ["application/yaml", "application/json", "application/json"])
        self.assertEqual(len(json.loads(self.s.requests("/v1/jobs")[2].body)), 2)

    def test_run_builds_the_document_sluice_run_builds(self) -> None:
        self.c.run(["python", "train.py", "--lr", "3e-4"], queue="train", namespace="nlp",
                   gpus=2, gang=2, walltime_s=5400, env={"NCCL_DEBUG": "WARN"},
                   preemptible=False)
        doc = json.loads(self.s.requests("/v1/jobs")[0].body)
        self.assertEqual(doc["metadata"], {"name": "train-py", "namespace": "nlp"})
        self.assertEqual(doc["spec"], {
            "pods": 2, "queue": "train", "gpus": 2, "walltime": "5400s", "preemptible": False,
            "command": ["python", "train.py", "--lr", "3e-4"], "env": {"NCCL_DEBUG": "WARN"},
            "distributedEnv": "torch"})

    def test_make_job_refuses_what_sluice_run_refuses(self) -> None:
        with self.assertRaisesRegex(ValueError, "requests nothing"):
            sluice.make_job(["true"])
        with self.assertRaisesRegex(ValueError, "non-empty list"):
            sluice.make_job("python train.py", gpus=1)
        self.assertEqual(sluice.make_job(["x"], gpu_fraction="0.5")["spec"]["gpus"], 1)

    def test_no_jobs_is_refused_before_sending(self) -> None:
        with self.assertRaises(ValueError):
            self.c.submit([])
        self.assertEqual(self.s.requests(), [])


class ErrorTest(unittest.TestCase):
    def setUp(self) -> None:
        self.s = FakeServer().__enter__()
        self.addCleanup(self.s.__exit__)
        self.c = sluice.Client(self.s.url)

    def test_the_servers_error_and_details_make_the_message(self) -> None:
        self.s.route("POST", "/v1/jobs", Answer(404, {
            "error": 'request:1: spec.queue: LocalQueue "trian" not found',
            "details": ['request:1: spec.queue: LocalQueue "trian" not found', "its queues: train"]}))
        with self.assertRaises(sluice.NotFound) as cm:
            self.c.submit("kind: Job\n")
        e = cm.exception
        self.assertEqual(e.status, 404)
        self.assertEqual(e.error, 'request:1: spec.queue: LocalQueue "trian" not found')
        self.assertEqual(e.details, ["its queues: train"])  # the repeated detail printed once
        self.assertEqual(str(e), 'HTTP 404 Not Found: request:1: spec.queue: LocalQueue "trian" '
                                 'not found\n  its queues: train')
        self.assertIsInstance(e, sluice.HTTPError)
        self.assertIsInstance(e, sluice.SluiceError)

    def test_429_carries_retry_after(self) -> None:
        self.s.route("POST", "/v1/jobs", Answer(429, {"error": "pending cap of queue q is full"},
                                                {"Retry-After": "7"}))
        with self.assertRaises(sluice.TooManyRequests) as cm:
            self.c.submit("kind: Job\n")
        self.assertEqual(cm.exception.retry_after, 7.0)
        self.assertIn("retry after 7 s (Retry-After)", str(cm.exception))

    def test_401_says_to_pass_a_token(self) -> None:
        self.s.route("GET", "/v1/jobs", Answer(401, {"error": "missing bearer token"}))
        with self.assertRaises(sluice.Unauthorized) as cm:
            self.c.jobs()
        self.assertIn("wants a token: pass token= or set SLUICE_TOKEN", str(cm.exception))
        self.assertEqual(cm.exception.server, self.s.url)

    def test_a_body_that_is_not_json_is_shown_as_text(self) -> None:
        self.s.route("GET", "/v1/jobs/3", Answer(502, "<html>bad gateway</html>"))
        with self.assertRaises(sluice.HTTPError) as cm:
            self.c.job(3)
        self.assertEqual(str(cm.exception), "HTTP 502 Bad Gateway: <html>bad gateway</html>")

    def test_a_2xx_that_is_not_json_is_invalid(self) -> None:
        self.s.route("GET", "/v1/jobs/3", Answer(200, "ok"))
        with self.assertRaises(sluice.InvalidResponse):
            self.c.job(3)

    def test_a_bad_job_id_is_refused_before_sending(self) -> None:
        for bad in (0, -1, "big-out", 1.5, True):
            with self.assertRaisesRegex(ValueError, "not a job id"):
                self.c.cancel(bad)  # type: ignore[arg-type]
        self.assertEqual(self.s.requests(), [])

    def test_unreachable_server(self) -> None:
        c = sluice.Client("127.0.0.1:%d" % free_port(), connect_timeout_s=2)
        with self.assertRaises(sluice.ConnectionFailed) as cm:
            c.jobs()
        self.assertIn("cannot reach sluice server at http://127.0.0.1:", str(cm.exception))

    def test_bad_urls(self) -> None:
        for bad in ("", "ftp://x", "http://h:7070/api", "http://h:port"):
            with self.assertRaises(sluice.ConnectionFailed, msg=bad):
                sluice.Client(bad)
        self.assertEqual(sluice.normalize_server_url(" h:7070/ "), "http://h:7070")


class ServersTest(unittest.TestCase):
    """Several servers: the first reachable non-standby answers, and is asked first next time."""

    def setUp(self) -> None:
        self.a = FakeServer().__enter__()
        self.b = FakeServer().__enter__()
        self.addCleanup(self.a.__exit__)
        self.addCleanup(self.b.__exit__)
        self.b.route("GET", "/v1/jobs", Answer(200, {"jobs": [job_view(1)], "truncated": False}))

    def test_a_dead_server_passes_the_request_on_and_the_leader_is_remembered(self) -> None:
        dead = "http://127.0.0.1:%d" % free_port()
        c = sluice.Client([dead, self.b.url], connect_timeout_s=2)
        self.assertEqual([j.id for j in c.jobs()], [1])
        self.assertEqual(c.leader, self.b.url)
        c.jobs()
        self.assertEqual(len(self.b.requests("/v1/jobs")), 2)

    def test_a_standby_passes_the_request_to_the_leader(self) -> None:
        self.a.route("GET", "/v1/jobs", Answer(503, {
            "error": "standby replica", "code": "not_leader"}))
        c = sluice.Client("%s,%s" % (self.a.url, self.b.url))
        self.assertEqual(len(c.jobs()), 1)
        self.assertEqual(c.leader, self.b.url)
        c.jobs()
        # the leader is asked first the second time
        self.assertEqual(len(self.a.requests("/v1/jobs")), 1)

    def test_an_error_of_the_leader_is_not_retried_elsewhere(self) -> None:
        self.a.route("GET", "/v1/jobs/9", Answer(404, {"error": "no job 9"}))
        c = sluice.Client([self.a.url, self.b.url])
        with self.assertRaises(sluice.NotFound):
            c.job(9)
        self.assertEqual(self.b.requests("/v1/jobs/9"), [])

    def test_a_frozen_first_server_is_skipped(self) -> None:
        # A frozen leader holds requests without answering; a standby names the leader.
        def hang(_s: Seen) -> Answer:
            time.sleep(3)
            return Answer(200, {"jobs": [], "truncated": False})
        frozen = FakeServer().__enter__()
        self.addCleanup(frozen.__exit__)
        frozen.route("GET", "/readyz", hang)
        frozen.route("GET", "/v1/jobs", hang)
        self.a.route("GET", "/readyz", Answer(503, "standby", {"Sluice-Leader": self.b.url}))
        c = sluice.Client([frozen.url, self.a.url, self.b.url], timeout_s=60)
        self.assertEqual([j.id for j in c.jobs()], [1])  # (the frozen one would say [])
        self.assertEqual(c.leader, self.b.url)
        self.assertEqual(frozen.requests("/v1/jobs"), [])
        c.jobs()
        self.assertEqual(len(self.a.requests()), 1)  # probed once per client

    def test_every_server_down_lists_each(self) -> None:
        ports = [free_port(), free_port()]
        c = sluice.Client(["127.0.0.1:%d" % p for p in ports], connect_timeout_s=2)
        with self.assertRaises(sluice.ConnectionFailed) as cm:
            c.jobs()
        self.assertEqual(len(cm.exception.reasons), 2)
        self.assertIn("no sluice server answered", str(cm.exception))

    def test_environment_defaults(self) -> None:
        old = dict(os.environ)
        try:
            os.environ["SLUICE_SERVER"] = self.b.url
            os.environ["SLUICE_TOKEN"] = "from-the-environment"
            sluice.Client().jobs()
            self.assertEqual(self.b.requests()[0].headers["authorization"],
                             "Bearer from-the-environment")
        finally:
            os.environ.clear()
            os.environ.update(old)


class JobsTest(unittest.TestCase):
    def setUp(self) -> None:
        self.s = FakeServer().__enter__()
        self.addCleanup(self.s.__exit__)
        self.c = sluice.Client(self.s.url)

    def test_filters_go_into_the_query_and_truncated_comes_back(self) -> None:
        self.s.route("GET", "/v1/jobs", Answer(200, {"jobs": [job_view(2), job_view(1)],
                                                     "truncated": True}))
        got = self.c.jobs(["pending", "running"], queue="train", user="alice", limit=2)
        self.assertEqual([j.id for j in got], [2, 1])
        self.assertTrue(got.truncated)
        self.assertEqual(self.s.requests()[0].query, {"state": "pending,running", "queue": "train",
                                                      "user": "alice", "limit": "2"})

    def test_start_asks_for_predicted_starts(self) -> None:
        forecast = {"status": "estimated", "time": 1600.0, "in_s": 600.0, "assumes": "..."}
        self.s.route("GET", "/v1/jobs", Answer(200, {"jobs": [job_view(
            3, predicted_start=forecast)], "truncated": False}))
        self.s.route("GET", "/v1/jobs/3", Answer(200, job_view(3, predicted_start=forecast)))
        got = self.c.jobs("pending", start=True)
        self.assertEqual(got[0].predicted_start, forecast)
        self.assertEqual(self.s.requests("/v1/jobs")[0].query, {"state": "pending", "start": "1"})
        self.assertEqual(self.c.job(3, start=True).predicted_start, forecast)
        self.assertEqual(self.s.requests("/v1/jobs/3")[0].query, {"start": "1"})
        self.c.jobs()
        self.assertEqual(self.s.requests("/v1/jobs")[1].query, {})  # not asked: not sent

    def test_a_job_view_becomes_a_job(self) -> None:
        self.s.route("GET", "/v1/jobs/17", Answer(200, job_view(
            17, "running", placement=[{"pod": 0, "node": "n1", "gpus": [0, 1]},
                                      {"pod": 1, "node": "n1", "gpus": [2, 3]}],
            a_field_of_a_newer_server=1)))
        j = self.c.job(17)
        self.assertEqual((j.id, j.state, j.nodes, j.finished), (17, "running", ["n1"], False))
        self.assertEqual(j.placement[1], sluice.Placement(1, "n1", [2, 3]))
        self.assertEqual(j.raw["a_field_of_a_newer_server"], 1)

    def test_an_older_servers_view_misses_fields(self) -> None:
        self.s.route("GET", "/v1/jobs/4", Answer(200, {"id": 4, "state": "succeeded"}))
        j = self.c.job(4)
        self.assertEqual((j.user, j.placement, j.exit_code, j.finished), ("", [], None, True))

    def test_explain_and_cancel(self) -> None:
        self.s.route("GET", "/v1/jobs/8/explain", Answer(200, {
            "id": 8, "state": "pending", "explanation": "job 8 is pending: quota"}))
        self.s.route("POST", "/v1/jobs/8/cancel", Answer(200, job_view(8, "cancelled")))
        self.assertEqual(str(self.c.explain(8)), "job 8 is pending: quota")
        self.assertEqual(self.c.cancel(8).state, "cancelled")

    def test_wait_until_running_or_ended(self) -> None:
        states = iter(["pending", "pending", "running"])
        self.s.route("GET", "/v1/jobs/5", lambda _s: Answer(200, job_view(5, next(states))))
        self.assertEqual(self.c.wait(5, until=("running",), poll_s=0.01).state, "running")
        self.s.route("GET", "/v1/jobs/6", Answer(200, job_view(6, "failed")))
        self.assertEqual(self.c.wait(6, until=("running",), poll_s=0.01).state, "failed")
        self.s.route("GET", "/v1/jobs/7", Answer(200, job_view(7, "pending")))
        with self.assertRaises(TimeoutError):
            self.c.wait(7, timeout_s=0.05, poll_s=0.01)


class LogsTest(unittest.TestCase):
    def setUp(self) -> None:
        self.s = FakeServer().__enter__()
        self.addCleanup(self.s.__exit__)
        self.c = sluice.Client(self.s.url)

    def test_logs_with_pod_and_tail(self) -> None:
        self.s.route("GET", "/v1/jobs/3/logs", Answer(200, "line 2\n"))
        self.assertEqual(self.c.logs(3, pod=1, tail_bytes=10), "line 2\n")
        self.assertEqual(self.s.requests()[0].query, {"pod": "1", "tail_bytes": "10"})

    def test_a_nodes_absence_is_the_servers_503(self) -> None:
        self.s.route("GET", "/v1/jobs/3/logs", Answer(503, {"error": "node n3 is NotReady"}))
        with self.assertRaisesRegex(sluice.ServiceUnavailable, "node n3 is NotReady"):
            self.c.logs(3)

    def test_follow_reads_from_the_offset_until_the_job_ends(self) -> None:
        # The log grows "ab" -> "abcd" -> (a new run) "x"; the job ends after that.
        log = {"text": b"ab"}
        polls = [0]
        placed = [{"pod": 0, "node": "n1", "gpus": [0]}]

        def job(_s: Seen) -> Answer:
            polls[0] += 1
            state = {1: "pending"}.get(polls[0], "running" if polls[0] < 7 else "succeeded")
            return Answer(200, job_view(9, state, placement=[] if state == "pending" else placed))

        def logs(s: Seen) -> Answer:
            off = int(s.query.get("offset", "0"))
            data = log["text"]
            if off == 2 and data == b"ab":
                log["text"] = data = "abcd\u00e9".encode()  # é: two bytes, split below
            elif off == 6:
                log["text"] = b"x"  # the pod started again: a shorter log
                return Answer(200, b"", {"X-Sluice-Log-Size": "1"})
            body = data[off:off + 3] if off == 2 else data[off:]
            return Answer(200, body, {"X-Sluice-Log-Size": str(off + len(body))})

        self.s.route("GET", "/v1/jobs/9", job)
        self.s.route("GET", "/v1/jobs/9/logs", logs)
        text = "".join(self.c.follow_logs(9, poll_s=0.01, timeout_s=30))
        self.assertEqual(text, "abcd\u00e9[... the pod started again: a new log ...]\nx")
        offsets = [r.query.get("offset") for r in self.s.requests("/v1/jobs/9/logs")]
        self.assertEqual(offsets[:5], [None, "2", "5", "6", "0"])

    def test_follow_a_log_that_ended_with_an_error(self) -> None:
        self.s.route("GET", "/v1/jobs/9", Answer(200, job_view(
            9, "failed", placement=[{"pod": 0, "node": "n1", "gpus": [0]}])))
        self.s.route("GET", "/v1/jobs/9/logs", Answer(504, {"error": "agent did not answer"}))
        with self.assertRaises(sluice.GatewayTimeout):
            list(self.c.follow_logs(9, poll_s=0.01))


class HistoryTest(unittest.TestCase):
    ROW = {"id": 12, "name": "train", "user": "alice", "namespace": "nlp", "queue": "train",
           "state": "succeeded", "submit_time": 1000.5, "start_time": 1001.0,
           "end_time": 4601.0, "elapsed_s": 3600.0, "gpus": 8.0, "gpu_hours": 8.0,
           "exit_code": 0, "preemptions": 0, "reason": "", "array_job": None,
           "array_task": None}

    def setUp(self) -> None:
        self.s = FakeServer().__enter__()
        self.addCleanup(self.s.__exit__)
        self.c = sluice.Client(self.s.url)

    def test_rows_of_the_history_endpoint(self) -> None:
        self.s.route("GET", "/v1/history", Answer(200, {"jobs": [self.ROW], "truncated": True}))
        got = self.c.history(user="alice", state=["succeeded", "failed"], since="2026-12-01",
                             until=datetime.datetime.fromtimestamp(1796083200.5), limit=5)
        self.assertEqual(self.s.requests()[0].query, {
            "user": "alice", "state": "succeeded,failed", "since": "2026-12-01",
            "until": "1796083200.5", "limit": "5"})
        self.assertTrue(got.truncated and got.from_event_log)
        r = got[0]
        self.assertEqual((r.id, r.state, r.exit_code, r.elapsed_s, r.gpu_hours, r.wait_s),
                         (12, "succeeded", 0, 3600.0, 8.0, 0.5))

    def test_a_bad_date_is_refused_before_sending(self) -> None:
        with self.assertRaisesRegex(ValueError, "neither Unix seconds nor a date"):
            self.c.history(since="yesterday")
        self.assertEqual(self.s.requests(), [])

    def test_a_server_without_the_endpoint_gives_rows_of_the_jobs_it_holds(self) -> None:
        self.s.route("GET", "/v1/jobs", Answer(200, {"truncated": False, "jobs": [
            job_view(3, "failed", gpu_milli=2500, submit_time=900.0, admit_time=1000.0,
                     start_time=1000.0, end_time=2800.0, exit_code=2, preemptions=1),
            job_view(2, "succeeded", submit_time=50.0, start_time=100.0, end_time=460.0),
            job_view(1, "cancelled", submit_time=10.0, end_time=50.0)]}))
        got = self.c.history(user="alice", state="failed,succeeded,cancelled")
        self.assertEqual(self.s.requests("/v1/jobs")[0].query, {
            "state": "failed,succeeded,cancelled", "user": "alice"})
        self.assertFalse(got.from_event_log)
        r = got[0]
        self.assertEqual((r.id, r.state, r.exit_code, r.preemptions), (3, "failed", 2, 1))
        self.assertEqual((r.elapsed_s, r.wait_s, r.gpus), (1800.0, 100.0, 2.5))
        self.assertAlmostEqual(r.gpu_hours, 1.25)  # 2.5 GPUs x 0.5 h
        self.assertEqual((got[2].elapsed_s, got[2].gpu_hours), (0.0, 0.0))  # never started
        # The window: jobs that lived in it (submitted by `until`, not ended before `since`).
        self.assertEqual([r.id for r in self.c.history(since=460, until=900)], [3, 2])
        self.assertEqual([r.id for r in self.c.history(since=461)], [3])

    def test_other_404s_are_not_taken_for_an_older_server(self) -> None:
        self.s.route("GET", "/v1/history", Answer(404, {"error": "no namespace nlq"}))
        with self.assertRaises(sluice.NotFound):
            self.c.history(namespace="nlq")

    def test_usage(self) -> None:
        self.s.route("GET", "/v1/usage", Answer(200, {"period": "day", "by": "user", "usage": [
            {"period": "2026-12-01", "user": "alice", "gpu_hours": 12.5, "jobs": 3}]}))
        got = self.c.usage("day", by="user", namespace="nlp")
        self.assertEqual(got, [sluice.UsageRow("2026-12-01", "alice", 12.5, 3)])
        self.assertEqual(self.s.requests()[0].query, {"namespace": "nlp", "period": "day",
                                                      "by": "user"})
        with self.assertRaisesRegex(ValueError, "period must be"):
            self.c.usage("year")


class PlanTest(unittest.TestCase):
    """plan runs `sluice plan --config STATE JOBS --json`: here a stand-in script that checks
    its argv and files."""

    def setUp(self) -> None:
        import tempfile
        self.s = FakeServer().__enter__()
        self.addCleanup(self.s.__exit__)
        self.s.route("GET", "/v1/state", Answer(200, "kind: Snapshot\n"))
        self.dir = tempfile.mkdtemp()
        self.bin = os.path.join(self.dir, "sluice")
        with open(self.bin, "w") as f:
            f.write("#!/bin/sh\n"
                    'echo "$@" > %s/argv\n'
                    'for a in "$@"; do case "$a" in *.yaml|*.json) cat "$a" >> %s/files;; '
                    "esac; done\n"
                    "[ \"$FAIL\" = 1 ] && { echo 'error: jobs.yaml:1: bad' >&2; exit 1; }\n"
                    'echo \'{"now_s": 5.0, "admitted": [{"job": "urgent", "queue": "team"}],'
                    ' "preempted": [], "rejected": [], "pending": []}\'\n' % (self.dir, self.dir))
        os.chmod(self.bin, 0o755)
        self.c = sluice.Client(self.s.url, token="admin-token-0123456789")

    def tearDown(self) -> None:
        import shutil
        os.environ.pop("FAIL", None)
        shutil.rmtree(self.dir, ignore_errors=True)

    def read(self, name: str) -> str:
        with open(os.path.join(self.dir, name)) as f:
            return f.read()

    def test_plan_runs_the_cycle_on_the_live_state(self) -> None:
        got = self.c.plan("kind: Job\nmetadata: {name: urgent}\n", sluice_bin=self.bin, now=5)
        self.assertEqual(got.admitted_jobs(), ["urgent"])
        self.assertEqual(got.now_s, 5.0)
        argv = self.read("argv").split()
        self.assertEqual(argv[:3], ["plan", "--json", "--config"])
        self.assertEqual(argv[-2:], ["--now", "5.0"])
        self.assertEqual(self.read("files"),
                         "kind: Snapshot\nkind: Job\nmetadata: {name: urgent}\n")
        self.assertEqual(self.s.requests("/v1/state")[0].headers["authorization"],
                         "Bearer admin-token-0123456789")

    def test_plan_gets_a_list_as_yaml_documents(self) -> None:
        self.c.plan([{"kind": "Job"}, {"kind": "Pod"}], sluice_bin=self.bin)
        self.assertEqual(self.read("files"),
                         'kind: Snapshot\n{"kind": "Job"}\n---\n{"kind": "Pod"}\n')
        os.remove(os.path.join(self.dir, "files"))
        self.c.plan('[{"kind": "Job"}]', sluice_bin=self.bin)
        self.assertEqual(self.read("files"), 'kind: Snapshot\n{"kind": "Job"}\n')

    def test_plan_says_why_it_failed(self) -> None:
        os.environ["FAIL"] = "1"
        with self.assertRaisesRegex(sluice.PlanFailed, "exit 1.*jobs.yaml:1: bad"):
            self.c.plan({"kind": "Job"}, sluice_bin=self.bin)

    def test_plan_without_a_binary(self) -> None:
        with self.assertRaisesRegex(sluice.PlanFailed, "cannot run"):
            self.c.plan(None, sluice_bin=os.path.join(self.dir, "absent"))


if __name__ == "__main__":
    unittest.main()
