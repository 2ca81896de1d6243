"""L2 projection throughput and queue lag under a sensor burst (issue: L2). Prints one JSON line.

A burst of N sensor events (page visits over 300 sites, music plays, app
focus changes, some with plugin entity hints) is ingested in batches of 500
while the app's background worker runs (hashing embedder, rules provider).
Reported: ingest time; how long until the L2 queue is empty; events/s through
the worker; the queue lag (age of the oldest pending job) sampled every 0.2 s,
its maximum and its value at the end of the burst; and what L2 made of it.
Then the same projection without the worker, through ``process_pending``.

    .venv/bin/python benchmarks/l2_throughput.py            # 10k events
    .venv/bin/python benchmarks/l2_throughput.py --events 2000
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from magi_desktop.core import Memory
from magi_desktop.workers import BackgroundWorker

START = 1_760_000_000.0


def burst(n: int) -> list[dict]:
    items = []
    for i in range(n):
        at = START + i * 2.0
        kind = i % 3
        if kind == 0:
            site = f"site{i % 300}.example.com"
            items.append({"source_type": "chrome", "occurred_at": at, "source_item_id": f"v{i}",
                          "activity": {"source_code": "chrome", "action_code": "visit_page"},
                          "provenance": {"url": f"https://{site}/p/{i}", "title": f"Page {i} on {site}"}})
        elif kind == 1:
            artist = f"Artist {i % 120}"
            items.append({"source_type": "music", "occurred_at": at, "source_item_id": f"m{i}",
                          "activity": {"source_code": "music", "action_code": "listen_music"},
                          "provenance": {"track_name": f"Track {i}", "artist_name": artist},
                          "entities": [{"mention_text": artist, "entity_type": "person"}]})
        else:
            app = ("Code", "Terminal", "Firefox", "Slack", "Figma")[i % 5]
            items.append({"source_type": "app_usage", "occurred_at": at, "source_item_id": f"a{i}",
                          "activity": {"source_code": "app_usage", "action_code": "focus_app"},
                          "provenance": {"app_name": app, "window_title": f"{app} window {i}"}})
    return items


def l2_counts(memory: Memory) -> dict:
    stats = memory.stats()["l2"]
    return {k: stats[k] for k in ("entities", "edges", "assertions")} | {"jobs": stats["jobs"]}


def with_worker(n: int, folder: Path) -> dict:
    memory = Memory.open(folder, embedder="hashing")
    worker = BackgroundWorker(memory, batch=256, idle_poll_seconds=0.5)
    worker.start()
    lags: list[float] = []
    done = threading.Event()

    def sample() -> None:
        conn_memory = memory
        while not done.is_set():
            age = conn_memory.stats()["l2"]["oldest_pending_seconds"]
            lags.append(age or 0.0)
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    items = burst(n)
    started = time.perf_counter()
    sampler.start()
    for i in range(0, n, 500):
        memory.ingest_many(items[i:i + 500])
    ingested = time.perf_counter() - started
    lag_at_burst_end = memory.stats()["l2"]["oldest_pending_seconds"] or 0.0
    while memory.pending_by_queue()["l2"] or memory.stats()["l2"]["jobs"]["running"]:
        time.sleep(0.05)
    drained = time.perf_counter() - started
    done.set()
    sampler.join()
    worker.stop()
    result = {"ingest_seconds": round(ingested, 2), "drained_after_seconds": round(drained, 2),
              "events_per_second": round(n / drained, 1), "lag_at_burst_end_seconds": round(lag_at_burst_end, 2),
              "max_lag_seconds": round(max(lags, default=0.0), 2), "l2": l2_counts(memory)}
    memory.close()
    return result


def direct(n: int, folder: Path) -> dict:
    memory = Memory.open(folder, embedder="hashing")
    memory.ingest_many(burst(n))
    memory.process_pending(queues=("embedding",))
    started = time.perf_counter()
    report = memory.process_pending(queues=("l2",))["l2"]
    seconds = time.perf_counter() - started
    memory.close()
    return {"seconds": round(seconds, 2), "events_per_second": round(report["events"] / seconds, 1),
            "batches": report["batches"], "fast_tracked": report["fast_tracked"], "llm_calls": report["llm_calls"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        result = {"benchmark": "l2_throughput", "events": args.events, "llm": "rules",
                  "worker": with_worker(args.events, Path(tmp) / "worker"),
                  "process_pending": direct(args.events, Path(tmp) / "direct")}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
