#!/usr/bin/env bash
# bench/predict_accuracy.sh [BUILD_DIR]: the accuracy of start predictions on Philly MIX1 and
# variants of it (docs/simulator.md, "Start predictions"). At the arrival of every 5th job still
# pending after its arrival's cycle, `sluice sim compare --predict-every 5` predicts its start
# (core/cycle/predict.h: the state replayed forward) and compares it with when it started.
# Prints one row per (variant, config): predicted jobs, their actual wait p50, absolute error p50
# / p90 / mean, the share within 10% of the actual wait, the share predicted too early.
# PREDICT_ARGS: more `sim` options (e.g. "--predict-arrivals 600"); VARIANTS (space-separated
# specs) and CONFIGS override the lists; SLUICE_BIN another binary (a baseline build).
# Needs the trace: $SLUICE_TRACES/philly-chronus/ (default ../shared/traces). Exits 77 (skip)
# when it is absent.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${SLUICE_BIN:-${1:-build}/sluice}
traces=${SLUICE_TRACES:-../shared/traces}
trace=philly-chronus/trace_job_Philly_MIX1.csv
if [ ! -f "$traces/$trace" ]; then
  echo "predict_accuracy.sh: trace not found under $traces/philly-chronus (set SLUICE_TRACES)" >&2
  exit 77
fi
variants=${VARIANTS:-base load=1.2 resample,seed=1 resample,seed=2}
configs=${CONFIGS:-examples/philly/queues-kueue.yaml examples/philly/queues-sluice.yaml}
out=${OUT:-$(mktemp -d)}
args=()
for v in $variants; do args+=(--variant "$v"); done
# shellcheck disable=SC2086
SLUICE_TRACES=$traces "$bin" sim compare --config $configs --cluster examples/philly/cluster.yaml \
  --trace "$trace" --skip-bad-rows --predict-every 5 ${PREDICT_ARGS:-} --quiet \
  --report "$out/predict.json" "${args[@]}"
python3 - "$out/predict.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
print("| variant | config | predicted | actual wait p50 | abs. error p50 | p90 | mean "
      "| within 10% of the wait | predicted too early |")
print("|---|---|---|---|---|---|---|---|---|")
for key, r in report.items():
    variant, config = key.rsplit(" ", 1)
    p = r.get("start_prediction")
    if not p:
        continue
    name = config.rsplit("/", 1)[-1].replace("queues-", "").replace(".yaml", "")
    e = p["abs_error_s"]
    print(f"| {variant} | {name} | {p['predicted']:,} | {p['wait_p50_s']:.0f} s "
          f"| {e['p50']:.0f} s | {e['p90']:.0f} s | {e['mean']:.0f} s "
          f"| {100 * p['within_10pct']:.1f}% | {100 * p['early_share']:.0f}% |")
PY
