#!/usr/bin/env python3
"""integration.dashboard: the web dashboard in a real headless Chromium (docs/dashboard.md).

1. `sluice up --demo` on a free loopback port with a private data dir (history sampled every
   second): the overview loads without a console error, every chart has data and paints its
   canvas, the queue and node tables are filled; the jobs view filters; a job's page shows its
   plain-words explanation, its timeline and its log.
2. `sluice serve` with tokens (ServerAuth): the page asks for a token, refuses a wrong one,
   signs in with a right one (kept in the tab's session storage across a reload), hides what
   the token may not see, and signs out.

The browser is Debian's chromium, driven over the DevTools protocol through a pipe (browser.py):
no npm package. Screenshots go to $SLUICE_BUILD_DIR/test-artifacts/dashboard/. Without chromium
the test is skipped (exit 77). Run alone: SLUICE_BIN=build/sluice python3 tests/integration/dashboard.py
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "reliability"))
from browser import Browser, find_chromium  # noqa: E402
from common import BIN, FAILURES, check, free_port, http, is_ready  # noqa: E402
from common import wait_for as poll  # noqa: E402

SRC = os.environ.get("SLUICE_SOURCE_DIR", os.path.join(HERE, "..", ".."))
ART = os.path.join(os.environ.get("SLUICE_BUILD_DIR", os.getcwd()), "test-artifacts", "dashboard")
TMP = tempfile.mkdtemp(prefix="sluice-dashboard-")
PROCS = []

AUTH = """
---
apiVersion: sluice.dev/v1alpha1
kind: ServerAuth
metadata: {name: tokens}
spec:
  joinToken: dashboard-join-0123456789
  tokens:
  - {name: ops, token: dashboard-ops-0123456789, role: admin}
  - {name: alice, token: dashboard-alice-012345, role: member, namespaces: [team-a]}
---
apiVersion: sluice.dev/v1alpha1
kind: Budget
metadata: {name: team-a}
spec: {gpuHours: 10}
---
apiVersion: sluice.dev/v1alpha1
kind: Budget
metadata: {name: team-b}
spec: {gpuHours: 20}
"""

# A job that cannot start while the demo runs (more GPUs than its queue may ever borrow): its
# page must say why it waits.
WAITER = """
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: too-big, namespace: team-b}
spec: {queue: train, pods: 3, gpus: 4, command: [sleep, '1']}
"""


class Skip(Exception):
    pass


def wait_for(fn, timeout, what):
    """fn()'s first true value; a timeout ends the test (what follows would only fail too)."""
    v = poll(fn, timeout, what)
    if not v:
        raise AssertionError("timed out after %ss waiting for %s" % (timeout, what))
    return v


def start(args, name):
    log = open(os.path.join(TMP, name + ".log"), "ab")
    p = subprocess.Popen([BIN] + args, stdout=log, stderr=subprocess.STDOUT)
    PROCS.append(p)
    return p


def stop_all():
    for p in PROCS:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in PROCS:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def shot(page, name):
    path = os.path.join(ART, name + ".png")
    page.screenshot(path)
    print("     screenshot " + path, flush=True)


def no_errors(page, where):
    errors = list(page.errors)
    check(not errors, "no console errors on " + where + (": %s" % errors if errors else ""))


# --- 1. The demo, without tokens ------------------------------------------------------------------
def chart_state(page):
    """Per chart: datasets with at least one point, and painted pixels of its canvas."""
    return page.eval("""(() => {
      const out = {};
      for (const [name, c] of Object.entries(window.sluiceCharts || {})) {
        const ds = c.data.datasets.filter(d => d.data.some(p => p != null && (p.y ?? p) != null));
        const cv = c.canvas, g = cv.getContext('2d').getImageData(0, 0, cv.width, cv.height).data;
        let painted = 0;
        for (let i = 3; i < g.length; i += 4) if (g[i] > 0) painted++;
        out[name] = {series: ds.length, points: ds.reduce((a, d) => a + d.data.length, 0), painted};
      }
      return out;
    })()""")


