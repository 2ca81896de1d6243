"""L2 projection throughput and queue lag under a sensor burst (issue: L2). Prints one JSON line.

A burst of N sensor events (page visits over 300 sites, music plays, app
focus changes, some with plugin entity hints) is ingested in batches of 500
while the app's background worker runs (hashing embedder, rules provider).
Reported: ingest time; how long until the L2 queue is empty; events/s through
the worker; the queue lag (age of the oldest pending job) sampled every 0.2 s,
its maximum and its value at the end of the burst; and what L2 made of it.
Then the same projection without the worker, through ``process_pending``.

With ``--scale N`` (issue 20: L2 that does not slow with size), the same ``--sample`` workload events
(``workload.py``) are projected alone in a fresh memory and as the pending part of a memory of N events (built
like ``load.py`` builds its memory, hashing embedder; cached in ``--cache``), in one run. Fresh and big runs
alternate ``--repeats`` times on copies of one database each; medians, wall and CPU seconds (the CPU ratio is
the fairer one on a loaded machine). Two cases: ``oldest`` — the first events of a memory nothing was
projected of yet (a back-log, as load.py measures it at 1M) — and ``newest`` — the last events after a
history whose L2 jobs are marked done without projecting them (a caught-up memory; its L2 tables stay small,
so this measures what the events' own history costs). Reported per case: events/s fresh and big and their
ratio (target >= 0.8). Then the L2 queue alone: a claim (and its release) with 10k and with
``--queue-pending`` jobs, as a back-log and caught up, with and without statistics, with migration 0028 and
as before it.

    .venv/bin/python benchmarks/l2_throughput.py            # 10k events
    .venv/bin/python benchmarks/l2_throughput.py --events 2000
    .venv/bin/python benchmarks/l2_throughput.py --events 0 --scale 200000 --sample 2000 --cache /tmp/l2bench
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import itertools
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import sqlean

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from workload import payloads

from magi_desktop.core import Memory
from magi_desktop.core.l2 import jobs
from magi_desktop.core.store import Database
from magi_desktop.core.store.queue import JobQueue
from magi_desktop.core.text import fts_document
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


# --------------------------------------------------------------------------- at scale (issue 20)

def ingest(memory: Memory, items) -> None:
    """As load.py: batches of 1000, each embedded before the next."""
    items = iter(items)
    while batch := list(itertools.islice(items, 1000)):
        memory.ingest_many(batch)
        memory.process_pending(queues=("embedding",))


def big_memory(n: int, cache: Path) -> Path:
    """The folder of a memory of ``n`` workload events, built once into ``cache``."""
    folder = cache / f"workload-{n}"
    if not (folder / "built").exists():
        shutil.rmtree(folder, ignore_errors=True)
        started = time.perf_counter()
        with Memory.open(folder, embedder="hashing") as memory:
            ingest(memory, payloads(n))
            with memory.db.writer() as conn:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        (folder / "built").write_text(f"{time.perf_counter() - started:.0f} s\n")
    return folder


def project(master: Path, folder: Path, sample: int) -> dict:
    """Project ``sample`` pending events of a copy of the database ``master``: wall and CPU seconds."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    shutil.copy2(master, folder / "memory.db")
    with Memory.open(folder, embedder="hashing") as memory:
        started, cpu = time.perf_counter(), time.process_time()
        report = memory.process_pending(limit=sample, queues=("l2",))["l2"]
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        made = {k: memory.stats()["l2"][k] for k in ("entities", "edges", "assertions")}
    shutil.rmtree(folder, ignore_errors=True)
    return {"events": report["events"], "seconds": seconds, "cpu_seconds": cpu, "made": made}


def master(folder: Path, items=None, source: Path | None = None, done_but: int | None = None) -> Path:
    """A database to copy for each run, migrated and checkpointed: ``items`` ingested into a new memory, or a
    copy of ``source`` — with every L2 job done but the last ``done_but`` (a caught-up history)."""
    folder.mkdir(parents=True)
    if source is not None:
        shutil.copy2(source / "memory.db", folder / "memory.db")
    with Memory.open(folder, embedder="hashing") as memory:
        if items is not None:
            ingest(memory, items)
        with memory.db.transaction() as conn:
            if done_but is not None:
                conn.execute("UPDATE l2_projection_jobs SET state = 'done', finished_at = 0 WHERE event_rowid <= "
                             "(SELECT max(event_rowid) FROM l2_projection_jobs) - ?", (done_but,))
        with memory.db.writer() as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return folder / "memory.db"


