#!/usr/bin/env bash
# services_untouched.sh [-s SERVICE]... -- COMMAND...: runs COMMAND and checks that the host's
# own services came through it untouched (issue 18: "a fresh Debian machine with a running nginx
# and Prometheus still has both running, enabled and untouched after scripts/run.sh and
# scripts/test.sh"). Default services: nginx and prometheus.
#
# Before and after COMMAND it reads, and only reads, for each service: the PIDs of the processes
# of that exact name, the TCP ports they listen on, whether the service is enabled (systemctl
# is-enabled where systemd runs; otherwise the links Debian's installer made under
# /etc/systemd/system/*.wants and /etc/rc?.d) and a checksum of its configuration. Any
# difference fails, with both readings printed. It never starts, stops or signals anything.
# Not part of ctest: it wraps the test command itself (docs/benchmarks.md shows a run).
set -euo pipefail
services=()
while [ $# -gt 0 ]; do
  case $1 in
    -s) services+=("$2"); shift 2 ;;
    --) shift; break ;;
    *) echo "usage: $0 [-s SERVICE]... -- COMMAND..." >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "usage: $0 [-s SERVICE]... -- COMMAND..." >&2; exit 2; }
((${#services[@]})) || services=(nginx prometheus)

declare -A config=([nginx]="/etc/nginx" [prometheus]="/etc/prometheus /etc/default/prometheus")

# reading SERVICE: one line per fact, stable order.
reading() {
  local s=$1 pids p
  pids=$(pgrep -x "$s" | sort -n | tr '\n' ' ' || true)
  echo "pids: ${pids:-none}"
  local ports=""
  for p in $pids; do
    ports+=$(ss -ltnpH 2>/dev/null | grep -F "pid=$p," | awk '{print $4}' | tr '\n' ' ' || true)
  done
  echo "listening: $(tr ' ' '\n' <<<"$ports" | sort -u | tr '\n' ' ')"
  if [ -d /run/systemd/system ] && command -v systemctl >/dev/null; then
    echo "enabled: $(systemctl is-enabled "$s" 2>&1 || true)"
  else
    echo "enabled links: $(find /etc/systemd/system /etc/rc?.d -name "*$s*" 2>/dev/null | sort | tr '\n' ' ')"
  fi
  local files
  # shellcheck disable=SC2086
  files=$(find ${config[$s]:-/etc/$s} -type f 2>/dev/null | sort)
  # shellcheck disable=SC2086
  echo "config: $( [ -n "$files" ] && cat $files | sha256sum | cut -c1-16 || echo none)"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for s in "${services[@]}"; do
  reading "$s" >"$tmp/$s.before"
  grep -q '^pids: none' "$tmp/$s.before" && echo "services_untouched: note: $s is not running before the command"
done
echo "services_untouched: before:"
for s in "${services[@]}"; do sed "s/^/  $s /" "$tmp/$s.before"; done

rc=0
"$@" || rc=$?
echo "services_untouched: the command exited $rc"

bad=0
for s in "${services[@]}"; do
  reading "$s" >"$tmp/$s.after"
  if ! diff -u "$tmp/$s.before" "$tmp/$s.after" >"$tmp/$s.diff"; then
    echo "services_untouched: FAIL: $s changed:"; cat "$tmp/$s.diff"; bad=1
  fi
done
((bad)) && exit 1
echo "services_untouched: ${services[*]}: same processes, ports, enablement and config after the command"
exit "$rc"