def test_overview(page, url):
    page.goto(url + "/")
    page.wait_for("document.querySelectorAll('#queues tbody tr').length >= 4", 60, "the queue table")
    names = ["depth", "wait", "alloc", "util", "debt", "preempt", "quota", "hours"]
    # The history holds a sample a second; the page polls every 5 s: wait for charts with data.
    page.wait_for("(() => { const c = window.sluiceCharts || {}; return %s.every(n => c[n] && "
                  "c[n].data.datasets.length > 0); })()" % json.dumps(names), 60, "every chart")
    page.wait_for("window.sluiceCharts.alloc.data.datasets.some(d => d.data.length >= 3)", 60,
                  "three samples in the allocation chart")
    state = chart_state(page)
    print("     charts: %s" % json.dumps(state), flush=True)
    for n in ["depth", "wait", "alloc", "debt", "preempt", "quota", "hours"]:
        s = state.get(n, {})
        check(s.get("series", 0) > 0 and s.get("points", 0) > 0 and s.get("painted", 0) > 500,
              "chart %s has data and paints its canvas (%s)" % (n, s))
    check(state.get("util", {}).get("painted", 0) > 500,
          "the utilisation chart draws its axes (fake GPUs report no NVML samples)")
    check(page.eval("document.querySelectorAll('#nodes tbody tr').length") == 4,
          "the node table lists the demo's 2 nodes and its pool's 2 slots")
    # Right-sizing (GET /v1/advise): the demo's namespaces with the GPU-hours their jobs held.
    page.wait_for("document.querySelector('#advise-totals tbody td:not(.note)') !== null", 90,
                  "the right-sizing table")
    report = json.loads(http("GET", url + "/v1/advise")[1])
    shown = page.eval("[...document.querySelectorAll('#advise-totals tbody tr')]"
                      ".map(r => r.cells[0].textContent + '/' + r.cells[1].textContent)")
    served = ["%s/%s" % (t["namespace"], t["user"]) for t in report["totals"]]
    check(shown and all(row in served for row in shown),
          "the right-sizing rows are GET /v1/advise's (%s; %s)" % (shown, served))
    check(page.eval("document.querySelector('#advise-none, #advise-jobs') !== null"),
          "the right-sizing section lists the over-requesting jobs or says there are none")
    # GPUs allocated per node is stacked: two nodes with the same allocation (the demo's are
    # both full most of the time) are two bands, not one line drawn over the other. The first
    # two series are local-0 and local-1 (sorted before the pool's pool-0 and pool-1).
    page.wait_for("(() => { const c = window.sluiceCharts.alloc, d = c.data.datasets; return d.length"
                  " === 4 && d[0].label === 'local-0' && d[1].label === 'local-1' && "
                  "d[0].data.some((p, k) => p.y > 0 && d[1].data[k].y > 0); })()", 60,
                  "a sample where both nodes have GPUs allocated")
    apart = page.eval("(() => { const c = window.sluiceCharts.alloc, d = c.data.datasets; "
                      "const m0 = c.getDatasetMeta(0), m1 = c.getDatasetMeta(1); "
                      "return d[0].data.map((p, k) => [p.y, d[1].data[k].y, m0.data[k].y, m1.data[k].y])"
                      ".filter(v => v[0] > 0 && v[1] > 0).every(v => Math.abs(v[2] - v[3]) >= 1); })()")
    check(apart, "each node's allocation line is drawn apart from the other's (stacked)")
    # Preemptions are counted over the window the history covers, never extrapolated.
    few = page.eval("Sluice.preemptionsIn([{t: 100, preemptions_total: 0}, {t: 102, "
                    "preemptions_total: 1}, {t: 105, preemptions_total: 4}], 60)")
    check(few == {"count": 4, "window": 5}, "4 preemptions in 5 s count as 4 in 5 s (%s)" % few)
    minute = page.eval("Sluice.preemptionsIn([0, 30, 50, 70, 90].map((t, i) => ({t, "
                       "preemptions_total: i * 2})), 60)")
    check(minute == {"count": 6, "window": 60}, "a longer history counts the last minute only (%s)" % minute)
    card = page.eval("document.querySelector('#card-preempt').textContent")
    check("preemptions" in card and "/ min" not in card,
          "the preemption card says the window it counts over: %r" % card)
    check(page.eval("document.querySelector('#card-gpus .v').textContent.endsWith('/ 12')"),
          "the GPU card counts the demo's 8 GPUs and its pool's 4")
    check("no tokens" in page.eval("document.getElementById('who').textContent"),
          "the header says the server needs no token")
    shot(page, "overview")
    no_errors(page, "the overview")


