#!/usr/bin/env bash
# scripts/deps.sh installs only what each use needs and never touches a service or a process
# (issue 18). It runs here against stand-ins for dpkg-query, apt-get, apt-cache and sudo (the
# machine's packages are not touched) and stand-ins for systemctl, service, pkill and killall
# that record any call. Then every script under scripts/, tests/ and bench/ is searched for
# commands that stop, disable or kill what the script did not start.
set -euo pipefail
src=${SLUICE_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
stub=$tmp/bin
mkdir -p "$stub"

# dpkg-query -W -f=FMT PKG: "installed" when PKG is in $tmp/installed. With a pattern
# (libboost1.*-dev) it lists the installed packages that match, as dpkg-query does.
cat >"$stub/dpkg-query" <<'SH'
#!/usr/bin/env bash
pkg=${@: -1}
found=0
while read -r p; do
  [[ -z $p ]] && continue
  # shellcheck disable=SC2053
  if [[ $p == $pkg ]]; then
    found=1
    if [[ $pkg == *'*'* ]]; then echo "$p install ok installed"; else printf 'install ok installed'; fi
  fi
done <"$DEPS_TEST_DIR/installed"
((found)) || { echo "dpkg-query: no packages found matching $pkg" >&2; exit 1; }
SH
cat >"$stub/apt-get" <<'SH'
#!/usr/bin/env bash
echo "apt-get $*" >>"$DEPS_TEST_DIR/calls"
SH
cat >"$stub/apt-cache" <<'SH'
#!/usr/bin/env bash
case $1 in
  policy) printf 'libboost-dev:\n  Installed: (none)\n  Candidate: %s\n' "$DEPS_TEST_BOOST" ;;
  search) printf 'libboost1.74-dev - Boost\nlibboost1.81-dev - Boost\n' ;;
esac
SH
cat >"$stub/sudo" <<'SH'
#!/usr/bin/env bash
exec "$@"
SH
for c in systemctl service pkill killall invoke-rc.d; do
  printf '#!/usr/bin/env bash\necho "%s $*" >>"$DEPS_TEST_DIR/forbidden"\n' "$c" >"$stub/$c"
done
chmod +x "$stub"/*
export DEPS_TEST_DIR=$tmp PATH="$stub:$PATH" DEPS_TEST_BOOST=1.74.0.3

# Every package of every set, as deps.sh names them.
all=$(sed -n '/^build=(/,/^bench=(.*)$/p' "$src/scripts/deps.sh" | sed -E 's/^[a-z]+=\(//; s/\)//g' |
  tr ' ' '\n' | grep -E '^[a-z0-9][a-z0-9.+-]+$' | sort -u)
[[ $all == *libcli11-dev* && $all == *chromium* && $all == *nginx-light* ]] ||
  fail "could not read the package sets of deps.sh"

# run SETS...: deps.sh with the current installed list; prints the packages it installed.
run() {
  : >"$tmp/calls"
  bash "$src/scripts/deps.sh" "$@" >"$tmp/out" 2>&1 || { cat "$tmp/out"; fail "deps.sh $* failed"; }
  grep '^apt-get install' "$tmp/calls" | tr ' ' '\n' | grep -E '^[a-z0-9][a-z0-9.+-]+$' |
    grep -v '^apt-get$\|^install$' | sort || true
}

# 1. Everything installed: apt is not run at all.
{ echo "$all"; echo libboost1.81-dev; } >"$tmp/installed"
for s in build test bench; do
  [[ -z $(run "$s") && ! -s $tmp/calls ]] || fail "deps.sh $s ran apt with everything installed"
done

# 2. Nothing installed: each set installs its own packages and no others.
: >"$tmp/installed"
got=$(run build)
for p in g++ cmake libcli11-dev libboost1.81-dev; do grep -qx "$p" <<<"$got" || fail "build lacks $p"; done
for p in chromium prometheus nginx-light wrk googletest libbenchmark-dev libfmt-dev; do
  ! grep -qx "$p" <<<"$got" || fail "build installs $p, which the build does not need"
done
got=$(run test)
for p in cmake googletest librapidcheck-dev prometheus chromium bubblewrap clang-16 help2man; do
  grep -qx "$p" <<<"$got" || fail "test lacks $p"
done
for p in nginx-light wrk libbenchmark-dev; do
  ! grep -qx "$p" <<<"$got" || fail "test installs $p, which only the benchmarks need"
done
got=$(run bench)
for p in cmake libbenchmark-dev wrk nginx-light; do grep -qx "$p" <<<"$got" || fail "bench lacks $p"; done
! grep -qx chromium <<<"$got" || fail "bench installs chromium"
grep -q -- '--no-install-recommends' "$tmp/calls" || fail "apt-get without --no-install-recommends"

# 3. Boost: a generic libboost-dev where it is new enough; a versioned one only where it is not.
export DEPS_TEST_BOOST=1.83.0.1
got=$(run build)
grep -qx libboost-dev <<<"$got" || fail "libboost-dev 1.83 should be the generic choice: $got"
! grep -q 'libboost1\.' <<<"$got" || fail "a pinned Boost although the generic one works"
echo libboost1.83-dev >"$tmp/installed"
got=$(run build)
! grep -q libboost <<<"$got" || fail "an installed libboost1.83-dev was not enough: $got"

# 4. No service or process was touched in all of that.
[[ ! -s $tmp/forbidden ]] || fail "deps.sh called: $(cat "$tmp/forbidden")"

# 5. No script stops, disables or kills what it did not start.
bad=$(grep -rnE '(systemctl|service)[^#]*\b(stop|disable|mask|kill|restart)\b|\bpkill\b|\bkillall\b|invoke-rc\.d' \
  "$src/scripts" "$src/tests" "$src/bench" --include='*.sh' --include='*.py' |
  grep -v "tests/integration/deps_leave_machine_alone.sh" || true)
[[ -z $bad ]] || fail "scripts that stop or kill what they did not start:
$bad"
echo "deps_leave_machine_alone: ok"
