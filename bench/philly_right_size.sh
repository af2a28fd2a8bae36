#!/usr/bin/env bash
# bench/philly_right_size.sh [BUILD_DIR]: right-sizing on the Philly MIX1 trace and two of its
# variants (docs/simulator.md, "Right-sizing"): the Kueue-like and sluice configs on
# examples/philly/right-size/cluster-mig.yaml (a quarter of the GPUs MIG-partitioned), with and
# without --right-size auto, plus the same configs on the unpartitioned cluster for reference.
# The queue files that cover the MIG slices are derived from the shipped ones at run time: each
# ClusterQueue gets a quarter of its GPU quota (its share of the partitioned GPUs) as 3g.40gb
# and 2g.20gb slices and twice that as 1g.10gb. VARIANTS overrides the variants; HEADROOM the
# right-sizing headroom in percent (default 20).
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=$build/sluice
traces=${SLUICE_TRACES:-$root/../shared/traces}
[[ -f $traces/philly-chronus/trace_job_Philly_MIX1.csv ]] || {
  echo "philly_right_size.sh: trace not found under $traces/philly-chronus (set SLUICE_TRACES)" >&2
  exit 77
}
export SLUICE_TRACES=$traces
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for c in kueue sluice; do
  python3 - "$root/examples/philly/queues-$c.yaml" "$work/queues-$c-mig.yaml" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
text = text.replace("coveredResources: [nvidia.com/gpu]",
                    "coveredResources: [nvidia.com/gpu, nvidia.com/mig-3g.40gb, "
                    "nvidia.com/mig-2g.20gb, nvidia.com/mig-1g.10gb]")
def slices(m):
    indent, n = m.group(1), int(m.group(2))
    q = n // 4
    return (m.group(0) + "\n" + "\n".join(
        "%s- {name: nvidia.com/mig-%s, nominalQuota: %d}" % (indent, p, k)
        for p, k in (("3g.40gb", q), ("2g.20gb", q), ("1g.10gb", 2 * q))))
text = re.sub(r"^( *)- \{name: nvidia.com/gpu, nominalQuota: (\d+)\}", slices, text, flags=re.M)
open(sys.argv[2], "w").write(text)
PY
done
variants=${VARIANTS:-base load=1.3 shift-vcs,seed=1}
vargs=()
for v in $variants; do vargs+=(--variant "$v"); done
common=(--trace philly-chronus/trace_job_Philly_MIX1.csv --skip-bad-rows "${vargs[@]}")
echo "== unpartitioned cluster (examples/philly/cluster.yaml), no right-sizing"
"$bin" sim compare --config "$root"/examples/philly/queues-{kueue,sluice}.yaml \
  --cluster "$root/examples/philly/cluster.yaml" "${common[@]}" --report "$work/whole.json" >/dev/null
python3 "$root/bench/right_size_summary.py" "$work/whole.json"
for rs in off auto; do
  echo "== cluster-mig.yaml, --right-size $rs"
  "$bin" sim compare --config "$work"/queues-{kueue,sluice}-mig.yaml \
    --cluster "$root/examples/philly/right-size/cluster-mig.yaml" "${common[@]}" --right-size "$rs" \
    --right-size-headroom "${HEADROOM:-20}" \
    --report "$work/mig-$rs.json" >/dev/null
  python3 "$root/bench/right_size_summary.py" "$work/mig-$rs.json"
done
