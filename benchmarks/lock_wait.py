"""How long another writer waits while a long write runs (issue 16, defect 5). Prints one JSON line.

A memory of ``--events`` workload-mix events (hashing embedder; embedded and projected by L2 first) is
built once. Then, each in its own process as a user would run it, a long write runs —
``magi forget --source <its biggest sensor source>`` (the case as filed: ~1/6 of a 47k memory), then
``Memory.reindex()`` and the L2 maintenance — while this process, on its own ``Memory``, keeps writing
one chat turn every ``--every`` seconds (what an MCP ``log_turn`` or a collector does) and opens the
memory now and then (the app starting). Reported per long write: how long it took, and the writers'
waits — each ``ingest`` call's wall time (count, p50, p95, max) and the longest ``Memory.open``. Target:
no writer waits over 1 s.

    .venv/bin/python benchmarks/lock_wait.py                 # 50k events
    .venv/bin/python benchmarks/lock_wait.py --events 10000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from workload import payloads

from magi_desktop.core import Memory

ROOT = Path(__file__).resolve().parent.parent
_CHILD = """
import sys, time
from magi_desktop.core import Memory
memory = Memory.open(sys.argv[1], embedder="hashing")
started = time.monotonic()
if sys.argv[2] == "reindex":
    memory.reindex()
else:
    memory.run_due(jobs=["maintenance"])
print(round(time.monotonic() - started, 3))
memory.close()
"""


def build(folder: Path, events: int) -> dict:
    started = time.perf_counter()
    items = list(payloads(events))
    memory = Memory.open(folder, embedder="hashing")
    for first in range(0, len(items), 1000):
        memory.ingest_many(items[first:first + 1000])
    while True:
        report = memory.process_pending(limit=2000)
        if not report["embedded"] and not report["l2"]["events"]:
            break
    sources = Counter(p["source_type"] for p in items)
    memory.close()
    return {"seconds": round(time.perf_counter() - started, 1), "sources": dict(sources)}


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] if ordered else 0.0


def while_running(folder: Path, command: list[str], every: float) -> dict:
    """Run ``command`` in a child process; meanwhile write a turn every ``every`` s and open the memory."""
    memory = Memory.open(folder, embedder="hashing")
    memory.ingest({"source_type": "chat", "session_id": "bench-agent", "occurred_at": time.time(),   # warm caches
                   "chat": {"role": "user", "provenance": "human_input", "text": "a turn before the long write"}})
    waits: list[float] = []
    opens: list[float] = []
    errors: Counter = Counter()
    stop = threading.Event()

    def opener():
        while not stop.wait(1.0):
            started = time.perf_counter()
            try:
                Memory.open(folder, embedder="hashing").close()
            except Exception as exc:  # noqa: BLE001 - the app dying at start, before issue 16
                errors[f"open: {type(exc).__name__}: {exc}"[:80]] += 1
            opens.append(time.perf_counter() - started)

    thread = threading.Thread(target=opener)
    started = time.perf_counter()
    output = tempfile.TemporaryFile("w+")  # noqa: SIM115 - closed once the child is done; a receipt lists every event id: more than a pipe holds
    child = subprocess.Popen(command, stdout=output, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    thread.start()
    i = 0
    while child.poll() is None:
        i += 1
        began = time.perf_counter()
        try:
            memory.ingest({"source_type": "chat", "session_id": "bench-agent", "occurred_at": time.time(),
                           "chat": {"role": "user", "provenance": "human_input", "text": f"a turn while waiting {i}"}})
        except Exception as exc:  # noqa: BLE001 - what a writer met (the code before issue 16: database is locked)
            errors[f"{type(exc).__name__}: {exc}"[:80]] += 1
        waits.append(time.perf_counter() - began)
        time.sleep(every)
    took = time.perf_counter() - started
    stop.set()
    thread.join()
    _, err = child.communicate()
    output.seek(0)
    out = output.read()
    output.close()
    memory.close()
    if child.returncode != 0:
        raise RuntimeError(f"{command} failed: {err[-2000:]}")
    return {"seconds": round(took, 2), "writes": len(waits), "write_p50_ms": round(statistics.median(waits) * 1000, 1),
            "write_p95_ms": round(_percentile(waits, 0.95) * 1000, 1), "write_max_ms": round(max(waits) * 1000, 1),
            "open_max_ms": round(max(opens) * 1000, 1) if opens else None, "write_errors": dict(errors),
            "output": out.strip()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--every", type=float, default=0.05, help="seconds between the other writer's turns")
    parser.add_argument("--keep", help="build the memory in this folder and keep it (reused when present)")
    parser.add_argument("--source", help="the source to forget (default: the biggest sensor source)")
    args = parser.parse_args()
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="magi-lockwait-"))
    try:
        built = build(folder, args.events) if not (folder / "memory.db").exists() else {"seconds": 0, "sources": {}}
        sources = built["sources"] or dict(Memory.open(folder, embedder="hashing").stats()["events"]["by_source"])
        biggest = args.source or max((s for s in sources if s != "chat"), key=sources.get)
        forget = while_running(folder, [sys.executable, "-m", "magi_desktop.cli", "forget", "--source", biggest,
                                        "--data-dir", str(folder), "--json"], args.every)
        receipt = json.loads(forget.pop("output") or "{}")
        reindex = while_running(folder, [sys.executable, "-c", _CHILD, str(folder), "reindex"], args.every)
        maintenance = while_running(folder, [sys.executable, "-c", _CHILD, str(folder), "maintenance"], args.every)
        for report in (reindex, maintenance):
            report["child_seconds"] = float(report.pop("output") or 0)
        worst = max(forget["write_max_ms"], reindex["write_max_ms"], maintenance["write_max_ms"])
        print(json.dumps({
            "benchmark": "lock_wait", "events": args.events, "build_seconds": built["seconds"],
            "forget": {"source": biggest, "events": sources[biggest],
                       "removed": receipt.get("removed", {}).get("fact_events"), "scrub": receipt.get("scrub"),
                       **forget},
            "reindex": reindex, "maintenance": maintenance,
            "max_writer_wait_ms": worst, "target_ms": 1000, "met": worst <= 1000,
        }))
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
