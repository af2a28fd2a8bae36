#!/usr/bin/env bash
# The live autoscaler with a webhook provisioner (issue 37; docs/autoscaling.md, "The webhook"):
# a real `sluice serve` with a fixed one-GPU node and a NodePool whose provisioner is a small
# python3 http.server on a free loopback port. It checks the bearer token, records each call,
# starts a real `sluice agent` (fake GPUs) on create and stops it on delete (only the PIDs it
# started).
#  1. scale-up: a gang of two pods, each a whole pool node, gets two nodes through the webhook;
#  2. scale-down: once idle past scaleDownAfter, both are deleted (their agents stop);
#  3. the webhook answers 500, then hangs past its timeout: each call a `failed` / `timeout`
#     in the metric, the events and /v1/pools, while a job on the fixed node runs as before;
#     once the webhook works again the waiting job gets its node. The token is logged nowhere.
# Every wait is a bounded loop on a condition, never a duration asserted.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/ready.sh"      # wait_ready
source "$(dirname "${BASH_SOURCE[0]}")/lib/autoscale.sh"  # json_get, wait_for, metric, ...
bin=${SLUICE_BIN:?}
command -v curl >/dev/null || { echo "curl missing: skip"; exit 77; }
tmp=$(mktemp -d)
chmod 711 "$tmp"
cd "$tmp"
mkdir -p "$tmp/agents"
trap cleanup EXIT  # lib/autoscale.sh
port=$(free_port)
url=http://127.0.0.1:$port
token=hook-token-$RANDOM$RANDOM
printf '%s\n' "$token" >"$tmp/hook.token"
chmod 600 "$tmp/hook.token"

# The webhook: POST {op, pool, node, reason, shape, server}; `fail` and `hang` files make it
# answer 500 or hang (until the file goes), as a cloud API might. It binds port 0 and says
# which port it got in hook.port.
cat >"$tmp/hook.py" <<'PY'
import json, os, signal, subprocess, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

d, sluice, token = sys.argv[1], sys.argv[2], open(sys.argv[3]).read().strip()

def alive(pidfile):
    try:
        os.kill(int(open(pidfile).read()), 0)
        return True
    except (OSError, ValueError):
        return False

