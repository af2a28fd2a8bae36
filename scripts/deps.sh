#!/usr/bin/env bash
# deps.sh [build|test|bench]...: installs the Debian packages one use of sluice needs (default:
# build). Idempotent: apt is not touched when everything is already installed.
#   build  what scripts/run.sh needs: the compiler, CMake and the libraries of the binary, and
#          Chart.js, which the build embeds in the web dashboard (docs/dashboard.md)
#   test   build + what scripts/test.sh needs: GoogleTest, RapidCheck, clang-16 for the fuzz
#          targets, and the peers the suite starts as private processes (promtool/prometheus,
#          chromium, bubblewrap, curl, python3, python3-kubernetes for kube_python.sh), help2man
#          and dpkg-dev for the package test,
#          pip and mypy for the Python client (an offline install, a type check)
#   bench  build + Google Benchmark, wrk and nginx for the benchmark scripts (bench/), PyYAML
#          for bench/philly_deadlines.sh
#
# It never stops, disables, restarts or kills a service or a process. Debian starts the service
# of some packages when it installs them (prometheus on :9090, nginx on :80); those are left as
# they are: the tests and benchmarks run their own nginx, Prometheus and browser on free
# loopback ports with their own config and data directories, and stop them by PID.
set -euo pipefail

build=(g++ cmake ninja-build pkg-config
  libyaml-cpp-dev libcli11-dev nlohmann-json3-dev libsqlite3-dev libcpp-httplib-dev libssl-dev
  libjs-chart.js libgoogle-perftools-dev)
test=(googletest libgtest-dev libgmock-dev librapidcheck-dev
  curl python3 python3-pip python3-mypy python3-kubernetes prometheus chromium bubblewrap help2man dpkg-dev
  etcd-server etcd-client
  podman runc
  clang-16 libfuzzer-16-dev libclang-rt-16-dev)
bench=(libbenchmark-dev wrk nginx-light python3-yaml)

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

# Boost (headers only; CMake asks for 1.81 or newer): any installed libboost1.XX-dev that is new
# enough, else the generic libboost-dev where the distribution's is new enough, else the newest
# versioned package it has (bookworm: libboost-dev is 1.74, so libboost1.81-dev).
boost_package() {
  local p v
  for p in $(dpkg-query -W -f='${Package} ${Status}\n' 'libboost1.*-dev' 2>/dev/null |
    awk '/install ok installed/ {print $1}'); do
    v=${p#libboost1.}; v=${v%-dev}
    if [[ $v =~ ^[0-9]+$ ]] && ((v >= 81)); then echo "$p"; return; fi
  done
  v=$(apt-cache policy libboost-dev 2>/dev/null | awk '/Candidate:/ {print $2}')
  if [[ -n $v && $v != "(none)" ]] && dpkg --compare-versions "$v" ge 1.81; then
    echo libboost-dev
    return
  fi
  p=$(apt-cache search --names-only '^libboost1\.[0-9]+-dev$' 2>/dev/null | awk '{print $1}' |
    sort -t. -k2 -n | tail -1)
  echo "${p:-libboost1.81-dev}"
}

sets=("$@")
((${#sets[@]})) || sets=(build)
pkgs=("${build[@]}" "$(boost_package)")
for s in "${sets[@]}"; do
  case $s in
    build) ;;
    test) pkgs+=("${test[@]}") ;;
    bench) pkgs+=("${bench[@]}") ;;
    *) echo "deps.sh: unknown set '$s' (build, test, bench)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${pkgs[@]}"; do installed "$p" || missing+=("$p"); done
((${#missing[@]})) || exit 0
echo "deps: installing ${missing[*]}"
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
  "${missing[@]}" >/dev/null
