#!/usr/bin/env python3
"""bench/right_size_summary.py REPORT.json: one Markdown row per run of a `sluice sim compare`
report (bench/philly_right_size.sh): median and p99 wait per class, utilisation, and the jobs
right-sized and retried whole (when right-sizing was on)."""
import json
import sys


def dur(s):
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


report = json.load(open(sys.argv[1]))
print("| variant | config | wait high p50 / p99 | wait low p50 / p99 | utilisation "
      "| right-sized | retried whole |")
print("|---|---|---|---|---|---|---|")
for key, r in report.items():
    variant, config = key.rsplit(" ", 1) if " " in key else ("base", key)
    cells = []
    for c in ("high", "low"):
        w = r["by_priority_class"].get(c, {}).get("wait_s", {})
        cells.append(f"{dur(w.get('p50', 0))} / {dur(w.get('p99', 0))}")
    rs = r.get("right_sizing")
    sized = f"{rs['right_sized_jobs']:,}" if rs else "-"
    retried = f"{rs['retried_whole']:,}" if rs else "-"
    name = config.rsplit("/", 1)[-1]
    print(f"| {variant} | {name} | {cells[0]} | {cells[1]} | {100 * r['utilisation']:.1f}% "
          f"| {sized} | {retried} |")
