#!/usr/bin/env bash
# The simulator's speed run (issue 4, "Speed"): `sluice sim run --trace-format synthetic` with
# preemption on (bench/sim_scale/queues.yaml: ten teams, borrowing, reclaim, preemption of
# `low` work, backfill) on 10,000 GPUs (bench/sim_scale/cluster.yaml) at 10k, 100k and 1M jobs.
# Reports wall time, events/s and peak RSS (/usr/bin/time -v) per size, and how each grows from
# one size to the next. Targets: 1M jobs under 60 s and under 2 GiB.
#
#   bench/sim_scale.sh [SLUICE_BIN] [SIZES...]     (default: build/sluice 10000 100000 1000000)
#
# The load (RATE jobs/s, default 0.6, diurnal swing 0.5): 1/2/4/8 GPUs at 70/10/15/5% plus 1%
# gangs of 64 GPUs (mean 2.5 GPUs), run times log-uniform 1 min .. 8 h (mean 78 min): at 0.6/s
# about 70% of the GPUs on average and 105% at the daily peak, where queues build up (RATE=1 is
# 117% on average: the backlog then grows without bound). 20% of the jobs are `high`, half are
# preemptible. Seed 1. CYCLE_INTERVAL=S (default 0: a cycle per batch of events) passes
# --cycle-interval S. SCORING=POLICY (fgdmix, fgdpack, binpack, ...) adds a SchedulerPolicy with
# that GPU scoring policy (default: none, so the binary's default); ALIGN_ENDS=true|false sets
# spec.alignEnds in it the same way. SEED=N (default 1).
# Columns: wall and CPU (user + system) time of the whole command, the simulation loop's wall
# time, and the report's decision digest (equal digests: the same decisions).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-$here/../build/sluice}
shift || true
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(10000 100000 1000000)
[ -x /usr/bin/time ] || { echo "/usr/bin/time missing (apt-get install time)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
config=$here/sim_scale/queues.yaml
spec=""
[ -z "${SCORING:-}" ] || spec+="scoring: $SCORING, "
[ -z "${ALIGN_ENDS:-}" ] || spec+="alignEnds: $ALIGN_ENDS, "
if [ -n "$spec" ]; then
  config=$tmp/queues.yaml
  { cat "$here/sim_scale/queues.yaml"
    printf -- '---\napiVersion: sluice.dev/v1alpha1\nkind: SchedulerPolicy\nmetadata: {name: default}\nspec: {%s}\n' "${spec%, }"
  } >"$config"
fi

printf '| jobs | wall s | CPU s | sim loop s | events | events/s | cycles | preemptions | utilisation | peak RSS MiB | digest |\n'
printf '|---|---|---|---|---|---|---|---|---|---|---|\n'
prev_wall=""
prev_rss=""
growth=""
for n in "${sizes[@]}"; do
  /usr/bin/time -v -o "$tmp/time.txt" "$bin" sim run \
    --config "$config" --cluster "$here/sim_scale/cluster.yaml" \
    --trace-format synthetic --jobs "$n" --arrival-rate "${RATE:-0.6}" --diurnal-amplitude 0.5 \
    --min-duration 60 --max-duration 28800 --large-gang-fraction 0.01 --large-gang-gpus 64 \
    --high-priority-fraction 0.2 --preemptible-fraction 0.5 --seed "${SEED:-1}" \
    --cycle-interval "${CYCLE_INTERVAL:-0}" \
    --report "$tmp/report.json" >"$tmp/out.txt"
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$tmp/time.txt")
  rss_kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$tmp/time.txt")
  cpu=$(awk -F': ' '/User time|System time/ {s+=$2} END {printf "%.2f", s}' "$tmp/time.txt")
  # "simulated E events, C cycles in S s (R events/s)"
  read -r events cycles loop rate < <(sed -n 's/^simulated \([0-9]*\) events, \([0-9]*\) cycles in \([0-9.]*\) s (\([0-9]*\) events\/s).*/\1 \2 \3 \4/p' "$tmp/out.txt")
  read -r pre util digest < <(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); s=j["simulation"]; print(s["preemptions"], "%.1f%%" % (100*j["utilisation"]), s.get("decision_digest", "-"))' "$tmp/report.json")
  rss=$((rss_kb / 1024))
  printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$n" "$wall" "$cpu" "$loop" "$events" "$rate" "$cycles" "$pre" "$util" "$rss" "$digest"
  if [ -n "$prev_wall" ]; then
    growth+=$(python3 -c 'import sys; a,b,c,d=map(float,sys.argv[1:]); print("x%.1f wall, x%.1f RSS" % (b/a if a>0 else 0, d/c if c>0 else 0))' "$prev_wall" "$wall" "$prev_rss" "$rss")
    growth+=" from $prev_n to $n jobs; "
  fi
  prev_wall=$wall
  prev_rss=$rss
  prev_n=$n
done
if [ -n "$growth" ]; then echo "growth: $growth"; fi
