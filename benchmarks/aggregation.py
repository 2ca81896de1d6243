"""Activity blocks (issue 20, item 3): what aggregation makes of a heavy day, and what it costs ingest.
Prints one JSON line.

The workload's mix (benchmarks/workload.py) with its timestamps squeezed into one day — ``--per-day`` events,
a heavy user's 2,000 by default — is ingested twice in the same run, with the rules on and off, alternating
``--rounds`` times (the best time of each side is kept, so a busy machine's noise falls on both). Reported:
the L1 rows stored, how many of them are blocks and folded members, the rows a window list of the day counts
(the block instead of its members), and ingest events/s of each side with their ratio.

    .venv/bin/python benchmarks/aggregation.py
    .venv/bin/python benchmarks/aggregation.py --per-day 2000 --days 3 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from workload import START, payloads

from magi_desktop.core import Memory
from magi_desktop.core.aggregation.rules import RULES
from magi_desktop.core.store import activity_blocks, l1
from magi_desktop.core.text import fts_document

DAY = 86400.0


def heavy_days(per_day: int, days: int) -> list[dict]:
    """The workload's payloads, ``per_day`` of them to each day (spread evenly over it)."""
    items = list(payloads(per_day * days))
    step = DAY / per_day
    return [{**p, "occurred_at": START + i * step + (p["occurred_at"] % 1)} for i, p in enumerate(items)]


def ingest(items: list[dict], folder: Path, *, aggregate: bool, batch: int) -> tuple[float, Memory]:
    memory = Memory.open(folder, embedder="hashing")
    for rule in RULES:
        memory.set_aggregation(rule.name, aggregate)
    started = time.perf_counter()
    for first in range(0, len(items), batch):
        memory.ingest_many(items[first:first + batch])
    return time.perf_counter() - started, memory


def counts(memory: Memory, days: int) -> dict:
    conn = memory.db.reader()
    stored = conn.execute("SELECT count(*) FROM fact_events").fetchone()[0]
    blocks = conn.execute("SELECT count(*) FROM fact_events WHERE json_extract(metadata_json, "
                          "'$.timeline.activity.object_code') = 'activity_block'").fetchone()[0]
    now = START + days * DAY
    where = l1.window_filter(["fact_authoritative", "conversation_only"], START, now, now, False)
    listed = sum(l1.events_per_source(conn, activity_blocks.unfolded(where, now)).values())
    sensor = conn.execute("SELECT count(*) FROM fact_events WHERE source IN ('chrome', 'terminal', 'music')"
                          ).fetchone()[0]
    return {"l1_rows": stored, "blocks": blocks, "folded_members": activity_blocks.folded_member_count(conn),
            "window_list_rows": listed, "browser_terminal_music_rows": sensor}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-day", type=int, default=2000)
    parser.add_argument("--days", type=int, default=1)
    parser.add_argument("--batch", type=int, default=200, help="payloads per ingest_many (a collector's run)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    items = heavy_days(args.per_day, args.days)
    fts_document("预热")   # jieba's dictionary loaded outside the timing, as in a running app
    best = {True: float("inf"), False: float("inf")}
    seen: dict[bool, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.rounds):
            for aggregate in (round_ % 2 == 0, round_ % 2 != 0):       # alternate which side goes first
                took, memory = ingest(items, Path(tmp) / f"{round_}-{aggregate}", aggregate=aggregate,
                                      batch=args.batch)
                best[aggregate] = min(best[aggregate], took)
                seen[aggregate] = counts(memory, args.days)
                memory.close()
    n = len(items)
    print(json.dumps({
        "benchmark": "aggregation", "events": n, "per_day": args.per_day, "days": args.days, "batch": args.batch,
        "with_aggregation": seen[True] | {"events_per_s": round(n / best[True], 1)},
        "without_aggregation": seen[False] | {"events_per_s": round(n / best[False], 1)},
        "ingest_ratio": round(best[False] / best[True], 3),
        "window_list_ratio": round(seen[True]["window_list_rows"] / seen[False]["window_list_rows"], 3),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }, ensure_ascii=False))


if __name__ == "__main__":
    main()
