"""Replaying a month through the periodic jobs: how long ``Memory.run_due`` takes to build L3.

    .venv/bin/python benchmarks/l3_replay.py [--events-per-month 3000] [--step-hours 1]

Stores a month of the workload mix (``workload.py``: chat in English and Chinese, browser, music,
terminal, Git, app usage, calendar), projects it (L2, rules), then calls ``run_due`` every
``--step-hours`` of simulated time across the month, as the app's scheduler would have. Prints one
JSON line: the replay's wall time and per-call cost, the summaries written by kind, links per
summary, and the latency of "What was I busy with last week?" answered from them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workload import START, payloads

from magi_desktop.core import Memory

DAY = 86400.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events-per-month", type=int, default=3000)
    parser.add_argument("--step-hours", type=float, default=1.0)
    args = parser.parse_args()
    month = [p for p in payloads(args.events_per_month * 12) if p["occurred_at"] < START + 30 * DAY]
    with Memory.open(tempfile.mkdtemp(prefix="magi-l3-"), embedder="hashing") as memory:
        memory.ingest_many(month)
        started = time.perf_counter()
        memory.process_pending()
        project_s = time.perf_counter() - started
        calls, now, end = [], START + args.step_hours * 3600, START + 31 * DAY
        replay_started = time.perf_counter()
        while now <= end:
            t = time.perf_counter()
            memory.run_due(now=now)
            calls.append(time.perf_counter() - t)
            now += args.step_hours * 3600
        replay_s = time.perf_counter() - replay_started
        conn = memory.db.reader()
        kinds = {f"{t}:{g or c}": n for t, g, c, n in conn.execute(
            "SELECT summary_type, granularity, summary_category, count(*) FROM l3_summaries GROUP BY 1, 2, 3")}
        links = conn.execute("SELECT avg(n), max(n) FROM (SELECT count(*) AS n FROM summary_event_links "
                             "GROUP BY summary_id)").fetchone()
        latencies = []
        for _ in range(20):
            t = time.perf_counter()
            pack = memory.query("What was I busy with last week?", now=START + 30 * DAY)
            latencies.append((time.perf_counter() - t) * 1000)
        first = pack.findings[0] if pack.findings else None
    print(json.dumps({
        "benchmark": "l3_replay", "events": len(month), "days": 30, "step_hours": args.step_hours,
        "l2_projection_s": round(project_s, 2), "run_due_calls": len(calls), "replay_s": round(replay_s, 2),
        "run_due_ms_p50": round(statistics.median(calls) * 1000, 2),
        "run_due_ms_max": round(max(calls) * 1000, 1), "summaries": kinds,
        "links_per_summary_mean": round(links[0] or 0, 1), "links_per_summary_max": links[1],
        "busy_last_week_ms_p50": round(statistics.median(latencies), 2),
        "busy_last_week_first_layer": first.layer if first else None,
        "busy_last_week_first": first.text[:120] if first else None,
    }, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
