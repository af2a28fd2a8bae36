#!/usr/bin/env python3
"""The rooms of src/ and what each may include (docs/architecture.md, "Rooms").

Every `#include "room/..."` of a file under src/ must name its own room or one the table below
allows; the script lists every arrow that is not allowed (file:line, the include) and fails.
Run alone: python3 tests/lint/layers.py [SOURCE_DIR]; ctest: lint.layers.
"""
import os
import re
import sys

CORE_BASE = ["core/model"]
# room -> the rooms it may include (besides its own). The core's rooms are ordered: each may
# include only rooms listed before it; `cycle` sits on top of the core.
ALLOWED = {
    "core/model": [],
    "core/quota": ["core/model"],
    "core/place": ["core/model"],
    "core/decision": ["core/model", "core/place", "core/quota"],
    "core/flavor": ["core/model", "core/place", "core/quota", "core/decision"],
    "core/order": ["core/model", "core/quota", "core/decision"],
    "core/preempt": ["core/model", "core/place", "core/quota", "core/decision", "core/flavor",
                     "core/order"],
    "core/cycle": ["core/model", "core/place", "core/quota", "core/decision", "core/flavor",
                   "core/order", "core/preempt", "core/scale"],
    "core/scale": ["core/model"],
    "config": ["core/*"],
    "proto": ["core/model"],
    "secret": [],
    "net": ["core/model", "proto"],
    "sim": ["core/*", "config", "proto"],
    "gateway": ["net", "core/model"],
    "server": ["core/*", "config", "proto", "net", "secret"],
    "agent": ["core/model", "proto", "net", "secret"],
    "cli": ["*"],
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def room(rel):
    parts = rel.split("/")
    if parts[0] == "core" and len(parts) > 2:
        return "core/" + parts[1]
    return parts[0] if len(parts) > 1 else None


def allowed(src_room, dst_room):
    if src_room == dst_room:
        return True
    for pattern in ALLOWED.get(src_room, []):
        if pattern == "*" or pattern == dst_room:
            return True
        if pattern.endswith("/*") and dst_room.startswith(pattern[:-1]):
            return True
    return False


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    src = os.path.join(root, "src")
    bad, unknown = [], set()
    for d, _, files in os.walk(src):
        for f in sorted(files):
            if not f.endswith((".cc", ".h", ".in")):
                continue
            path = os.path.join(d, f)
            rel = os.path.relpath(path, src)
            a = room(rel)
            if a is None:
                continue
            if a not in ALLOWED:
                unknown.add(a)
                continue
            with open(path, errors="replace") as fh:
                for n, line in enumerate(fh, 1):
                    m = INCLUDE.match(line)
                    if not m or "/" not in m.group(1):
                        continue
                    b = room(m.group(1))
                    if b and os.path.isdir(os.path.join(src, b)) and not allowed(a, b):
                        bad.append(f"src/{rel}:{n}: {a} may not include {m.group(1)} ({b})")
    for r in sorted(unknown):
        bad.append(f"src/{r}/: a room that docs/architecture.md and tests/lint/layers.py do not "
                   "list: add it to both with what it may include")
    for line in bad:
        print(line)
    print(f"layers: {len(bad)} arrow(s) not allowed" if bad else "layers: every include allowed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