def test_jobs(page, url):
    page.goto(url + "/#/jobs")
    page.wait_for("document.querySelectorAll('#jobs tbody tr a').length > 5", 60, "the jobs table")
    n_all = page.eval("document.querySelectorAll('#jobs tbody tr').length")
    page.eval("location.hash = '#/jobs?namespace=batch'")
    page.wait_for("location.hash.includes('batch') && document.querySelectorAll('#jobs tbody tr')"
                  ".length > 0 && [...document.querySelectorAll('#jobs tbody tr')].every("
                  "r => r.children[2].textContent === 'batch')", 30, "the namespace filter")
    n_batch = page.eval("document.querySelectorAll('#jobs tbody tr').length")
    check(0 < n_batch < n_all, "the namespace filter keeps batch's jobs only (%d of %d)" % (n_batch, n_all))
    # The state select submits the form itself; the address keeps the filters.
    page.eval("(() => { const f = document.getElementById('job-filters'); f.elements.state.value = "
              "'pending'; f.elements.state.dispatchEvent(new Event('change', {bubbles: true})); })()")
    page.wait_for("location.hash.includes('state=pending') && location.hash.includes('namespace=batch')",
                  20, "the state filter in the address")
    # A user column, for the user filter: every row shows its submitter.
    page.eval("location.hash = '#/jobs'")
    page.wait_for("!location.hash.includes('state') && document.querySelectorAll('#jobs tbody tr a')"
                  ".length > 5", 30, "all jobs")
    check(page.eval("document.querySelectorAll('#jobs thead th')[3].textContent") == "user",
          "the jobs table has a user column")
    user = page.eval("document.querySelector('#jobs tbody tr').children[3].textContent")
    check(bool(user), "a job's row names its user (%r)" % user)
    page.eval("location.hash = '#/jobs?user=' + encodeURIComponent(%s)" % json.dumps(user))
    page.wait_for("location.hash.includes('user=') && document.querySelectorAll('#jobs tbody tr a')"
                  ".length > 0 && [...document.querySelectorAll('#jobs tbody tr')].every(r => "
                  "r.children[3].textContent === %s)" % json.dumps(user), 30, "the user filter")
    page.eval("location.hash = '#/jobs'")
    page.wait_for("document.querySelectorAll('#jobs tbody tr').length > 5", 30, "all jobs again")
    shot(page, "jobs")
    no_errors(page, "the jobs view")