def median_rates(runs: list[dict]) -> dict:
    events = runs[0]["events"]
    wall = sorted(r["seconds"] for r in runs)[len(runs) // 2]
    cpu = sorted(r["cpu_seconds"] for r in runs)[len(runs) // 2]
    return {"events": events, "median_seconds": round(wall, 2), "events_per_s": round(events / wall, 1),
            "median_cpu_seconds": round(cpu, 2), "events_per_cpu_s": round(events / cpu, 1),
            "all_seconds": [round(r["seconds"], 2) for r in runs], "made": runs[0]["made"]}


def at_scale(n: int, sample: int, cache: Path, tmp: Path, repeats: int) -> dict:
    """Fresh and big alternate ``repeats`` times (the machine's load moves between runs); medians."""
    source = big_memory(n, cache)
    everything = list(payloads(n))
    out: dict = {"memory_events": n, "sample": sample, "repeats": repeats}
    for case, items in (("oldest", everything[:sample]), ("newest", everything[-sample:])):
        fresh_db = master(tmp / f"fresh-{case}", items=items)
        big_db = master(tmp / f"big-{case}", source=source, done_but=sample if case == "newest" else None)
        runs: dict[str, list[dict]] = {"fresh": [], "big": []}
        for _ in range(repeats):
            runs["fresh"].append(project(fresh_db, tmp / "run", sample))
            runs["big"].append(project(big_db, tmp / "run", sample))
        fresh, big = median_rates(runs["fresh"]), median_rates(runs["big"])
        out[case] = {"fresh": fresh, "big": big,
                     "big_over_fresh": round(big["events_per_s"] / fresh["events_per_s"], 2),
                     "big_over_fresh_cpu": round(big["events_per_cpu_s"] / fresh["events_per_cpu_s"], 2)}
        shutil.rmtree(tmp / f"big-{case}", ignore_errors=True)
    return out


def claim_ms(db: Database, repeats: int, queue: JobQueue = jobs.QUEUE) -> float:
    """Median milliseconds of one L2 claim (the head job and its batch key's), its jobs released after."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        rowids = queue.claim(db, time.time(), jobs.BATCH_EVENTS)
        times.append(time.perf_counter() - started)
        if rowids:
            jobs.release(db, rowids)
    return round(sorted(times)[len(times) // 2] * 1000, 2)


CAUGHT_UP_PENDING = 200       # the jobs left when the history is done


def queue_at(jobs_queued: int, folder: Path, repeats: int) -> dict:
    """Claim cost (median ms) in a queue of ``jobs_queued`` jobs (batch keys as the workload's: sessions of 30 chat
    turns and six sources): all pending (a back-log), then all but the last 200 done (caught up); without
    statistics and with those ``ANALYZE`` took during the back-log (what ``PRAGMA optimize`` may leave); with
    migration 0028 and then as before it (its indexes dropped, the claim's plan left to SQLite). Also: every job
    postponed (the provider is down)."""
    Memory.open(folder, embedder="hashing").close()
    path = folder / "memory.db"

    def sql(*statements: str) -> None:
        # Jobs only, no events behind them (a claim reads no event): a plain connection, foreign keys off.
        with contextlib.closing(sqlean.connect(path)) as conn, conn:
            for statement in statements:
                conn.execute(statement)

    def timed(queue: JobQueue) -> float:
        db = Database(path, check=False)    # opened afresh: the planner reads the statistics as they are now
        try:
            return claim_ms(db, repeats, queue)
        finally:
            db.close()

    sql(f"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {jobs_queued}) "
        "INSERT INTO l2_projection_jobs (event_rowid, batch_key, enqueued_at) SELECT i, CASE WHEN i % 2 = 0 "
        "THEN 'session:session-' || (i / 60) ELSE 'source:' || (i % 6) END, i FROM n")
    no_stats = ("DELETE FROM sqlite_stat1", "DELETE FROM sqlite_stat4")
    caught_up = f"UPDATE l2_projection_jobs SET state = 'done' WHERE event_rowid <= {jobs_queued - CAUGHT_UP_PENDING}"
    backlog = "UPDATE l2_projection_jobs SET state = 'pending'"
    out: dict = {}
    for schema, queue in (("0028", jobs.QUEUE), ("before_0028", dataclasses.replace(jobs.QUEUE, claim_indexes=None))):
        if schema == "before_0028":
            sql(*(f"DROP INDEX {index}" for index in
                  ("l2_projection_jobs_order", "l2_projection_jobs_group", "l2_projection_jobs_enqueued")))
        sql("ANALYZE", *no_stats)
        got = {"backlog": timed(queue)}
        sql("ANALYZE")
        got["backlog_analyzed"] = timed(queue)
        sql(caught_up)
        got["caught_up_stale_stats"] = timed(queue)
        sql(*no_stats)
        got["caught_up"] = timed(queue)
        sql(backlog)
        out[schema] = got
        if schema == "0028":
            sql(f"UPDATE l2_projection_jobs SET next_attempt_at = {time.time() + 3600}")
            out["0028"]["postponed"] = timed(queue)
            sql("UPDATE l2_projection_jobs SET next_attempt_at = 0")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=10_000, help="the sensor burst (0: skip)")
    parser.add_argument("--scale", type=int, default=0, help="events of the big memory (0: skip)")
    parser.add_argument("--sample", type=int, default=2000, help="events projected fresh and at scale")
    parser.add_argument("--cache", help="folder keeping the big memory between runs (default: a temporary one)")
    parser.add_argument("--repeats", type=int, default=3, help="fresh and big runs, alternating (medians)")
    parser.add_argument("--queue-pending", type=int, default=969_000, help="pending jobs of the queue check (0: skip)")
    args = parser.parse_args()
    fts_document("预热")   # jieba's dictionary, loaded as a running app has it (L3 insights segment Chinese)
    result: dict = {"benchmark": "l2_throughput", "events": args.events, "llm": "rules",
                    "load_average_before": [round(x, 2) for x in os.getloadavg()]}
    with tempfile.TemporaryDirectory() as tmp:
        if args.events:
            result["worker"] = with_worker(args.events, Path(tmp) / "worker")
            result["process_pending"] = direct(args.events, Path(tmp) / "direct")
        if args.scale:
            cache = Path(args.cache).expanduser() if args.cache else Path(tmp) / "cache"
            result["at_scale"] = at_scale(args.scale, args.sample, cache, Path(tmp), args.repeats)
        if args.queue_pending:
            result["queue_claim"] = {str(n): queue_at(n, Path(tmp) / f"queue-{n}", 21)
                                     for n in sorted({10_000, args.queue_pending})}
    result["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(result))


if __name__ == "__main__":
    main()
