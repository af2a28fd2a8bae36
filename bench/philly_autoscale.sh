#!/usr/bin/env bash
# bench/philly_autoscale.sh [BUILD_DIR]: issue 37's measurement (docs/simulator.md,
# "Autoscaling"). On the Philly MIX1 trace and workloads derived from it, sluice's full policy
# (examples/philly/queues-sluice.yaml) on the fixed 176-node cluster (examples/philly/
# cluster.yaml, sized for the peak: the queues' quotas add up to its 1,408 GPUs) against the same
# nodes as an autoscaled pool (examples/philly/autoscale/pool-ondemand.yaml, 0-176 nodes, 3 min
# to provision, starting with as many nodes as the fixed cluster: INITIAL), with the placement
# (the policy's `scoring`), the scale-down idle time and the spare nodes as the knobs (RUNS). One line per run: strict (class `high`) p99 wait, best-effort p99,
# node-hours (fixed: 176 x busy span), node-hours saved against the fixed cluster, utilisation of
# the GPUs paid for, busy span, and whether the run holds (strict p99 <= the fixed cluster's and
# >= 20% fewer node-hours).
# Needs the trace under $SLUICE_TRACES (default ../shared/traces); exits 77 when it is absent.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${SLUICE_BIN:-${1:-build}/sluice}
traces=${SLUICE_TRACES:-../shared/traces}
trace=philly-chronus/trace_job_Philly_MIX1.csv
if [ ! -f "$traces/$trace" ]; then
  echo "philly_autoscale.sh: trace not found under $traces/philly-chronus (set SLUICE_TRACES)" >&2
  exit 77
fi
variants=${VARIANTS:-base load=0.7 load=1.3 best-effort=0.2 shift-vcs,seed=2}
# RUNS: the autoscaled runs of each variant, SCORING:IDLE:SPARE[:DEFER[:CONS[:CKPT[:ALIGN]]]] (the
# policy's `scoring`, the pool's scaleDownAfter and spareNodes, with DEFER its deferScaleUp:
# best-effort work, class `low`, asks for nodes only once it has waited DEFER; with CONS, AFTER
# or AFTER/INTERVAL, its consolidation: {after: AFTER, interval: INTERVAL}; with CKPT (30s, 10m,
# 1h) the simulator's checkpoint model, `sim run --checkpoint-every`: every job checkpoints
# every CKPT of run time and a moved or preempted job keeps its work up to the last one; DEFER
# and CONS may be empty: binpack:2m:8::10m/1m, binpack:2m:8:::10m). For each CKPT the fixed
# cluster runs with it too (a row of its own; the runs still compare with the fixed cluster
# without checkpoints, issue 37's baseline). With ALIGN (bins) the policy's spec.alignEnds is
# that instead of true (docs/placement.md, "Runtime bins"), and the fixed cluster runs with it
# too (a row of its own, without checkpoints; the runs still compare with the shipped policy).
runs=${RUNS:-fgdmix:2m:0 fgdmix:2m:8 fgdmix:2m:16 fgdmix:10m:8 fgdmix:30m:8 binpack:2m:8 spread:2m:8}
delay=${DELAY:-3m}        # provisioningDelay
initial=${INITIAL:-176}   # initialNodes: the pool starts as the fixed cluster does
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
queues=${QUEUES:-examples/philly/queues-sluice.yaml}  # QUEUES: another policy to run
pool=examples/philly/autoscale/pool-ondemand.yaml
# A copy of the queues with `scoring: S` (none: the shipped one) and `alignEnds: A` (none: true)
# in the SchedulerPolicy, and of the pool with idle time I, N spare nodes, deferScaleUp D and
# consolidation C (none: empty).
policy_file() { echo "$tmp/q-${1:-fixed}${2:+-$2}.yaml"; }
policy_of() {
  local scoring=""
  [ -z "$1" ] || scoring="\n  scoring: $1"
  sed "s/^  alignEnds: true$/  alignEnds: ${2:-true}$scoring/" "$queues" >"$(policy_file "$@")"
}
pool_file() { echo "$tmp/p-$1-$2-$3-${4//\//_}.yaml"; }
pool_of() {
  local defer="" cons=""
  [ -z "$3" ] || defer="\n  deferScaleUp: {belowPriority: 1000, after: $3}"
  if [ -n "$4" ]; then
    local after=${4%%/*} every=""
    [ "$after" = "$4" ] || every=", interval: ${4#*/}"
    cons="\n  consolidation: {after: $after$every}"
  fi
  sed -e "s/^  scaleDownAfter: .*/  scaleDownAfter: $1\n  spareNodes: $2\n  initialNodes: $initial$defer$cons/" \
      -e "s/^  provisioningDelay: .*/  provisioningDelay: $delay/" "$pool" >"$(pool_file "$@")"
}
ckpts="" aligns=""
for r in $runs; do
  IFS=: read -r s i n d c k al <<<"$r"
  policy_of "$s" "${al:-}"
  pool_of "$i" "$n" "${d:-}" "${c:-}"
  [ -z "${k:-}" ] || [[ " $ckpts " == *" $k "* ]] || ckpts="$ckpts $k"
  [ -z "${al:-}" ] || [[ " $aligns " == *" $al "* ]] || { aligns="$aligns $al" && policy_of "" "$al"; }
