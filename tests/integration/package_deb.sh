#!/usr/bin/env bash
# Packaging (issue 18): `cmake --install` into a temporary root, then the Debian package from
# CPack, checked with dpkg-deb and installed with dpkg into a throwaway root (its own dpkg
# database; the machine's packages and services are not touched). Checks: the binary runs and
# says its version, the shipped configuration passes `sluice check`, the systemd units start
# the installed binary and pass `systemd-analyze verify` (where installed), the option files
# and configuration are conffiles, the man pages are there when help2man was found at build
# time, the package has no maintainer scripts (installing it starts nothing), and removing it
# keeps the conffiles while purging removes them. Skips (77) without cpack or dpkg-deb.
set -euo pipefail
bin=${SLUICE_BIN:?}
build=$(cd "$(dirname "$bin")" && pwd)
[[ -f $build/CPackConfig.cmake ]] || { echo "SKIP: no CPackConfig.cmake next to $bin"; exit 77; }
for t in cmake cpack dpkg-deb; do
  command -v "$t" >/dev/null || { echo "SKIP: $t not installed"; exit 77; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
units=(sluice-serve sluice-agent sluice-gateway)
man=0
grep -q '^SLUICE_HELP2MAN:FILEPATH=/' "$build/CMakeCache.txt" && man=1

# check_tree ROOT: the installed files under ROOT (prefix /usr).
check_tree() {
  local r=$1 u f
  [[ -x $r/usr/bin/sluice ]] || fail "no usr/bin/sluice in $r"
  for u in "${units[@]}"; do
    f=$r/usr/lib/systemd/system/$u.service
    [[ -f $f ]] || f=$r/lib/systemd/system/$u.service
    [[ -f $f ]] || fail "no $u.service"
    grep -q "^ExecStart=/usr/bin/sluice " "$f" || fail "$u.service does not start /usr/bin/sluice: $(grep ExecStart "$f")"
    grep -q "^EnvironmentFile=-/etc/default/$u$" "$f" || fail "$u.service reads no /etc/default/$u"
    [[ -f $r/etc/default/$u ]] || fail "no /etc/default/$u"
  done
  grep -q '^DynamicUser=yes' "$(dirname "$f")/sluice-serve.service" || fail "serve is not sandboxed"
  grep -q '^ProtectSystem=strict' "$(dirname "$f")/sluice-serve.service" || fail "serve: no ProtectSystem"
  grep -q '^StateDirectory=sluice$' "$(dirname "$f")/sluice-serve.service" || fail "serve: no StateDirectory"
  # The gateway runs sandboxed as serve does; the agent runs as root (it starts pods as their
  # namespaces' users) but may gain no privileges, sees /usr and /boot read-only, owns its pods'
  # cgroups and leaves its pods running across its own restarts.
  local d opt
  d=$(dirname "$f")
  for opt in DynamicUser=yes ProtectSystem=strict NoNewPrivileges=yes PrivateTmp=yes \
    'CapabilityBoundingSet='; do
    grep -qx "$opt" "$d/sluice-gateway.service" || fail "gateway: no $opt"
  done
  for opt in NoNewPrivileges=yes ProtectSystem=full Delegate=yes KillMode=process \
    StateDirectory=sluice-agent; do
    grep -qx "$opt" "$d/sluice-agent.service" || fail "agent: no $opt"
  done
  for f in etc/sluice/cluster.yaml etc/sluice/queues.yaml etc/sluice/gateway.yaml \
    usr/share/sluice/grafana/sluice-dashboard.json usr/share/sluice/prometheus/alerts.yml \
    usr/share/doc/sluice/README.md usr/share/doc/sluice/docs/config.md \
    usr/share/bash-completion/completions/sluice usr/share/zsh/vendor-completions/_sluice; do
    [[ -f $r/$f ]] || fail "no $f"
  done
  if ((man)); then
    for f in sluice sluice-serve sluice-agent sluice-up; do
      [[ -f $r/usr/share/man/man1/$f.1.gz ]] || fail "no man page $f.1.gz"
    done
    # grep without -q reads the whole page: with pipefail, -q's early exit would fail the
    # pipeline through sed's SIGPIPE once the page is longer than a pipe buffer.
    zcat "$r/usr/share/man/man1/sluice-serve.1.gz" | sed 's/\\-/-/g' | grep -- '--data-dir' >/dev/null ||
      fail "sluice-serve(1) does not document --data-dir"
  else
    echo "note: help2man was not found at build time: no man pages to check"
  fi
}

# 1. cmake --install into a temporary root.
DESTDIR=$tmp/root cmake --install "$build" --prefix /usr --strip >"$tmp/install.log" ||
  { cat "$tmp/install.log"; fail "cmake --install"; }
check_tree "$tmp/root"
"$tmp/root/usr/bin/sluice" --version | grep -q '^sluice [0-9]' || fail "the installed binary"
"$tmp/root/usr/bin/sluice" check "$tmp/root/etc/sluice/cluster.yaml" \
  "$tmp/root/etc/sluice/queues.yaml" >/dev/null || fail "the shipped configuration does not pass sluice check"
"$tmp/root/usr/bin/sluice" gateway --config "$tmp/root/etc/sluice/gateway.yaml" --check \
  >/dev/null || fail "the shipped gateway.yaml does not pass --check"
if command -v systemd-analyze >/dev/null; then
  # The units name /usr/bin/sluice, which this machine may not have: verify copies that point
  # into the temporary root.
  mkdir -p "$tmp/verify"
  for u in "${units[@]}"; do
    f=$tmp/root/usr/lib/systemd/system/$u.service
    [[ -f $f ]] || f=$tmp/root/lib/systemd/system/$u.service
    sed "s|/usr/bin/sluice|$tmp/root/usr/bin/sluice|" "$f" >"$tmp/verify/$u.service"
  done
  systemd-analyze verify --man=no "$tmp"/verify/*.service >"$tmp/verify.log" 2>&1 ||
    { cat "$tmp/verify.log"; fail "systemd-analyze verify"; }
  ! grep -i "unknown\|invalid\|failed" "$tmp/verify.log" || fail "systemd-analyze warnings"
else
  echo "note: systemd-analyze not installed: units not verified"
fi

# 2. The Debian package.
(cd "$tmp" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/pkg" >"$tmp/cpack.log" 2>&1) ||
  { cat "$tmp/cpack.log"; fail "cpack -G DEB"; }
deb=$(ls "$tmp"/pkg/sluice_*.deb)
dpkg-deb -f "$deb" Package | grep -qx sluice || fail "package name"
dpkg-deb -f "$deb" Version | grep -q '^[0-9]' || fail "package version"
dpkg-deb -f "$deb" Depends | grep -q 'libc6' || fail "no Depends: $(dpkg-deb -f "$deb" Depends)"
dpkg-deb -c "$deb" >"$tmp/contents"
grep -q ' \./usr/bin/sluice$' "$tmp/contents" || fail "the package lacks usr/bin/sluice"
dpkg-deb -e "$deb" "$tmp/control"
for f in /etc/default/sluice-serve /etc/default/sluice-agent /etc/sluice/cluster.yaml; do
  grep -qx "$f" "$tmp/control/conffiles" || fail "$f is not a conffile"
done
for s in preinst postinst prerm postrm; do
  [[ ! -e $tmp/control/$s ]] || fail "the package has a $s script"
done
dpkg-deb -x "$deb" "$tmp/x"
check_tree "$tmp/x"

# 3. dpkg into a throwaway root (root only: dpkg wants to own the files it unpacks).
if [[ $(id -u) == 0 ]] && command -v dpkg >/dev/null; then
  r=$tmp/dpkgroot
  mkdir -p "$r/var/lib/dpkg/info" "$r/var/lib/dpkg/updates"
  touch "$r/var/lib/dpkg/status"
  d=(dpkg --root="$r" --force-depends --force-script-chrootless --log=/dev/null)
  "${d[@]}" -i "$deb" >"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log"; fail "dpkg -i"; }
  "${d[@]}" -s sluice | grep -q '^Status: install ok installed' || fail "dpkg -s"
  check_tree "$r"
  "${d[@]}" -r sluice >>"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log"; fail "dpkg -r"; }
  [[ ! -e $r/usr/bin/sluice ]] || fail "dpkg -r left the binary"
  [[ -f $r/etc/default/sluice-serve ]] || fail "dpkg -r removed a conffile"
  "${d[@]}" -P sluice >>"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log"; fail "dpkg -P"; }
  [[ ! -e $r/etc/default/sluice-serve ]] || fail "dpkg -P kept a conffile"
else
  echo "note: not root: the package was not installed with dpkg"
fi
echo "package_deb: ok ($(basename "$deb"), $(wc -l <"$tmp/contents") entries)"
