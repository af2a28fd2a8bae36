#!/usr/bin/env bash
# Installs the Debian packages sluice needs to build, test and benchmark. Idempotent: it skips
# apt entirely when everything is already installed.
set -euo pipefail
pkgs=(g++ cmake ninja-build pkg-config
  libyaml-cpp-dev libcli11-dev nlohmann-json3-dev libfmt-dev libsqlite3-dev libcpp-httplib-dev
  libssl-dev
  libboost1.81-dev googletest libgtest-dev libgmock-dev librapidcheck-dev libbenchmark-dev
  curl python3 wrk nginx-light prometheus chromium bubblewrap etcd-server etcd-client
  clang-16 libfuzzer-16-dev libclang-rt-16-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # nginx and prometheus are test/benchmark peers that the tests run as private processes on
  # free loopback ports; a service of the machine is never stopped, disabled or killed here.
fi
