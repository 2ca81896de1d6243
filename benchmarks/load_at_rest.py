"""The load benchmark's questions at rest on a memory it kept (``load.py --data-dir DIR`` or ``--keep``), with this
tree's code: the memory opened (migrations and their backup timed), the approximate index brought up to date
(a memory from before the index was split by scope builds it here: timed), then ``load.at_rest`` — every question
``--repeats`` times, the same without the vector paths, the raw FTS5 + vec0 calls — and the process's memory
apart (``process_memory.memory_mb``). Prints one JSON line. With ``--catch-up``, ``load.catch_up`` too (L3,
then tiers, and the questions again): long at a million events.

    .venv/bin/python benchmarks/load_at_rest.py DIR/data          # open a copy: opening migrates it
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import load

from magi_desktop.core import Memory
from magi_desktop.core.store import ann, ann_build


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", help="the kept memory's data folder (a copy: opening it migrates it)")
    parser.add_argument("--repeats", type=int, default=2, help="rounds of the question set")
    parser.add_argument("--catch-up", action="store_true", help="then L3 and tiers as of the newest event")
    args = parser.parse_args()
    out: dict = {"benchmark": "load_at_rest", "data": args.data}
    started = time.perf_counter()
    memory = Memory.open(args.data, embedder="hashing")
    out["open_s"] = round(time.perf_counter() - started, 1)
    try:
        conn = memory.db.reader()
        now = conn.execute("SELECT max(recorded_at) FROM fact_events").fetchone()[0] + 1
        started, steps = time.perf_counter(), []
        while did := ann_build.maintain(memory.db):
            steps.append(did)
        out["ann_upkeep"] = {"steps": steps, "seconds": round(time.perf_counter() - started, 1),
                             "partitions": {code: held for code, (_, held) in ann.partitions(conn).items()}}
        out["events"] = conn.execute("SELECT count(*) FROM fact_events").fetchone()[0]
        out["memory_before"] = load.memory_mb()
        out["query_at_rest"] = load.at_rest(memory, now, args.repeats)
        out["memory_after"] = load.memory_mb()
        if args.catch_up:
            out["catch_up"] = load.catch_up(memory, now, args.repeats)
            out["memory_after_catch_up"] = load.memory_mb()
    finally:
        memory.close()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