def test_job_page(page, url, waiter_id, done_id):
    page.goto(url + "/#/job/%d" % waiter_id)
    text = page.wait_for("(() => { const e = document.getElementById('explanation'); "
                         "return e && e.textContent.includes('Why:') && e.textContent; })()", 60,
                         "the explanation of a waiting job")
    check("is pending" in text and "job %d" % waiter_id in text,
          "a waiting job's page explains in words why it waits: %r" % text.splitlines()[0])
    check(page.eval("document.getElementById('job-state').textContent") == "pending",
          "the job page shows the state")
    check(page.eval("document.querySelectorAll('#timeline div').length") >= 1,
          "the job page draws its timeline")
    check("has not run" in page.wait_for("document.querySelector('#view .note') && "
                                         "[...document.querySelectorAll('#view p.note')].map(e => e.textContent).join(' ')",
                                         30, "the log note"),
          "a job that has not run says it has no log yet")
    shot(page, "job-pending")
    page.goto(url + "/#/job/%d" % done_id)
    log = page.wait_for("document.getElementById('log') && document.getElementById('log').textContent",
                        60, "the log of a finished job")
    check("pod 0/" in log, "a finished job's page shows its log: %r" % log[:80])
    check(page.eval("document.querySelectorAll('.steps li').length") >= 3,
          "a finished job's timeline lists submitted, admitted, started, ended")
    # The log pane opens at its end and follows while the reader is there; one who scrolled up
    # stays put. (The demo's logs are short: a long one is put through the page's own code.)
    follow = page.eval("""(() => {
      const slot = document.getElementById('log').parentNode, lines = (n) => Array.from(
        {length: n}, (_, i) => 'line ' + i).join('\\n');
      const end = (p) => p.scrollTop + p.clientHeight >= p.scrollHeight - 4;
      slot.replaceChildren();
      const p = Sluice.showLog(slot, lines(2000));
      const opened = p.scrollHeight > p.clientHeight && end(p);
      Sluice.showLog(slot, lines(2100));
      const followed = end(p);
      p.scrollTop = 0;
      Sluice.showLog(slot, lines(2200));
      return {opened, followed, stayed: p.scrollTop === 0};
    })()""")
    check(follow == {"opened": True, "followed": True, "stayed": True},
          "the log opens at its end, follows it, and leaves a reader who scrolled up (%s)" % follow)
    shot(page, "job")
    no_errors(page, "the job pages")


def test_preempted_job(page, url):
    """The demo's urgent gang preempts sweeps: such a job's page lists every run."""
    def preempted():
        st, body = http("GET", url + "/v1/jobs?namespace=batch")
        jobs = json.loads(body)["jobs"] if st == 200 else []
        return next((j for j in jobs if j["preemptions"] >= 1), None)
    job = wait_for(preempted, 120, "a preempted demo job")
    page.goto(url + "/#/job/%d" % job["id"])
    rows = page.wait_for("document.querySelectorAll('#runs tbody tr').length >= 1 && "
                         "[...document.querySelectorAll('#runs tbody tr')].map(r => "
                         "[...r.children].map(c => c.textContent))", 60, "the runs of a preempted job")
    print("     runs: %s" % rows, flush=True)
    check(any("preempted by job" in r[5] and r[1] for r in rows),
          "a preempted job's page lists the preempted run, its node and why it ended")
    runs = json.loads(http("GET", url + "/v1/jobs/%d" % job["id"])[1])["runs"]
    check(len(rows) in (len(runs), len(runs) - 1), "one row per run the server knows (%d, %d)"
          % (len(rows), len(runs)))
    shot(page, "job-preempted")
    no_errors(page, "a preempted job's page")


def test_drained_node(page, url):
    """An admin drains a node from the page (the API's drain): it is not counted as ready, and
    its reason shows; resume puts it back. (The pool's 2 slots are empty by now: 2 of 4 ready.)"""
    node = json.loads(http("GET", url + "/v1/nodes")[1])["nodes"][0]["name"]
    page.goto(url + "/")
    page.wait_for("document.querySelectorAll('#nodes tbody tr').length == 4 && "
                  "!document.getElementById('node-actions').hidden", 60, "the node actions")
    page.eval("(() => { document.getElementById('action-node').value = %s; document.getElementById("
              "'action-reason').value = 'bad DIMM'; document.getElementById('action-drain').click(); })()"
              % json.dumps(node))
    page.wait_for("document.getElementById('action-result').textContent.includes('drain done')", 30,
                  "the drain to be done")
    hold = json.loads(http("GET", url + "/v1/nodes")[1])["nodes"][0]
    check(hold["hold"] in ("draining", "drained") and hold["hold_reason"] == "bad DIMM",
          "the page's drain went through the API with its reason (%s)" % hold)
    page.wait_for("document.querySelector('#card-nodes .v').textContent === '1 / 4'", 30,
                  "the drained node left out of the ready count")
    state = page.eval("[...document.querySelectorAll('#nodes tbody tr')].map(r => "
                      "r.children[1].textContent).join(' | ')")
    check("bad DIMM" in state and "drain" in state, "the node table shows the hold and why: %r" % state)
    shot(page, "overview-drained")
    page.eval("document.getElementById('action-resume').click()")
    page.wait_for("document.querySelector('#card-nodes .v').textContent === '2 / 4'", 30,
                  "the node ready again after resume")
    no_errors(page, "the overview with a drained node")


