"""Hot and cold (issue 20): what moving old summarised events to the cold tier does to questions. Prints one JSON line.

A memory of ``--events`` workload-mix payloads (``workload.py``: a year of 2025, 50% chat, ~12% Chinese) is built
with the hashing embedder (each batch embedded before the next, as ``load.py`` does; L2 is not run). Then, as of
``--now`` (default 2026-12-01, so the whole year is older than the 180-day cold age):

1. L3 summarises the year (``run_due`` of the day, week and month jobs: the late back-fill, extractive);
2. the load benchmark's 15 questions are asked ``--repeat`` times with everything hot;
3. the ``tiers`` job runs until it has nothing left to move (each run looks at 20,000 rows at most);
4. the questions are asked again (default recall: hot only) and with ``search_all=True`` (hot and cold), and
   four questions about a month of 2025 (an old window: default recall reads the cold tier for them).

Reported: build and L3 seconds, each tiering run's seconds and rows, hot/cold/kept-hot counts, the rows of the
hot and cold full-text and vector indexes, and query p50/p95 in each state, with how many questions read the
cold tier and why (``searched_cold``: the trace's reason, counted).

    .venv/bin/python benchmarks/tiers.py --events 20000      # a few minutes
    .venv/bin/python benchmarks/tiers.py --events 50000      # the figures in docs/performance.md
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from load import QUERIES, percentiles
from workload import payloads

from magi_desktop.core import Memory
from magi_desktop.core.store import tiers

# Questions whose window is a month of the workload's year: older than the cold age as of --now.
OLD_WINDOW_QUERIES: list[tuple[str, str | None]] = [
    ("Which pages about Python did I read in March 2025?", None),
    ("What music did I listen to in May 2025?", "event_stream"),
    ("What did I say about running in August 2025?", None),
    ("What did I buy for the kitchen in October 2025?", None),
]


def ask_all(memory: Memory, now: float, repeat: int, queries=QUERIES, **kwargs) -> dict:
    seconds, vector_ms, reached = [], [], Counter()
    for _ in range(repeat):
        for text, mode in queries:
            started = time.perf_counter()
            pack = memory.query(text, mode=mode, now=now, **kwargs)
            seconds.append(time.perf_counter() - started)
            if "vector" in pack.trace.get("paths", {}):
                vector_ms.append(pack.trace["paths"]["vector"]["ms"] / 1000)
            if pack.trace.get("cold"):
                reached[pack.trace["cold"]] += 1
    # the vector path alone (hot and, when asked, cold chunks), from the trace
    return {**percentiles(seconds), "vector_path": percentiles(vector_ms), "searched_cold": dict(reached)}


def index_rows(memory: Memory) -> dict:
    conn = memory.db.reader()
    count = lambda table: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # noqa: E731
    return {"hot_fts_rows": conn.execute("SELECT count(*) FROM fact_events WHERE tier <> 1").fetchone()[0],
            "cold_fts_rows": conn.execute("SELECT count(*) FROM fact_events WHERE tier = 1").fetchone()[0],
            "hot_vectors": count("chunk_vectors"), "cold_vectors": count("chunk_vectors_cold")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--now", default="2026-12-01T12:00:00+00:00")
    args = parser.parse_args()
    now = datetime.fromisoformat(args.now).astimezone(timezone.utc).timestamp()
    folder = Path(tempfile.mkdtemp(prefix="magi-tiers-"))
    memory = Memory.open(folder / "data", embedder="hashing")
    result: dict = {"benchmark": "tiers", "events": args.events, "embedder": "hashing", "now": args.now,
                    "cold_after_days": tiers.DEFAULT_COLD_AFTER_DAYS, "load_average_before": os.getloadavg()}
    try:
        started = time.perf_counter()
        batch: list[dict] = []
        for payload in payloads(args.events):
            batch.append(payload)
            if len(batch) == args.batch:
                memory.ingest_many(batch)
                memory.process_pending(queues=("embedding",))
                batch = []
        if batch:
            memory.ingest_many(batch)
            memory.process_pending(queues=("embedding",))
        result["build_seconds"] = round(time.perf_counter() - started, 1)
        started = time.perf_counter()
        l3 = memory.run_due(now=now, jobs=["l3:day", "l3:week", "l3:month"]).l3
        result["l3"] = {"seconds": round(time.perf_counter() - started, 1), "written": l3}
        result["query_all_hot"] = ask_all(memory, now, args.repeat)
        runs = []
        while True:
            started = time.perf_counter()
            report = memory.run_due(now=now, jobs=["tiers"]).tiers or {}
            runs.append({"seconds": round(time.perf_counter() - started, 2), **{
                k: report.get(k) for k in ("examined", "moved_cold", "kept_hot", "warmed")}})
            if not report.get("moved_cold") and not report.get("kept_hot"):
                break
        result["tiering_runs"] = runs
        result["tiering_seconds"] = round(sum(r["seconds"] for r in runs), 1)
        result["tiers"] = memory.stats().events["tiers"]
        result["indexes"] = index_rows(memory)
        result["query_hot_only"] = ask_all(memory, now, args.repeat)
        result["query_search_all"] = ask_all(memory, now, args.repeat, search_all=True)
        result["query_old_window"] = ask_all(memory, now, args.repeat, OLD_WINDOW_QUERIES)
        result["load_average_after"] = os.getloadavg()
    finally:
        memory.close()
        for path in sorted(folder.rglob("*"), reverse=True):
            path.unlink() if path.is_file() else path.rmdir()
        folder.rmdir()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
