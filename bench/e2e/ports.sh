# Sourced by the e2e scripts: a free loopback port for each server they start, so that two
# scripts run at the same time (or a run right after another, whose port is still in TIME_WAIT)
# do not meet on a fixed port.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
