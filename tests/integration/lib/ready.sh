# Sourced by the integration scripts (not a test of its own: ctest runs integration/*.sh only):
# a server under test, its port and its readiness.

# free_port: a free TCP port on 127.0.0.1, as the kernel picks it (released again before the
# caller's server binds it).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# wait_ready URL [SECONDS] [PID]: until URL/readyz answers 200 (status 0), polled every 0.1 s;
# status 1 after SECONDS (default 20) or as soon as process PID, when given, has exited.
wait_ready() {
  local url=$1 tries=$((${2:-20} * 10)) pid=${3:-}
  for _ in $(seq 1 "$tries"); do
    curl -fsS "$url/readyz" >/dev/null 2>&1 && return 0
    [[ -n $pid ]] && ! kill -0 "$pid" 2>/dev/null && return 1
    sleep 0.1
  done
  curl -fsS "$url/readyz" >/dev/null 2>&1
}
