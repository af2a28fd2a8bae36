#!/usr/bin/env bash
# bench/fgd_mixes.sh [--quick] [BUILD_DIR]: the GPU scoring policies on workload mixes derived
# from the Alibaba openb trace (the FGD artifact's families: GPU-model-constrained, multi-GPU,
# GPU sharing, CPU-heavy, and mixtures of them; plus pods pinned to scarce GPU models), family x share x policy, mean ± sample std over
# seeds 42..51 at column 100 (`sluice sim fgd`; mixes: src/sim/fgd/mix.h).
#
# Cross-validation: the `tune` mixes are the ones the default policy's constants were chosen on;
# the `held-out` ones (other shares of each family, and every mixture) were only measured. The
# summary gives, per set, each policy's mean difference to FGD and its worst one.
#
#   --quick        seeds 42-44 and a third of the mixes (about a minute on a 2-core machine)
#   POLICIES=...   comma list (default: fgd,fgdpack,binpack,bestfit,fgdmix)
#   SEEDS=...      seed list (default 42-51, quick 42-44)
# Runs one process at a time under nice -n 10 (seeds in sequence). Needs the trace
# ($SLUICE_TRACES/alibaba-openb/, default ../shared/traces); exits 77 (skip) without it.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
if [ "${1:-}" = "--quick" ]; then quick=1; shift; fi
bin=${SLUICE_BIN:-${1:-build}/sluice}
traces=${SLUICE_TRACES:-../shared/traces}
if [ ! -f "$traces/alibaba-openb/openb_pod_list_default.csv" ]; then
  echo "fgd_mixes.sh: trace not found under $traces/alibaba-openb (set SLUICE_TRACES)" >&2
  exit 77
fi
policies=${POLICIES:-fgd,fgdpack,binpack,bestfit,fgdmix}
case ",$policies," in
  *,fgd,*) ;;
  *) echo "fgd_mixes.sh: POLICIES must include fgd (the table's reference)" >&2; exit 2 ;;
esac
# The multi-GPU threshold was moved on multigpu:0.03-0.15 (tenth session): those are tune mixes
# now, and the last line of `held` was added after that change, never looked at before.
tune="default gpuspec:0.2 gpuspec:0.4 multigpu:0.1 multigpu:0.3 sharing:0.6 sharing:0.9 cpu:0.3 cpu:0.5
multigpu:0.03 multigpu:0.05 multigpu:0.07 multigpu:0.15"
held="gpuspec:0.05 gpuspec:0.1 gpuspec:0.25 gpuspec:0.33 gpuspec:0.5
gpuspecuniform:0.1 gpuspecuniform:0.2 gpuspecuniform:0.3
multigpu:0.2 multigpu:0.4 multigpu:0.5
sharing:0.5 sharing:0.7 sharing:0.8 sharing:1.0
cpu:0.2 cpu:0.4 cpu:0.6
gpuspec:0.2+cpu:0.4 gpuspec:0.33+sharing:0.8 gpuspec:0.25+multigpu:0.2 multigpu:0.3+sharing:0.8
multigpu:0.2+cpu:0.4 sharing:0.8+cpu:0.4 gpuspec:0.2+multigpu:0.2+sharing:0.7+cpu:0.3
multigpu:0.25 cpu:0.1 multigpu:0.05+sharing:0.6 multigpu:0.1+gpuspec:0.2 multigpu:0.07+cpu:0.1 sharing:0.6+cpu:0.1 gpuspec:0.1+sharing:0.5 multigpu:0.12+sharing:0.7+gpuspec:0.1"
seeds=${SEEDS:-42-51}
if [ $quick = 1 ]; then
  seeds=${SEEDS:-42-44}
  tune="default gpuspec:0.4 multigpu:0.3 sharing:0.9 cpu:0.5"
  held="gpuspec:0.1 gpuspecuniform:0.2 multigpu:0.5 sharing:0.7 cpu:0.2 gpuspec:0.2+cpu:0.4 multigpu:0.3+sharing:0.8"
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
start=$(date +%s)
for set in tune held; do
  for mix in ${!set}; do
    echo "$set $mix: $policies, seeds $seeds" >&2
    json=$(nice -n 10 "$bin" sim fgd --policy "$policies" --mix "$mix" --seeds "$seeds" --json)
    echo "$set $json" >>"$out"
  done
done
python3 - "$out" "$policies" "$seeds" <<'PY'
import json, sys
rows, policies = [], sys.argv[2].split(",")
for line in open(sys.argv[1]):
    cut, js = line.split(" ", 1)
    obj = json.loads(js)
    res = obj.get("results", [obj])
    by = {r["policy"]: (r["alloc_pct_100_mean"], r["alloc_pct_100_std"]) for r in res}
    rows.append(("tune" if cut == "tune" else "held-out", res[0]["mix"], by))
def family(mix):
    fams = [p.split(":")[0] for p in mix.split("+")]
    return "mixture" if len(fams) > 1 else fams[0]
print(f"seeds {sys.argv[3]}, GPU allocation % at column 100 (mean ± sample std); "
      "Δ = policy - fgd, best per row in bold\n")
print("| set | family | mix | " + " | ".join(policies) + " | " +
      " | ".join(f"Δ {p}" for p in policies if p != "fgd") + " |")
print("|" + "---|" * (3 + 2 * len(policies) - 1))
for cut, mix, by in rows:
    best = max(by[p][0] for p in policies)
    cells = [(f"**{by[p][0]:.2f} ± {by[p][1]:.2f}**" if by[p][0] == best
              else f"{by[p][0]:.2f} ± {by[p][1]:.2f}") for p in policies]
    deltas = [f"{by[p][0] - by['fgd'][0]:+.2f}" for p in policies if p != "fgd"]
    print(f"| {cut} | {family(mix)} | `{mix}` | " + " | ".join(cells) + " | " +
          " | ".join(deltas) + " |")
print("\nsummary: Δ to fgd per set (mean / worst / rows below fgd)\n")
print("| set | " + " | ".join(p for p in policies if p != "fgd") + " |")
print("|---|" + "---|" * (len(policies) - 1))
for cut in ("tune", "held-out", "all"):
    sel = [by for c, _, by in rows if cut == "all" or c == cut]
    if not sel: continue
    cells = []
    for p in policies:
        if p == "fgd": continue
        d = [by[p][0] - by["fgd"][0] for by in sel]
        cells.append(f"{sum(d)/len(d):+.2f} / {min(d):+.2f} / {sum(x < 0 for x in d)} of {len(d)}")
    print(f"| {cut} | " + " | ".join(cells) + " |")
PY
echo
echo "wall time: $(( $(date +%s) - start )) s"