def test_cancel(page, url, waiter_id):
    """Cancel from a job's page: a first click asks, the second cancels (through the API)."""
    page.goto(url + "/#/job/%d" % waiter_id)
    page.wait_for("!!document.getElementById('cancel-job')", 60, "the cancel button")
    page.eval("document.getElementById('cancel-job').click()")
    check(json.loads(http("GET", url + "/v1/jobs/%d" % waiter_id)[1])["state"] == "pending",
          "one click only asks")
    page.eval("document.getElementById('cancel-job').click()")
    page.wait_for("document.getElementById('job-state').textContent === 'cancelled'", 30,
                  "the cancellation on the page")
    check(json.loads(http("GET", url + "/v1/jobs/%d" % waiter_id)[1])["state"] == "cancelled",
          "the job is cancelled")
    no_errors(page, "cancelling from a job's page")


def test_demo_pool(page, url):
    """The demo's burst gang gets two pool nodes (local agents its provisioner script starts),
    which go once idle: create and delete calls, each a line on the overview."""
    def calls(op):
        got = json.loads(http("GET", url + "/v1/pools")[1])["calls"]
        return [c for c in got if c["op"] == op and c["result"] == "ok"]
    wait_for(lambda: len(calls("create")) >= 2, 120, "the demo pool's two create calls")
    burst = wait_for(lambda: [j for j in json.loads(http("GET", url + "/v1/jobs?state=succeeded")[1])
                              ["jobs"] if j["name"] == "burst"], 120, "the burst gang to finish")
    check(len(burst) == 1, "the burst gang ran on the pool's nodes")
    wait_for(lambda: len(calls("delete")) >= 2, 120, "the demo pool's idle nodes to go")
    check(all(c["reason"] == "idle" for c in calls("delete")), "deleted because idle")
    page.goto(url + "/")
    page.wait_for("document.querySelectorAll('#provisioner-calls tbody tr').length >= 4", 60,
                  "the pool's calls on the overview")
    pool = page.eval("document.querySelector('#pools tbody tr').textContent")
    check(pool.startswith("demo"), "the demo pool's line (%r)" % pool)


def demo(browser):
    port = free_port()
    url = "http://127.0.0.1:%d" % port
    start(["up", "--demo", "--data-dir", os.path.join(TMP, "up"), "--listen", "127.0.0.1:%d" % port,
           "--dashboard-sample-ms", "1000", "--heartbeat-ms", "200"], "up")
    wait_for(lambda: is_ready(url), 60, "sluice up")
    st, body = http("GET", url + "/")
    check(st == 200 and "/ui/app.js" in body, "GET / serves the dashboard's page")
    if not json.loads(http("GET", url + "/v1/dashboard")[1])["charts"]:
        raise Skip("this sluice was built without Chart.js (apt-get install libjs-chart.js, "
                   "then reconfigure): the dashboard draws no charts to test")
    st, js = http("GET", url + "/ui/chart.js")
    check(st == 200 and "Chart.js v" in js, "the server serves Chart.js, embedded at build time")
    # Some demo jobs finish (their logs), then one that waits. Not the burst gang: its logs were
    # on the pool's nodes, gone with them once idle.
    def finished():
        st, body = http("GET", url + "/v1/jobs?state=succeeded")
        jobs = [j for j in json.loads(body)["jobs"] if j["name"] != "burst"] if st == 200 else []
        return jobs[-1]["id"] if jobs else None
    done_id = wait_for(finished, 120, "a demo job to finish")
    st, body = http("POST", url + "/v1/jobs", WAITER, ctype="application/yaml")
    check(st == 202, "a job too big to start is accepted (%d %s)" % (st, body[:200]))
    waiter_id = json.loads(body)["jobs"][0]["id"]
    page = browser.new_page(1400, 1000)
    test_overview(page, url)
    test_demo_pool(page, url)
    test_jobs(page, url)
    test_job_page(page, url, waiter_id, done_id)
    test_preempted_job(page, url)
    test_drained_node(page, url)
    test_cancel(page, url, waiter_id)


