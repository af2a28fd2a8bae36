#!/usr/bin/env bash
# The shipped Prometheus files: alerting rules are valid, their unit tests (synthetic series:
# every alert fires and stays quiet where it should) pass, and the scrape config is valid.
# Skips (77) without promtool (Debian package `prometheus`).
set -euo pipefail
src=${SLUICE_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
dir=$src/deploy/prometheus
fail() { echo "FAIL: $*" >&2; exit 1; }
if ! command -v promtool >/dev/null 2>&1; then
  echo "SKIP: promtool not installed (apt-get install prometheus)"
  exit 77
fi

promtool check rules "$dir/alerts.yml" || fail "promtool check rules"
# promtool resolves rule_files relative to the test file's directory.
promtool test rules "$dir/alerts_test.yml" || fail "promtool test rules"
promtool check config "$dir/prometheus.yml" || fail "promtool check config"

# Every sluice metric the rules use is one the server documents (docs/api.md "Metrics"), so a
# renamed metric cannot silently leave an alert that never fires.
for m in $(grep -o 'sluice_[a-z0-9_]*' "$dir/alerts.yml" | sed -E 's/_(bucket|count|sum)$//' | sort -u); do
  grep -q "\`$m\`" "$src/docs/api.md" || fail "alerts.yml uses $m, which docs/api.md does not list"
done
echo "ok"
