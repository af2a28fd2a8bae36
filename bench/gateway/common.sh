# Shared helpers for the gateway benchmarks (sourced, not run). Every process started here is
# recorded and stopped by PID on exit; everything listens on 127.0.0.1 only.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SLUICE=${SLUICE_BIN:-$ROOT/build/sluice}
[ -x "$SLUICE" ] || { echo "no sluice binary at $SLUICE (build first: scripts/build.sh build)" >&2; exit 1; }
WORK=$(mktemp -d /tmp/sluice-gw-bench.XXXXXX)
PIDS=()
# Stops every recorded process: SIGTERM, then up to 10 s for it to exit, then SIGKILL and a
# loud failure (a benchmark must not leave a process behind, nor hide one that will not stop).
cleanup() {
  local rc=$? p i stuck=0
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do
    for i in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$p" 2>/dev/null; then
      echo "error: pid $p ($(tr '\0' ' ' </proc/$p/cmdline 2>/dev/null)) did not exit 10 s after SIGTERM; killed" >&2
      kill -9 "$p" 2>/dev/null || true
      stuck=1
    fi
    wait "$p" 2>/dev/null || true
  done
  rm -rf "$WORK"
  [ "$stuck" = 0 ] || exit 1
  exit "$rc"
}
trap cleanup EXIT

# wait_port FILE: prints the port written to FILE (bounded: 20 s).
wait_port() {
  local i
  for i in $(seq 1 400); do
    if [ -s "$1" ]; then cat "$1"; return 0; fi
    sleep 0.05
  done
  echo "timed out waiting for $1" >&2; return 1
}

# The start_* functions set variables instead of printing: called as $(start_...), they would
# run in a subshell, and the PID they record would be lost to cleanup (issue 42: a gateway
# left running after proxy_bench.sh ended).
# start_backend NAME SERVICE_MS CONCURRENCY: sets BACKEND_PORT.
start_backend() {
  local pf="$WORK/backend-$1.port"
  "$SLUICE" gateway test-backend --name "$1" --service-ms "$2" --concurrency "$3" \
    --port-file "$pf" >"$WORK/backend-$1.log" 2>&1 &
  PIDS+=($!)
  BACKEND_PORT=$(wait_port "$pf")
}

# start_gateway CONFIG_FILE: sets GW_PORT and GW_PID.
start_gateway() {
  local pf="$WORK/gateway-$RANDOM.port"
  "$SLUICE" gateway --config "$1" --port-file "$pf" >>"$WORK/gateway.log" 2>&1 &
  GW_PID=$!
  PIDS+=($GW_PID)
  GW_PORT=$(wait_port "$pf")
}

stop_pid() {
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

# free_port: a port the kernel considers free right now (for nginx, which cannot report one).
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# start_nginx NAME CONF_BODY: runs nginx in the foreground (daemon off) with a private prefix.
start_nginx() {
  local dir="$WORK/nginx-$1"
  mkdir -p "$dir/logs" "$dir/tmp"
  cat >"$dir/nginx.conf" <<NGX
daemon off;
worker_processes ${NGINX_WORKERS:-1};
pid $dir/nginx.pid;
error_log $dir/logs/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $dir/tmp/body;
  proxy_temp_path $dir/tmp/proxy;
  fastcgi_temp_path $dir/tmp/fastcgi;
  uwsgi_temp_path $dir/tmp/uwsgi;
  scgi_temp_path $dir/tmp/scgi;
  keepalive_requests 1000000;
  $2
}
NGX
  nginx -p "$dir" -c "$dir/nginx.conf" >"$dir/logs/stdout.log" 2>&1 &
  PIDS+=($!)
}

# wait_http PORT [PATH]: until an HTTP answer comes (bounded: 10 s).
wait_http() {
  local i
  for i in $(seq 1 200); do
    if curl -s -o /dev/null "http://127.0.0.1:$1${2:-/}"; then return 0; fi
    sleep 0.05
  done
  echo "nothing answers on port $1" >&2; return 1
}

# start_nginx_backend: nginx answering a 100-byte 200 on a free port, set in BE; needs wrk and
# nginx (exits with a message otherwise).
start_nginx_backend() {
  command -v wrk >/dev/null || { echo "wrk not installed (scripts/deps.sh bench)"; exit 1; }
  command -v nginx >/dev/null || { echo "nginx not installed (scripts/deps.sh bench)"; exit 1; }
  local body
  body=$(printf 'x%.0s' $(seq 1 100))
  BE=$(free_port)
  start_nginx backend "server { listen 127.0.0.1:$BE; location / { return 200 \"$body\"; } }"
  wait_http "$BE"
}