# --- 2. Node pools: the provisioner's calls, a line each ------------------------------------------
POOLS = """
apiVersion: sluice.dev/v1alpha1
kind: Cluster
metadata: {name: c}
spec:
  nodes:
  - {name: f1, cpu: 4, memory: 8Gi, gpus: {count: 1, model: H100}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: any}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors: [{name: any, resources: [{name: cpu, nominalQuota: 64}, {name: memory, nominalQuota: 64Gi}, {name: nvidia.com/gpu, nominalQuota: 8}]}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: q, namespace: default}
spec: {clusterQueue: cq}
---
apiVersion: sluice.dev/v1alpha1
kind: NodePool
metadata: {name: spot}
spec:
  flavor: any
  namePrefix: sp-
  node: {cpu: 4, memory: 8Gi, gpus: {count: 2, model: H100}}
  maxNodes: 2
  capacityType: spot
  provisioner:
    command: [sh, -c, 'echo "no capacity in this zone" >&2; exit 1', provision]
    retryAfter: 1s
"""

POOL_JOB = """
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: wide, namespace: default}
spec: {queue: q, gpus: 2, command: ["true"]}
"""


def pools(browser):
    """A pool whose provisioner fails: the overview lists the pool and each failed call, with
    its exit status and what it said (docs/dashboard.md, docs/autoscaling.md)."""
    port = free_port()
    url = "http://127.0.0.1:%d" % port
    cfg = os.path.join(TMP, "pools.yaml")
    with open(cfg, "w") as f:
        f.write(POOLS)
    start(["serve", "--config", cfg, "--data-dir", os.path.join(TMP, "pools"), "--listen",
           "127.0.0.1:%d" % port, "--cycle-interval-ms", "200"], "pools")
    wait_for(lambda: is_ready(url), 60, "sluice serve with a pool")
    st, body = http("POST", url + "/v1/jobs", POOL_JOB, ctype="application/yaml")
    check(st == 202, "a job only a pool node could hold is accepted (%d %s)" % (st, body[:200]))

    def failed_call():
        calls = json.loads(http("GET", url + "/v1/pools")[1])["calls"]
        return any(c["result"] == "failed" for c in calls)
    wait_for(failed_call, 60, "a failed provisioner call")
    page = browser.new_page(1400, 1000)
    page.goto(url + "/")
    page.wait_for("document.querySelectorAll('#provisioner-calls tbody tr').length > 0", 60,
                  "the provisioner's calls on the overview")
    row = page.eval("document.querySelector('#provisioner-calls tbody tr').textContent")
    check("create" in row and "sp-" in row and "failed (exit 1)" in row and
          "no capacity in this zone" in row, "a call's line: what, which node, how, why (%r)" % row)
    pool = page.eval("document.querySelector('#pools tbody tr').textContent")
    check(pool.startswith("spot") and "spot" in pool[4:], "the pool's line (%r)" % pool)
    shot(page, "overview-pools")
    no_errors(page, "the overview with a node pool")


# --- 2. Tokens -------------------------------------------------------------------------------
def sign_in(page, token):
    page.eval("(() => { document.getElementById('token').value = %s; document.getElementById("
              "'sign-in-form').requestSubmit(); })()" % json.dumps(token))


