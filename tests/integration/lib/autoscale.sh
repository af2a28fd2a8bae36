# Sourced by the autoscaler's integration scripts (autoscale_live.sh, autoscale_webhook.sh): the
# server's JSON and metrics, jobs by name, bounded waits, and the scripts' end. The sourcing
# script sets $url (the server), $bin (sluice), $tmp, adds the PIDs it starts to pids and traps
# EXIT with cleanup.

pids=()
# Stops what the script started (pids) and every agent a provisioner started (the PID files it
# wrote under $tmp/agents), then removes $tmp.
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  for f in "$tmp"/agents/*.pid; do [[ -f $f ]] && kill "$(cat "$f")" 2>/dev/null || true; done
  rm -rf "$tmp" 2>/dev/null || true
}
fail() {  # the reason, then the end of every log the run wrote
  echo "FAIL: $*" >&2
  for f in "$tmp"/*.log "$tmp"/work/*.log; do [[ -f $f ]] && { echo "== $f" >&2; tail -30 "$f" >&2; }; done
  exit 1
}

json_get() {  # $1 path, $2 python expression on j
  curl -fsS "$url$1" | python3 -c "import json,sys; j=json.load(sys.stdin); print($2)"
}
job_field() { json_get "/v1/jobs/$1" "(lambda j: $2)(j.get('job', j))"; }
wait_for() {  # $1 what, $2... a command that succeeds once it holds; 600 tries 0.1 s apart
  local what=$1; shift
  for _ in $(seq 1 600); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  fail "waiting for $what"
}
calls() { grep -c "^$1 " "$tmp/calls.log" 2>/dev/null || true; }  # $1 op: calls so far
state_is() { [[ $(job_field "$1" 'j["state"]') == "$2" ]]; }
state_in() { local s; s=$(job_field "$1" 'j["state"]'); shift; [[ " $* " == *" $s "* ]]; }
run_job() {  # $1 name, then sluice run's arguments -> the job id
  local name=$1; shift
  "$bin" run --server "$url" -q q --cpu 1 --name "$name" "$@" | sed -n 's/^submitted job \([0-9]*\).*/\1/p'
}
metric() {  # the value of one sample of /metrics, 0 when absent
  curl -fsS "$url/metrics" >"$tmp/metrics.txt"
  awk -v k="$1" '$1 == k {print $2; found=1} END {if (!found) print 0}' "$tmp/metrics.txt"
}
node_ready() { [[ $(json_get /v1/nodes "[n['ready'] for n in j['nodes'] if n['name']=='$1'][0]") == True ]]; }
pool_empty() { [[ $(json_get /v1/pools 'sum(j["pools"][0]["nodes"].values())') == 0 ]]; }
# The cluster both scripts start from: a fixed node f1 with one GPU, flavor `any`, ClusterQueue
# `cq` with room for pool nodes, LocalQueue `q`; the script appends its NodePool.
fixed_cluster_yaml() {
  cat <<'YAML'
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
    flavors: [{name: any, resources: [{name: cpu, nominalQuota: 64}, {name: memory, nominalQuota: 256Gi}, {name: nvidia.com/gpu, nominalQuota: 16}]}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: q, namespace: default}
spec: {clusterQueue: cq}
---
YAML
}
calls_metric() { echo "sluice_provisioner_calls_total{pool=\"$1\",op=\"$2\",result=\"$3\"}"; }
metric_at_least() { [[ $(metric "$1") -ge $2 ]]; }

# provisioner_faults POOL AFTER_FAILED AFTER_TIMEOUT: the provisioner fails (while a `fail` file
# is in $tmp), then hangs past its timeout (a `hang` file; it writes "hanging NODE" to
# calls.log): a job on the fixed node runs as before each time, and the commands AFTER_FAILED
# and AFTER_TIMEOUT check what the failure shows. Once it works again, the waiting job gets its
# node (the failed slots are asked again).
provisioner_faults() {
  local pool=$1 after_failed=$2 after_timeout=$3 before big small
  touch "$tmp/fail"
  before=$(calls create)
  big=$(run_job big --gpus 2 -- true)
  [[ -n $big ]] || fail "submit big"
  wait_for "a failed create" metric_at_least "$(calls_metric "$pool" create failed)" 1
  small=$(run_job small1 --gpus 1 -- true)
  wait_for "a job on the fixed node while the provisioner fails" state_is "$small" succeeded
  $after_failed
  # hang before fail goes: a retry between the two would find neither, create the node and
  # run the waiting job on it, and no call would hang (CI, twenty-eighth session). Both
  # provisioners look at `fail` first.
  touch "$tmp/hang"
  rm "$tmp/fail"
  wait_for "a hanging create" grep -q "^hanging " "$tmp/calls.log"
  small=$(run_job small2 --gpus 1 -- true)
  wait_for "a job on the fixed node while a create hangs" state_is "$small" succeeded
  wait_for "the hanging create's timeout" metric_at_least "$(calls_metric "$pool" create timeout)" 1
  $after_timeout
  rm "$tmp/hang"
  wait_for "the waiting job to get its node once the provisioner works" state_is "$big" succeeded
  [[ $(calls create) -gt $((before + 1)) ]] || fail "no retry after the failures: $(cat "$tmp/calls.log")"
}
