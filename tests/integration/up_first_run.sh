#!/usr/bin/env bash
# A newcomer's first `sluice run` against `sluice up` (issue 42): as root, `up` says which
# unprivileged uid its pods run as and how to choose; the README's first run (from /tmp) works;
# from root's own 0700 directory the pod cannot enter it and says so, and `up --pods-as-agent`
# runs it. As a normal user the pods run as that user and the first run works as it is.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/ready.sh"  # free_port
bin=${SLUICE_BIN:?}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
tmp=$(mktemp -d)
pid=
stop_up() { if [[ -n $pid ]]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=; fi; }
cleanup() { stop_up; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [[ -f $tmp/up.log ]] && tail -20 "$tmp/up.log" >&2; exit 1; }

start_up() {  # extra flags for `sluice up`
  local port
  port=$(free_port)
  export SLUICE_SERVER=http://127.0.0.1:$port
  rm -rf "$tmp/data"
  "$bin" up --data-dir "$tmp/data" --listen "127.0.0.1:$port" "$@" >"$tmp/up.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 100); do grep -q "sluice is up" "$tmp/up.log" 2>/dev/null && return 0; sleep 0.1; done
  fail "sluice up did not start"
}

# run_in DIR CMD: `sluice run` from DIR, waits for the job to end; prints its state, then its log.
run_in() {
  local out id state
  out=$(cd "$1" && "$bin" run --cpu 1 -- sh -c "$2") || fail "sluice run: $out"
  id=$(sed -n 's/^submitted job \([0-9]*\).*/\1/p' <<<"$out")
  [[ -n $id ]] || fail "no job id in: $out"
  for _ in $(seq 1 200); do
    state=$(curl -sf "$SLUICE_SERVER/v1/jobs/$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
    [[ $state == succeeded || $state == failed ]] && break
    sleep 0.1
  done
  echo "$state"
  "$bin" logs "$id" 2>&1 || true
  curl -sf "$SLUICE_SERVER/v1/jobs/$id"
}

# The README's first run: from /tmp, which every user may enter.
start_up
if [[ $(id -u) == 0 ]]; then
  grep -q 'pods: run as an unprivileged user per namespace, not root (namespace "default": uid [0-9]*)' "$tmp/up.log" \
    || fail "sluice up as root does not say which uid its pods run as"
  grep -q -- "--pod-uid default=UID" "$tmp/up.log" || fail "the note does not say how to choose"
fi
out=$(run_in /tmp 'echo hello from $SLUICE_NODE')
[[ $(head -1 <<<"$out") == succeeded ]] || fail "the first run: $out"
grep -q "hello from local-0" <<<"$out" || fail "the first run printed: $out"

if [[ $(id -u) == 0 ]]; then
  # From a directory only root may enter: the pod's uid cannot, and the error says so.
  mkdir -m 0700 "$tmp/rootonly"
  out=$(run_in "$tmp/rootonly" 'echo ok > out.txt')
  [[ $(head -1 <<<"$out") == failed ]] || fail "a pod entered root's 0700 directory: $out"
  grep -q "cannot enter the working directory" <<<"$out" || fail "the refusal does not say why: $out"
  stop_up
  # --pods-as-agent: pods run as root; the same run works.
  start_up --pods-as-agent
  grep -q "pods: run as an unprivileged" "$tmp/up.log" && fail "the note shows with --pods-as-agent"
  out=$(run_in "$tmp/rootonly" 'echo ok > out.txt')
  [[ $(head -1 <<<"$out") == succeeded ]] || fail "the run failed with --pods-as-agent: $out"
  [[ $(cat "$tmp/rootonly/out.txt") == ok ]] || fail "out.txt was not written"
fi
echo "up_first_run: ok"
