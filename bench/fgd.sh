#!/usr/bin/env bash
# bench/fgd.sh [BUILD_DIR]: the FGD fragmentation experiment, every policy x seeds 42..51, on the
# default Alibaba openb trace (ours vs published at column 100) and on the derived pod mixes.
# Needs the trace: $SLUICE_TRACES/alibaba-openb/ (default ../shared/traces relative to the repo
# root; public at https://github.com/alibaba/clusterdata, cluster-trace-gpu-v2023/csv/).
# Exits 77 (skip) when the trace is absent.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${SLUICE_BIN:-${1:-build}/sluice}
traces=${SLUICE_TRACES:-../shared/traces}
if [ ! -f "$traces/alibaba-openb/openb_pod_list_default.csv" ]; then
  echo "fgd.sh: trace not found under $traces/alibaba-openb (set SLUICE_TRACES)" >&2
  exit 77
fi
seeds=${SEEDS:-42-51}
echo "== default trace: all policies, seeds $seeds (published = ATC'23 artifact, column 100) =="
start=$(date +%s.%N)
"$bin" sim fgd --policy all --mix default --seeds "$seeds"
echo
echo "== derived mixes: policies fgd, fgdpack, fgdmix, binpack, bestfit, gpupacking, random =="
echo "   (the whole family x share table with its tuning/held-out split: bench/fgd_mixes.sh)"
"$bin" sim fgd --policy fgd,fgdpack,fgdmix,binpack,bestfit,gpupacking,random \
  --mix sharing,multigpu,constrained,cpuheavy \
  --seeds "$seeds"
end=$(date +%s.%N)
echo
echo "total wall time: $(echo "$end - $start" | bc) s (s/run column: one policy, one seed, to 130%)"
