#!/usr/bin/env bash
# bench/philly_deadlines.sh [BUILD_DIR]: deadline satisfaction on the Chronus-format Philly trace
# (docs/simulator.md, "Deadlines"). One `sluice sim compare` over the variants, three configs:
# Kueue-like (examples/philly/queues-kueue.yaml), sluice without the deadline term (queues-sluice
# with spec.ordering.weights.deadline 0) and sluice with it (weight $WEIGHTS, one config per
# weight; default "1"). The sluice configs are derived at run time from queues-sluice.yaml, its
# SchedulerPolicy given the weight (the derived configs and the report are written under $OUT).
# Prints the compare table, then per variant and config: strict (class `high`) deadline
# satisfaction, strict p99 wait, utilisation and Jain (contended).
# Needs the trace: $SLUICE_TRACES/philly-chronus/ (default ../shared/traces); exits 77 (skip)
# when it is absent. VARIANTS (space-separated specs) overrides the list.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${SLUICE_BIN:-${1:-build}/sluice}
traces=${SLUICE_TRACES:-../shared/traces}
trace=philly-chronus/trace_job_Philly_MIX1.csv
if [ ! -f "$traces/$trace" ]; then
  echo "philly_deadlines.sh: trace not found under $traces/philly-chronus (set SLUICE_TRACES)" >&2
  exit 77
fi
default_variants="base resample,seed=1 resample,seed=2 resample,seed=3 load=0.8 load=1.2 load=1.5
best-effort=0.2 best-effort=0.5 strict strict,load=1.2 shift-vcs,seed=1
resample,best-effort=0.5,load=1.2,seed=6"
variants=${VARIANTS:-$default_variants}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
# queues-sluice.yaml with spec.ordering.weights.deadline $1 in its SchedulerPolicy (added when
# it has none), written to $2.
with_deadline() {
  python3 - examples/philly/queues-sluice.yaml "$1" "$2" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
policy = next((d for d in docs if d.get("kind") == "SchedulerPolicy"), None)
if policy is None:
    policy = {"apiVersion": "sluice.dev/v1alpha1", "kind": "SchedulerPolicy",
              "metadata": {"name": "default"}, "spec": {}}
    docs.append(policy)
spec = policy.setdefault("spec", {})
weights = spec.setdefault("ordering", {}).setdefault("weights", {})
weights["deadline"] = float(sys.argv[2])
yaml.safe_dump_all(docs, open(sys.argv[3], "w"), sort_keys=False)
PY
}
configs=(examples/philly/queues-kueue.yaml)
with_deadline 0 "$out/sluice-deadline-0.yaml"
configs+=("$out/sluice-deadline-0.yaml")
for w in ${WEIGHTS:-1}; do
  with_deadline "$w" "$out/sluice-deadline-$w.yaml"
  configs+=("$out/sluice-deadline-$w.yaml")
done
args=()
for v in $variants; do args+=(--variant "$v"); done
SLUICE_TRACES=$traces "$bin" sim compare --config "${configs[@]}" \
  --cluster examples/philly/cluster.yaml --trace "$trace" --skip-bad-rows \
  --report "$out/deadlines.json" "${args[@]}"
echo
python3 - "$out/deadlines.json" <<'PY'
import json, os, sys
report = json.load(open(sys.argv[1]))
def name(config):
    base = os.path.basename(config)
    if base == "queues-kueue.yaml":
        return "Kueue-like"
    w = base[len("sluice-deadline-"):-len(".yaml")]
    return "sluice" if w == "0" else f"sluice + deadline {w}"
def m(s):
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.1f} min"
print("| variant | config | strict deadlines met | strict p99 wait | utilisation | Jain (contended) |")
print("|---|---|---|---|---|---|")
for key, r in report.items():
    variant, config = key.rsplit(" ", 1)
    high = r["by_priority_class"].get("high", {})
    d = high.get("deadlines", {})
    sat = f"{100 * d['satisfaction']:.1f}%" if d.get("jobs") else "-"
    print(f"| {variant} | {name(config)} | {sat} | {m(high.get('wait_s', {}).get('p99', 0))} "
          f"| {100 * r['utilisation']:.1f}% | {r['jain_fairness_contended']:.3f} |")
PY