class Hook(BaseHTTPRequestHandler):
    def answer(self, status, text):
        body = text.encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.headers.get("Authorization") != "Bearer " + token:
            return self.answer(401, "bad token")
        op, node, shape = body["op"], body["node"], body["shape"]
        with open(os.path.join(d, "calls.log"), "a") as f:
            f.write("%s %s %s reason=%s gpus=%d model=%s type=%s server=%s\n" % (
                op, body["pool"], node, body["reason"], shape["gpus"], shape["gpu_model"],
                body["capacity_type"], body["server"]))
        if os.path.exists(os.path.join(d, "fail")):
            return self.answer(500, "no capacity in this zone")
        if os.path.exists(os.path.join(d, "hang")) and op == "create":
            with open(os.path.join(d, "calls.log"), "a") as f:
                f.write("hanging %s\n" % node)
            for _ in range(600):  # until the file goes (the server gave up long before)
                if not os.path.exists(os.path.join(d, "hang")):
                    break
                time.sleep(0.1)
            return self.answer(200, "too late")
        pidfile = os.path.join(d, "agents", node + ".pid")
        if op == "create":
            if not alive(pidfile):  # idempotent: a node that exists is done
                log = open(os.path.join(d, "agent-%s.log" % node), "ab")
                p = subprocess.Popen(
                    [sluice, "agent", "--server", body["server"], "--name", node,
                     "--gpus", "fake:%dx%s" % (shape["gpus"], shape["gpu_model"]),
                     "--state-dir", os.path.join(d, "agents", node), "--heartbeat-ms", "200",
                     "--pods-as-agent", "--no-fencer"],
                    stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
                open(pidfile, "w").write(str(p.pid))
            return self.answer(201, json.dumps({"node": node}))
        if op == "delete":
            if os.path.exists(pidfile):  # only the agent this hook started
                pid = int(open(pidfile).read())
                try:
                    os.kill(pid, signal.SIGTERM)
                    for _ in range(100):
                        if os.waitpid(pid, os.WNOHANG)[0] == pid:
                            break
                        time.sleep(0.1)
                    else:
                        os.kill(pid, signal.SIGKILL)
                        os.waitpid(pid, 0)
                except (OSError, ChildProcessError):
                    pass
                os.remove(pidfile)
            return self.answer(200, "")  # a node that is gone is done too
        self.answer(400, "unknown op " + op)

    def log_message(self, *args):
        pass

srv = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
srv.daemon_threads = True
open(os.path.join(d, "hook.port.tmp"), "w").write(str(srv.server_address[1]))
os.rename(os.path.join(d, "hook.port.tmp"), os.path.join(d, "hook.port"))
srv.serve_forever()
PY
python3 "$tmp/hook.py" "$tmp" "$bin" "$tmp/hook.token" >"$tmp/hook.log" 2>&1 &
pids+=($!)
hook_up() { [[ -s $tmp/hook.port ]]; }
wait_for "the webhook" hook_up
hook=http://127.0.0.1:$(cat "$tmp/hook.port")/v1/provision

{ fixed_cluster_yaml; cat <<YAML; } >"$tmp/cluster.yaml"
apiVersion: sluice.dev/v1alpha1
kind: NodePool
metadata: {name: hook}
spec:
  flavor: any
  namePrefix: wh-
  node: {cpu: 4, memory: 8Gi, gpus: {count: 2, model: H100}}
  maxNodes: 3
  scaleDownAfter: 2s
  provisioner:
    webhook: {url: "$hook", bearerTokenFile: $tmp/hook.token}
    timeout: 3s
    retryAfter: 1s
    joinTimeout: 30s
YAML

"$bin" serve --config "$tmp/cluster.yaml" --listen "127.0.0.1:$port" --data-dir "$tmp/data" \
  --heartbeat-ms 200 --cycle-interval-ms 200 >>"$tmp/serve.log" 2>&1 &
pids+=($!)
wait_ready "$url" 20 "${pids[-1]}" || fail "server not ready"
"$bin" agent --server "$url" --name f1 --gpus fake:1xH100 --state-dir "$tmp/f1" \
  --heartbeat-ms 200 --pods-as-agent >"$tmp/agent-f1.log" 2>&1 &
pids+=($!)
wait_for "the fixed node" node_ready f1
event_with() {  # $1 result: a provisioner event with it (and an HTTP status for failed)
  python3 - "$tmp/data/events.jsonl" "$1" <<'PY'
import json, sys
es = [json.loads(l) for l in open(sys.argv[1]) if '"provisioner"' in l]
es = [e for e in es if e.get("event") == "provisioner" and e["result"] == sys.argv[2]]
sys.exit(0 if es and all("http_status" in e for e in es) else 1)
PY
}

# 1. Scale-up: a gang of two pods of two GPUs (each a whole pool node; f1 has one GPU).
gang=$(run_job gang --gang 2 --gpus 2 -- sleep 1)
[[ -n $gang ]] || fail "submit gang"
wait_for "the gang to run and finish" state_is "$gang" succeeded
[[ $(calls create) == 2 ]] || fail "scale-up made $(calls create) create calls, not 2: $(cat "$tmp/calls.log")"
grep -q "^create hook wh-0 reason=scale-up gpus=2 model=H100 type=on-demand server=$url\$" "$tmp/calls.log" ||
  fail "the call's body: $(cat "$tmp/calls.log")"

# 2. Scale-down: both nodes idle past scaleDownAfter are deleted; their agents are gone.
deleted_both() { [[ $(calls delete) -ge 2 ]]; }
wait_for "the idle nodes' deletion" deleted_both
grep -q "^delete hook wh-[01] reason=idle" "$tmp/calls.log" || fail "delete reason: $(cat "$tmp/calls.log")"
wait_for "the pool to be empty" pool_empty
no_agents() { ! compgen -G "$tmp/agents/*.pid" >/dev/null; }
wait_for "the agents to stop" no_agents
[[ $(metric "$(calls_metric hook create ok)") == 2 ]] || fail "create metric: $(grep provisioner_calls "$tmp/metrics.txt")"
[[ $(metric "$(calls_metric hook delete ok)") == 2 ]] || fail "delete metric: $(grep provisioner_calls "$tmp/metrics.txt")"
grep -q "provisioner create hook wh-0: ok" "$tmp/serve.log" || fail "no log line for the calls"
json_get /v1/pools 'j["calls"][0]["http_status"]' >"$tmp/last.txt"
[[ $(cat "$tmp/last.txt") == 200 ]] || fail "/v1/pools http_status: $(cat "$tmp/last.txt")"

# 3. A webhook that answers 500, then one that hangs: scheduling on the fixed node goes on.
failed_call_shown() {
  json_get /v1/pools '[c["result"] + " " + c["output"] for c in j["calls"] if c["result"] != "ok"][0]' >"$tmp/last.txt"
  grep -q "^failed HTTP 500: no capacity in this zone" "$tmp/last.txt" || fail "/v1/pools: $(cat "$tmp/last.txt")"
  wait_for "a failed provisioner event with its HTTP status" event_with failed
}
provisioner_faults hook failed_call_shown "wait_for timeout_event event_with timeout"

# The token is in no log, event or call output of the server's.
leaks=$(grep -rl -- "$token" "$tmp/serve.log" "$tmp/data" 2>/dev/null || true)
[[ -z $leaks ]] || fail "the webhook's token leaked into: $leaks"
echo "ok: autoscale_webhook"
