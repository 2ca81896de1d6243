"""The load benchmark's questions at rest on a memory it kept (``load.py --data-dir DIR`` or ``--keep``), with this
tree's code: the memory opened (migrations and their backup timed), the approximate index brought up to date
(a memory from before the index was split by scope builds it here: timed), then ``load.at_rest`` — every question
``--repeats`` times, the same without the vector paths, the raw FTS5 + vec0 calls — and the process's memory
apart (``process_memory.memory_mb``). Prints one JSON line. With ``--catch-up``, ``load.catch_up`` too (L3,
then tiers, and the questions again): long at a million events.

    .venv/bin/python benchmarks/load_at_rest.py DIR/data          # open a copy: opening migrates it

The questions are asked as of ``--now`` (default: a minute after the newest chat turn, which is the workload's:
load.py asks as of its newest workload event; the collectors' events carry the real clock, so the newest
recorded time is not it). ``--per-question`` adds each question's fastest of ``--repeats`` runs with the paths,
L2 and L3 steps that took a millisecond or more, and why it read the cold tier.
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


def per_question(memory: Memory, now: float, repeats: int) -> list[dict]:
    """Each question's fastest of ``repeats`` runs: its time, status, the steps that took 1 ms or more."""
    found = []
    for text, mode in load.QUERIES:
        best = None
        for _ in range(max(1, repeats)):
            started = time.perf_counter()
            pack = memory.query(text, mode=mode, now=now)
            took = (time.perf_counter() - started) * 1000
            if best is None or took < best[0]:
                best = (took, pack)
        took, pack = best
        steps = {name: step["ms"] for name, step in pack.trace.get("paths", {}).items() if step["ms"] >= 1}
        steps |= {name: pack.trace[name]["ms"] for name in ("l2", "l3")
                  if (pack.trace.get(name) or {}).get("ms", 0) >= 1}
        found.append({"question": text, "mode": pack.query_mode, "ms": round(took, 1), "status": pack.status,
                      "listing": "listing" in pack.trace, "cold": pack.trace.get("cold"), "steps_ms": steps})
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", help="the kept memory's data folder (a copy: opening it migrates it)")
    parser.add_argument("--repeats", type=int, default=2, help="rounds of the question set")
    parser.add_argument("--catch-up", action="store_true", help="then L3 and tiers as of the newest event")
    parser.add_argument("--now", type=float, help="ask as of this POSIX time (default: the newest chat turn + 60)")
    parser.add_argument("--per-question", action="store_true", help="also each question's fastest run, by path")
    args = parser.parse_args()
    out: dict = {"benchmark": "load_at_rest", "data": args.data}
    started = time.perf_counter()
    memory = Memory.open(args.data, embedder="hashing")
    out["open_s"] = round(time.perf_counter() - started, 1)
    try:
        conn = memory.db.reader()
        if args.now is not None:
            now = args.now
        else:
            newest_turn = conn.execute("SELECT max(timestamp) FROM fact_events WHERE source = 'chat'").fetchone()[0]
            if newest_turn is None:
                parser.error("the memory holds no chat turn to date the questions by: give --now")
            now = newest_turn + 60
        out["now"] = now
        started, steps = time.perf_counter(), []
        while did := ann_build.maintain(memory.db):
            steps.append(did)
        out["ann_upkeep"] = {"steps": steps, "seconds": round(time.perf_counter() - started, 1),
                             "partitions": {code: held for code, (_, held) in ann.partitions(conn).items()}}
        out["events"] = conn.execute("SELECT count(*) FROM fact_events").fetchone()[0]
        out["memory_before"] = load.memory_mb()
        out["query_at_rest"] = load.at_rest(memory, now, args.repeats)
        out["memory_after"] = load.memory_mb()
        if args.per_question:
            out["per_question"] = per_question(memory, now, args.repeats)
        if args.catch_up:
            out["catch_up"] = load.catch_up(memory, now, args.repeats)
            out["memory_after_catch_up"] = load.memory_mb()
            if args.per_question:
                out["per_question_after_catch_up"] = per_question(memory, now, args.repeats)
    finally:
        memory.close()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