done
secs() {  # secs 30s|10m|1h: seconds
  case $1 in
    *s) echo "${1%s}" ;;
    *m) echo $((${1%m} * 60)) ;;
    *h) echo $((${1%h} * 3600)) ;;
    *) echo "$1" ;;
  esac
}
run() {  # run VARIANT CONFIG CLUSTER OUT [CKPT]
  local v=() k=()
  [ "$1" = base ] || v=(--variant "$1")
  [ -z "${5:-}" ] || k=(--checkpoint-every "$(secs "$5")")
  SLUICE_TRACES=$traces "$bin" sim run --quiet --config "$2" --cluster "$3" --trace "$trace" \
    --skip-bad-rows "${v[@]}" "${k[@]}" --report "$4" 2>/dev/null
}
summary() {  # summary REPORT LABEL [FIXED_REPORT]
  python3 - "$@" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
label = sys.argv[2]
def nh(rep):
    a = rep.get("autoscaling")
    return a["node_hours"] if a else rep["capacity_gpus"] / 8 * rep["busy_span_s"] / 3600
def p99(rep, c):
    return rep["by_priority_class"].get(c, {}).get("wait_s", {}).get("p99", 0)
h = nh(r)
a = r.get("autoscaling")
paid = a["paid_utilisation"] if a else r["utilisation"]
line = f"| {label} | {p99(r,'high'):.0f} s | {p99(r,'low')/60:.1f} min | {h:,.0f} |"
if len(sys.argv) > 3:
    f = json.load(open(sys.argv[3]))
    saved = 1 - h / nh(f)
    holds = p99(r, "high") <= p99(f, "high") and saved >= 0.20
    line += f" {100*saved:.1f}% | {100*paid:.1f}% | {r['busy_span_s']/3600:.2f} h | {'yes' if holds else 'no'} |"
else:
    line += f" — | {100*paid:.1f}% | {r['busy_span_s']/3600:.2f} h | — |"
cons = [p["consolidation"] for p in (a or {}).get("pools", []) if "consolidation" in p]
if cons:
    c = cons[0]
    line += (f" {c['nodes_emptied']} nodes emptied, {c['jobs_moved']} jobs moved"
             f" ({c['jobs_started_late']} late), {c['lost_gpu_hours']:.1f} GPU-h lost |")
k = r.get("checkpoints")
if k:
    line += (f" {k['resumed_runs']} of {k['interrupted_runs']} interrupted runs resumed,"
             f" {k['kept_gpu_hours']:.1f} GPU-h kept, {k['lost_gpu_hours']:.1f} lost |")
print(line, flush=True)
PY
}
echo "| variant / run | strict p99 | best-effort p99 | node-hours | saved | paid GPUs used | busy span | holds |"
echo "|---|---|---|---|---|---|---|---|"
for v in $variants; do
  fixed="$tmp/fixed.json"
  run "$v" "$queues" examples/philly/cluster.yaml "$fixed"
  summary "$fixed" "$v fixed 176 nodes"
  for k in $ckpts; do
    run "$v" "$queues" examples/philly/cluster.yaml "$tmp/fixed-k.json" "$k"
    summary "$tmp/fixed-k.json" "$v fixed 176 nodes, checkpoint $k" "$fixed"
  done
  for al in $aligns; do
    run "$v" "$(policy_file "" "$al")" examples/philly/cluster.yaml "$tmp/fixed-a.json"
    summary "$tmp/fixed-a.json" "$v fixed 176 nodes, alignEnds $al" "$fixed"
  done
  for r in $runs; do
    IFS=: read -r sc i n d c k al <<<"$r"
    out="$tmp/a.json"
    run "$v" "$(policy_file "$sc" "${al:-}")" "$(pool_file "$i" "$n" "${d:-}" "${c:-}")" "$out" "${k:-}"
    summary "$out" "$v pool $sc, idle $i, spare $n${d:+, defer $d}${c:+, consolidate $c}${k:+, checkpoint $k}${al:+, alignEnds $al}" "$fixed"
  done
done
