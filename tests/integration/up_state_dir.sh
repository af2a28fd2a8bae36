#!/usr/bin/env bash
# `sluice up` without --data-dir keeps its state in the per-user state directory and says so
# (issue 18): $XDG_STATE_HOME/sluice/up, else ~/.local/state/sluice/up; nothing is written to
# the directory it runs in. Without either variable it refuses with a clear message.
set -euo pipefail
bin=${SLUICE_BIN:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; cat "$tmp/up.log" >&2 2>/dev/null || true; exit 1; }
mkdir -p "$tmp/cwd" "$tmp/home"

# up_once ENV...: `sluice up` for a moment with that environment, in an empty directory.
up_once() {
  (cd "$tmp/cwd" && env -i PATH="$PATH" "$@" "$bin" up --nodes 1 --gpus fake:1xH100 \
    --listen 127.0.0.1:0 --exit-after 1 --quiet >"$tmp/up.log" 2>&1)
}
# (Through a file: `grep -q` may exit before --help is written, and pipefail would fail it.)
"$bin" up --help >"$tmp/help"
grep -q 'XDG_STATE_HOME' "$tmp/help" || fail "up --help does not name the default"

# 1. HOME only: ~/.local/state/sluice/up.
up_once HOME="$tmp/home" || fail "sluice up with HOME"
want=$tmp/home/.local/state/sluice/up
grep -qF "state in $want" "$tmp/up.log" || fail "up did not say where its state is"
[[ -f $want/up-config.yaml ]] || fail "no state in $want"
[[ -z $(ls -A "$tmp/cwd") ]] || fail "up wrote into its working directory: $(ls -A "$tmp/cwd")"

# 2. XDG_STATE_HOME wins; a relative one is ignored (the specification's rule).
up_once HOME="$tmp/home" XDG_STATE_HOME="$tmp/xdg" || fail "sluice up with XDG_STATE_HOME"
grep -qF "state in $tmp/xdg/sluice/up" "$tmp/up.log" || fail "XDG_STATE_HOME not used"
[[ -f $tmp/xdg/sluice/up/up-config.yaml ]] || fail "no state under XDG_STATE_HOME"
up_once HOME="$tmp/home" XDG_STATE_HOME=relative || fail "sluice up with a relative XDG_STATE_HOME"
grep -qF "state in $want" "$tmp/up.log" || fail "a relative XDG_STATE_HOME was not ignored"
[[ -z $(ls -A "$tmp/cwd") ]] || fail "up wrote into its working directory: $(ls -A "$tmp/cwd")"

# 3. Neither: a clear error, nothing written.
if up_once; then fail "up without HOME or XDG_STATE_HOME succeeded"; fi
grep -q "no --data-dir" "$tmp/up.log" || fail "no clear error without HOME"
[[ -z $(ls -A "$tmp/cwd") ]] || fail "up wrote into its working directory"
echo "up_state_dir: ok"
