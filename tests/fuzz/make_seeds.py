#!/usr/bin/env python3
"""make_seeds.py OUT_DIR: the seed corpus of every fuzz target, as OUT_DIR/<target>/.

Seeds come from files already in the repository: the committed inputs under seeds/<target>/
(exact fuzzer inputs, mode byte included, and every crash a target found), the example and
scenario YAML, and the raw string literals (R"(...)") of the unit tests that feed the same
parser. Nothing is taken from ../shared/traces: the trace readers' seeds are the hand-written
rows under seeds/.
"""
import glob
import hashlib
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
RAW = re.compile(r'R"([^()\\ ]{0,16})\((.*?)\)\1"', re.S)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def files(*patterns):
    out = []
    for p in patterns:
        out += sorted(glob.glob(os.path.join(ROOT, p), recursive=True))
    return out


def raw_strings(*patterns):
    """The raw string literals of the C++ files matched."""
    out = []
    for path in files(*patterns):
        text = read(path).decode("utf-8", "replace")
        out += [m.group(2).encode() for m in RAW.finditer(text) if m.group(2).strip()]
    return out


def main():
    out_dir = sys.argv[1]
    yaml_docs = files("examples/config/*.yaml", "examples/demo/*.yaml", "examples/philly/*.yaml",
                      "examples/openb/*.yaml", "tests/scenarios/*.yaml")
    job_files = files("examples/config/jobs.yaml", "examples/demo/jobs.yaml")
    job_tests = raw_strings("tests/unit/core/config/jobs_test.cc",
                            "tests/unit/core/config/json_fast_path_test.cc")
    config_tests = raw_strings("tests/unit/core/config/*_test.cc")
    seeds = {
        "jobs_json": [read(p) for p in job_files] + job_tests,
        "jobs_yaml": [read(p) for p in job_files] + job_tests,
        # Mode byte 0: one source, not strict; 2: two sources split at the NUL.
        "config_load": [b"\x00" + read(p) for p in yaml_docs] + [b"\x00" + s for s in config_tests]
        + [b"\x02" + read(os.path.join(ROOT, "examples/config/cluster.yaml")) + b"\x00"
           + read(os.path.join(ROOT, "examples/config/queues.yaml"))],
        "gateway_config": [read(p) for p in files("examples/gateway/*.yaml")]
        + raw_strings("tests/gateway/config_test.cc"),
    }
    targets = [os.path.basename(d) for d in sorted(glob.glob(os.path.join(HERE, "seeds", "*")))]
    for t in set(targets) | set(seeds):
        d = os.path.join(out_dir, t)
        os.makedirs(d, exist_ok=True)
        inputs = seeds.get(t, []) + [read(p) for p in files(f"tests/fuzz/seeds/{t}/*")]
        for data in inputs:
            name = hashlib.sha1(data).hexdigest()  # libFuzzer's own naming: no duplicates
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
