"""The fuzz properties of tests/reliability at full strength: 10,000 cases per entry point by default.

    .venv/bin/python benchmarks/fuzz.py [--cases 10000] [--jobs 2]

Runs the ``fuzz``-marked tests with the ``fuzz`` Hypothesis profile (random, unlike the CI profile, so
each run explores new inputs; no example database), split over ``--jobs`` pytest processes by
property, and prints one JSON line: the cases run per entry point, the failed properties (0 when every
case passed) and the wall time. A failure's minimal example is in the pytest output on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "tests" / "reliability"


COSTLIEST = ["ingest_many", "test_ingest_stores", "chat_text", "test_query", "settings_json", "collectors_json",
             "plugin_settings", "test_validation", "test_remember"]


def collect() -> list[str]:
    """The node ids of the fuzz properties."""
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "fuzz",
                          "-p", "no:cacheprovider", str(SUITE)], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    return [line.strip() for line in out.splitlines() if "::" in line]


def run(files: list[str], cases: int, workdir: Path, index: int) -> dict:
    report, junit = workdir / f"cases-{index}.json", workdir / f"junit-{index}.xml"
    env = {**os.environ, "MAGI_FUZZ_PROFILE": "fuzz", "MAGI_FUZZ_EXAMPLES": str(cases),
           "MAGI_FUZZ_REPORT": str(report)}
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "fuzz", "-p", "no:cacheprovider",
                             f"--junitxml={junit}", *files], cwd=ROOT, env=env,
                            capture_output=True, text=True)
    if result.returncode not in (0, 1):
        sys.stderr.write(result.stdout + result.stderr)
    sys.stderr.write(result.stdout[-3000:])
    counts = json.loads(report.read_text()) if report.exists() else {}
    failed = []
    if junit.exists():
        for case in ET.parse(junit).iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                failed.append(case.get("name"))
    elif result.returncode:
        failed.append(f"pytest exited {result.returncode}")
    return {"cases": counts, "failed": failed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000, help="cases per property (default 10000)")
    parser.add_argument("--jobs", type=int, default=2, help="pytest processes (default 2)")
    parser.add_argument("--only", help="run only the properties whose test name contains this")
    args = parser.parse_args()
    nodes = [node for node in collect() if not args.only or args.only in node]
    per_run = args.cases
    if len(nodes) < args.jobs:
        # Fewer properties than processes: each runs in every process with its share of the cases (the
        # fuzz profile is random, so the shares explore different inputs); the counts add up.
        nodes, per_run = nodes * (args.jobs // len(nodes)), args.cases // (args.jobs // len(nodes))
    # The costliest properties first, dealt round-robin, so the processes finish close together.
    nodes.sort(key=lambda node: next((i for i, name in enumerate(COSTLIEST) if name in node), len(COSTLIEST)))
    groups = [nodes[i::args.jobs] for i in range(args.jobs) if nodes[i::args.jobs]]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(len(groups)) as pool:
        results = list(pool.map(lambda ig: run(ig[1], per_run, Path(tmp), ig[0]), enumerate(groups)))
    cases: dict[str, int] = {}
    for result in results:
        for name, n in result["cases"].items():
            cases[name] = cases.get(name, 0) + n
    failed = sorted(name for result in results for name in result["failed"])
    print(json.dumps({
        "benchmark": "fuzz",
        "cases_per_property": args.cases,
        "cases": dict(sorted(cases.items())),
        "total_cases": sum(cases.values()),
        "failures": len(failed),
        "failed": failed,
        "seconds": round(time.perf_counter() - started, 1),
        "jobs": len(groups),
        "cpus": os.cpu_count(),
    }))


if __name__ == "__main__":
    main()