def tokens(browser):
    cfg = os.path.join(TMP, "auth.yaml")
    with open(cfg, "w") as f:
        for part in ("cluster", "queues"):
            f.write(open(os.path.join(SRC, "examples", "demo", part + ".yaml")).read() + "\n---\n")
        f.write(AUTH)
    port = free_port()
    url = "http://127.0.0.1:%d" % port
    start(["serve", "--config", cfg, "--data-dir", os.path.join(TMP, "serve"), "--listen",
           "127.0.0.1:%d" % port, "--dashboard-sample-ms", "1000", "--quiet"], "serve")
    wait_for(lambda: is_ready(url), 60, "sluice serve")
    st, body = http("GET", url + "/v1/dashboard")
    check(st == 200 and json.loads(body)["caller"] is None and json.loads(body)["samples"] == [],
          "/v1/dashboard without a token says only that one is needed")
    page = browser.new_page(1280, 800)
    page.goto(url + "/")
    page.wait_for("!document.getElementById('sign-in').hidden", 30, "the sign-in form")
    check(page.eval("document.getElementById('view').hidden"), "nothing is shown before signing in")
    shot(page, "sign-in")
    sign_in(page, "wrong-token-123456")
    page.wait_for("document.getElementById('sign-in-error').textContent.includes('did not accept')", 30,
                  "the refusal of a wrong token")
    check(page.eval("sessionStorage.getItem('sluice.token')") is None, "a refused token is not kept")
    sign_in(page, "dashboard-alice-012345")
    page.wait_for("document.querySelectorAll('#queues tbody tr').length >= 4", 60,
                  "the overview after signing in")
    check("signed in as alice" in page.eval("document.getElementById('who').textContent"),
          "the header names the token's user")
    check(page.eval("document.getElementById('node-actions').hidden"),
          "a member is not offered the admin's node actions")
    page.goto(url + "/")  # a reload keeps the session's token
    page.wait_for("document.querySelectorAll('#queues tbody tr').length >= 4", 60,
                  "the overview after a reload")
    check(page.eval("sessionStorage.getItem('sluice.token')") == "dashboard-alice-012345",
          "the token stays in the tab's session storage")
    def namespaces(token):  # those in the history (both have a budget, so both are there)
        body = json.loads(http("GET", url + "/v1/dashboard", token=token)[1])
        return sorted(set().union(*[set(s["namespaces"]) for s in body["samples"]]))
    check(namespaces("dashboard-ops-0123456789") == ["team-a", "team-b"],
          "an admin's history has every namespace's budget")
    check(namespaces("dashboard-alice-012345") == ["team-a"],
          "a member's history holds only its namespaces")
    shot(page, "signed-in")
    page.eval("document.getElementById('sign-out').click()")
    page.wait_for("!document.getElementById('sign-in').hidden && "
                  "sessionStorage.getItem('sluice.token') === null", 30, "signing out")
    no_errors(page, "the sign-in pages")


def main():
    if not find_chromium():
        print("SKIP: chromium is not installed (scripts/deps.sh test installs it)")
        return 77
    os.makedirs(ART, exist_ok=True)
    browser = Browser(os.path.join(TMP, "chromium"))
    try:
        demo(browser)
        pools(browser)
        tokens(browser)
    except Skip as e:
        print("SKIP: %s" % e)
        return 77
    except Exception as e:  # noqa: BLE001: a failed wait is a failed test, with its message
        check(False, "%s: %s" % (type(e).__name__, e))
    finally:
        browser.close()
        stop_all()
    if FAILURES:
        print("%d check(s) failed; logs in %s, screenshots in %s" % (len(FAILURES), TMP, ART))
        return 1
    shutil.rmtree(TMP, ignore_errors=True)
    print("all dashboard checks passed; screenshots in " + ART)
    return 0


if __name__ == "__main__":
    sys.exit(main())
