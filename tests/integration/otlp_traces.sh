#!/usr/bin/env bash
# OpenTelemetry traces of a job exported over OTLP/HTTP to a loopback collector (otlp_traces.py).
set -euo pipefail
exec python3 "$(dirname "$0")/otlp_traces.py"
