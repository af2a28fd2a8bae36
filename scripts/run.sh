#!/usr/bin/env bash
# The main job: install dependencies, build, validate the example configuration and run one
# scheduling cycle over the example jobs, printing admissions, placements and pending reasons.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ex=examples/config
echo "== sluice check $ex/cluster.yaml $ex/queues.yaml"
build/sluice check "$ex/cluster.yaml" "$ex/queues.yaml"
echo
echo "== sluice plan --config $ex/queues.yaml --cluster $ex/cluster.yaml --jobs $ex/jobs.yaml"
build/sluice plan --config "$ex/queues.yaml" --cluster "$ex/cluster.yaml" --jobs "$ex/jobs.yaml"
