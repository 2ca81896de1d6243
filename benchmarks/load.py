"""Load (issue 10, part C): a million L1 events under collectors and concurrent queries. Prints one JSON line.

The workload mix (``workload.py``: chat, browser, music, terminal, Git, app usage, calendar, ~12%
Chinese) is streamed into one memory in batches of ``--batch`` through ``Memory.ingest_many``, and
each batch is embedded (``process_pending(queues=("embedding",))``, the hashing embedder) before the
next, so every event is in FTS5 and in the vector index when the next batch starts. Meanwhile:

* the six first-party collectors run under a ``Supervisor`` (ticked every ``--tick`` seconds, the
  terminal history watched) on small local sources made here — a shell history, a play log, a
  Chromium history file, a Git repository, an .ics file — which a thread keeps appending to;
* another thread asks a fixed set of questions in all nine modes and the rule-chosen one, as of the
  newest ingested event, pausing ``--query-pause`` seconds between questions.

At each checkpoint (10k, 100k, 1M by default, in one run, so the curve is comparable) ingest stops:
the embedding queue is already empty; the WAL is checkpointed (TRUNCATE) and the files measured;
the questions are asked again at rest (no ingest, no query thread); with ``--tiering`` (the default) the
periodic jobs catch up to the newest event's time (``catch_up``: L3 summarises the closed windows, then the
``tiers`` job moves what is older than the cold age and summarised to the cold tier, as a long-lived memory
has it) and the questions are asked at rest once more; the memory figures (``memory_mb``) and the
collectors' counts are read. Then ingest goes on, into a memory with a cold tier.

The workload spreads its timestamps over ``--span-days`` (365) whatever ``--max-events``: in a 1M run the
10k and 100k checkpoints cover 3.7 and 36.5 days, so nothing is old enough to go cold before the 1M one
(180 days, ``--cold-after-days``); ``--span-days 3650`` gives a decade, cold from the 100k checkpoint on.

Reported per checkpoint: ingest rate over the last segment (with embedding, and ``ingest_many``
alone), query p50/p95 during ingest and at rest, overall and per mode, the same at rest without the vector
paths (the exact vec0 KNN grows with the chunks; this is the rest of the query path), the raw FTS5 + vec0
calls for scale, bytes per event (database + WAL after the checkpoint), the process's memory (RSS, and
apart: anonymous, file-backed, PSS, USS), ``tiering`` (the catch-up's seconds, hot / cold / kept-hot events,
each tier's index rows and bytes, the questions at rest after it), the collectors' stored/errors counts, the
L2 queue waiting, and the L2
(rules) rate on ``--l2-per-checkpoint`` pending events, projected after the questions. After the run: the L2
projection (rules) of a sample of the big database's pending events, and of a fresh ``--l2-sample``
memory; the MiniLM embedding throughput on ``--minilm-sample`` stored texts and what embedding all
the stored chunks would take with it. L2 is NOT projected for the million events.

    .venv/bin/python benchmarks/load.py --quick          # 20k events, a minute or two
    .venv/bin/python benchmarks/load.py                  # 1M events; prints the DB path and size as it goes
    .venv/bin/python benchmarks/load.py --embedder minilm    # real MiniLM vectors (cached per distinct text)

The database goes to a temporary folder removed at the end unless ``--keep`` or ``--data-dir``. The run
stops at a checkpoint (and says so) if the next segment would not fit in ``--time-budget`` seconds at
the last rate, or on the disk at the last size per event.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from load_sources import Sources
from process_memory import memory_mb
from query_latency import raw_calls
from workload import START as workload_start
from workload import payloads

from magi_desktop.collectors import build_supervisor
from magi_desktop.core import Memory
from magi_desktop.core.store import ann_build, tiers
from magi_desktop.core.text import fts_document

# Every mode once, and the rule-chosen mode (None) for the rest.
QUERIES: list[tuple[str, str | None]] = [
    ("What did I buy for the kitchen?", None), ("Where do I live now?", "current_state"),
    ("What music did I listen to last week?", "event_stream"), ("Which pages about Python did I read?", None),
    ("What did you recommend for dinner?", "episode_recall"), ("What happened recently?", None),
    ("Summarise my week", "activity_summary"), ("What was I busy with last month?", "summary"),
    ("How did we fix the failing build last time?", "strategy"), ("我最近在学什么？", None),
    ("What did I commit to the magi repo?", "exact_fact"), ("Which app did I use the most?", None),
    ("When is the team sync compared to last month?", "temporal_compare"),
    ("What did I say about running in our other chats?", "cross_session"),
    ("What is my sister's birthday?", None),
]
FREE_DISK_MARGIN = 1.3    # stop unless the projected database fits this many times in the free space


def percentiles(seconds: list[float]) -> dict:
    if not seconds:
        return {"count": 0}
    ordered = sorted(seconds)
    return {"count": len(ordered), "p50_ms": round(statistics.median(ordered) * 1000, 1),
            "p95_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))] * 1000, 1),
            "max_ms": round(ordered[-1] * 1000, 1)}


class QueryLoad(threading.Thread):
    """Asks QUERIES round and round as of ``now``; records (finished at, seconds) per question."""

    def __init__(self, memory: Memory, pause: float):
        super().__init__(name="load-queries", daemon=True)
        self.memory = memory
        self.pause = pause
        self.now: float | None = None
        self.samples: list[tuple[float, float]] = []
        self.errors: list[str] = []
        self._running = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._finished = threading.Event()

    def run(self) -> None:
        for question, mode in itertools.cycle(QUERIES):
            while not self._running.is_set() or self.now is None:
                self._idle.set()
                if self._finished.is_set():
                    return
                self._running.wait(0.1)
            self._idle.clear()
            if self._finished.is_set():
                return
            started = time.perf_counter()
            try:
                self.memory.query(question, mode=mode, now=self.now)
            except Exception as exc:  # noqa: BLE001 - counted and reported, the load goes on
                self.errors.append(f"{type(exc).__name__}: {exc}"[:200])
            ended = time.perf_counter()
            self.samples.append((ended, ended - started))
            self._idle.set()
            time.sleep(self.pause)

    def resume(self) -> None:
        self._running.set()

    def hold(self) -> None:
        """Stop asking and wait for the question in flight."""
        self._running.clear()
        self._idle.wait()

    def finish(self) -> None:
        self._finished.set()
        self._running.set()
        if self.is_alive():
            self.join(600)

    def between(self, start: float, end: float) -> list[float]:
        return [seconds for ended, seconds in list(self.samples) if start <= ended <= end]


def asked(memory: Memory, now: float, repeats: int) -> dict:
    """Every question ``repeats`` times: p50/p95 over all, and per mode (the rule-chosen ones together)."""
    overall, by_mode = [], {}
    for _ in range(repeats):
        for question, mode in QUERIES:
            started = time.perf_counter()
            memory.query(question, mode=mode, now=now)
            seconds = time.perf_counter() - started
            overall.append(seconds)
            by_mode.setdefault(mode or "rule_chosen", []).append(seconds)
    return percentiles(overall) | {"by_mode": {m: {k: v for k, v in percentiles(s).items() if k != "max_ms"}
                                               for m, s in by_mode.items()}}


def at_rest(memory: Memory, now: float, repeats: int) -> dict:
    """Every question ``repeats`` times, nothing else running in this process but the collectors; the same
    without the vector paths (the vec0 KNN is exact and linear in the chunks: what the rest of the query path
    costs); and the raw FTS5 MATCH + vec0 KNN (k=100) each question is built on (``query_latency.raw_calls``)."""
    vectors = {q: memory.embedder.embed([q])[0] for q, _ in QUERIES}
    raw = [raw_calls(memory, q, vectors[q], now) for _ in range(repeats) for q, _ in QUERIES]
    result = asked(memory, now, repeats)
    ready = memory.vectors_ready
    memory.vectors_ready = False
    try:
        result["without_vector_paths"] = asked(memory, now, repeats)
    finally:
        memory.vectors_ready = ready
    return result | {"raw_fts_knn": percentiles(raw)}


# The b-trees of each tier's index: a virtual table's shadow tables are named after it (longest name first).
TIER_INDEXES = {"cold_fts": "fact_events_cold_fts", "hot_fts": "fact_events_fts",
                "pending_vectors": "chunk_vectors_pending", "cold_vectors": "chunk_vectors_cold",
                "hot_vectors": "chunk_vectors"}
# Every periodic job the app's scheduler runs (ui/scheduler.py) but the daily backup, which goes by the real
# clock and copies the whole database; ``tiers`` after them, as run_due orders it.
CATCH_UP_JOBS = ("maintenance", "l3:hour", "l3:day", "l3:week", "l3:month", "l3:insights")
MAX_TIER_RUNS = 500       # a tiering run looks at tiers.SCAN_LIMIT rows: 10M of them


def tier_figures(memory: Memory) -> dict:
    """Hot and cold events (``tiers.sizes``), the rows of each tier's vector table, and the bytes of the database
    file each tier's index holds (SQLite's ``dbstat``: the pages of every b-tree of the index's shadow tables and
    their indexes; ``other`` is the rest of the schema, ``free`` the free pages moved rows left: the file does
    not shrink), and the approximate index file beside it."""
    started = time.perf_counter()
    conn = memory.db.reader()
    owner = dict(conn.execute("SELECT name, tbl_name FROM sqlite_master WHERE type IN ('table', 'index')"))

    def index_of(table: str) -> str:
        return next((key for key, base in TIER_INDEXES.items() if table == base or table.startswith(base + "_")),
                    "other")

    sizes = dict.fromkeys([*TIER_INDEXES, "other"], 0)
    for name, size in conn.execute("SELECT name, pgsize FROM dbstat('main', 1)"):     # 1: a row per b-tree
        sizes[index_of(owner.get(name, name))] += size
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    sizes["free"] = conn.execute("PRAGMA freelist_count").fetchone()[0] * page_size
    sizes["ann_file"] = sum(p.stat().st_size for p in memory.path.parent.glob(f"{memory.path.name}.chunks-*.usearch"))
    count = lambda table: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # noqa: E731
    return {"events": tiers.sizes(conn), "hot_vectors": count("chunk_vectors"),
            "cold_vectors": count("chunk_vectors_cold"), "bytes": sizes,
            "seconds": round(time.perf_counter() - started, 1)}


def catch_up(memory: Memory, now: float, repeats: int) -> dict:
    """What the app's periodic jobs would have done by ``now`` (the newest event's time): L2 maintenance, the L3
    windows closed by then (the late back-fill summarises every day, week and month of the events stored since
    the last checkpoint) and the insights, their summaries embedded, then ``tiers`` run until its scan reaches
    the cutoff (``cold_after_days`` before ``now``), as the hourly job would have by then. Then the tiers'
    figures and the questions at rest again: default recall, hot only."""
    started = time.perf_counter()
    due = memory.run_due(now=now, jobs=CATCH_UP_JOBS)
    periodic_s = time.perf_counter() - started
    started = time.perf_counter()
    memory.process_pending(queues=("embedding",))
    embed_s = time.perf_counter() - started
    moved = {"examined": 0, "moved_cold": 0, "kept_hot": 0, "warmed": 0}
    started = time.perf_counter()
    runs, examined = 0, tiers.SCAN_LIMIT
    while examined >= tiers.SCAN_LIMIT and runs < MAX_TIER_RUNS:      # fewer: the scan reached the cutoff
        report = memory.run_due(now=now, jobs=["tiers"]).tiers or {}
        moved = {key: value + (report.get(key) or 0) for key, value in moved.items()}
        examined, runs = report.get("examined") or 0, runs + 1
    tiers_s = time.perf_counter() - started
    wal_checkpoint(memory)
    figures = tier_figures(memory)
    return {"now": now, "days_covered": round((now - workload_start) / 86_400, 1),
            "cold_after_days": tiers.cold_after_days(memory.db.reader()), "l3_written": due.l3,
            "periodic_seconds": round(periodic_s, 1), "summaries_embedding_seconds": round(embed_s, 1),
            "tiers_seconds": round(tiers_s, 1), "tiers_runs": runs, **moved, **figures,
            "query_at_rest": at_rest(memory, now, repeats)}


def open_embedder(name: str):
    """``hashing`` as named, or MiniLM through the text -> vector cache (``cached_embedder.py``)."""
    if name == "hashing":
        return "hashing"
    from cached_embedder import CachedMiniLM

    return CachedMiniLM()


def files_bytes(db_path: Path) -> dict[str, int]:
    sizes = {}
    for suffix in ("", "-wal", "-shm"):
        path = Path(str(db_path) + suffix)
        sizes[suffix or "db"] = path.stat().st_size if path.exists() else 0
    return sizes


def wal_checkpoint(memory: Memory) -> dict:
    before = files_bytes(memory.path)
    with memory.db.writer() as conn:
        busy, log_pages, done = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    after = files_bytes(memory.path)
    return {"db_bytes": after["db"], "wal_bytes_before_checkpoint": before["-wal"], "wal_bytes": after["-wal"],
            "shm_bytes": after["-shm"], "checkpoint_busy": bool(busy)}


def collector_counts(supervisor) -> dict:
    out = {}
    for name, status in sorted(supervisor.status.items()):
        counts = status.counts
        out[name] = {"runs": status.runs, "stored": counts.get("stored", 0),
                     "duplicates": counts.get("duplicates", 0), "rejected": counts.get("rejected", 0),
                     "write_failed": counts.get("write_failed", 0), "failures": status.failures,
                     "quarantined": status.quarantined, "last_error": status.last_error}
    return out


def l2_on(memory: Memory, limit: int | None) -> dict:
    started = time.perf_counter()
    report = memory.process_pending(limit=limit, queues=("l2",))["l2"]
    seconds = time.perf_counter() - started
    rate = report["events"] / seconds if seconds else 0.0
    return {"events": report["events"], "seconds": round(seconds, 1), "events_per_s": round(rate, 1),
            "batches": report["batches"], "fast_tracked": report["fast_tracked"], "llm_calls": report["llm_calls"]}


def l2_fresh(n: int, folder: Path, embedder) -> dict:
    """The L2 (rules) projection of ``n`` workload events in a memory of their own."""
    with Memory.open(folder, embedder=embedder) as memory:
        generated = payloads(n, seed=23)
        while batch := list(itertools.islice(generated, 2000)):
            memory.ingest_many(batch)
        memory.process_pending(queues=("embedding",))
        result = l2_on(memory, None)
        stats = memory.stats()["l2"]
        result["made"] = {k: stats[k] for k in ("entities", "edges", "assertions")}
    return result


def minilm_rate(texts: list[str]) -> dict:
    from magi_desktop.core.embed import MiniLMEmbedder

    embedder = MiniLMEmbedder(idle_seconds=None, batch_size=32)
    embedder.embed(texts[:32])            # load the weights outside the timing
    started = time.perf_counter()
    embedder.embed(texts)
    seconds = time.perf_counter() - started
    embedder.release()
    return {"texts": len(texts), "per_s": round(len(texts) / seconds, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-events", type=int, default=1_000_000)
    parser.add_argument("--checkpoints", default="10000,100000,1000000")
    parser.add_argument("--quick", action="store_true", help="20k events, checkpoints 2k/10k/20k, small samples")
    parser.add_argument("--batch", type=int, default=1000, help="payloads per ingest_many call")
    parser.add_argument("--query-pause", type=float, default=0.5, help="seconds between questions during ingest")
    parser.add_argument("--rest-repeats", type=int, default=2, help="rounds of the question set at rest")
    parser.add_argument("--tick", type=float, default=2.0, help="seconds between supervisor ticks")
    parser.add_argument("--l2-sample", type=int, default=20_000, help="events of a fresh memory projected by L2")
    parser.add_argument("--l2-at-scale", type=int, default=5_000,
                        help="pending events of the big database projected by L2 at the end (0: skip)")
    parser.add_argument("--l2-per-checkpoint", type=int, default=1_000,
                        help="pending events projected by L2 at each checkpoint, after the questions (0: skip)")
    parser.add_argument("--minilm-sample", type=int, default=512, help="stored texts embedded with MiniLM")
    parser.add_argument("--time-budget", type=float, default=2700.0,
                        help="stop at a checkpoint if the next segment would end past this many seconds")
    parser.add_argument("--embedder", choices=("hashing", "minilm"), default="hashing",
                        help="minilm: real vectors, each distinct text embedded once and cached in "
                             "~/.cache/magi-bench/ (outside git); questions are embedded through the same cache")
    parser.add_argument("--tiering", action=argparse.BooleanOptionalAction, default=True,
                        help="at each checkpoint, run the periodic jobs as of the newest event (L3, then tiers) "
                             "and ask the questions again (default: on)")
    parser.add_argument("--span-days", type=float, default=365.0,
                        help="days the workload's timestamps spread over, for all --max-events (default 365)")
    parser.add_argument("--cold-after-days", type=float,
                        help="the memory's cold age (Memory.set_cold_after_days; default: the product's, 180)")
    parser.add_argument("--data-dir", help="keep everything here (must not hold a memory yet)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args()
    if args.quick:
        args.max_events, args.checkpoints = 20_000, "2000,10000,20000"
        args.l2_sample, args.l2_at_scale, args.minilm_sample = 2000, 1000, 128
        args.l2_per_checkpoint = 200
    checkpoints = sorted({c for c in map(int, args.checkpoints.split(",")) if 0 < c < args.max_events}
                         | {args.max_events})

    if args.data_dir:
        folder = Path(args.data_dir).expanduser().resolve()
        if (folder / "data" / "memory.db").exists():
            parser.error(f"{folder} already holds a memory; give an empty or new folder")
        folder.mkdir(parents=True, exist_ok=True)
    else:
        folder = Path(tempfile.mkdtemp(prefix="magi-load-"))
    keep = args.keep or bool(args.data_dir)
    data = folder / "data"
    sources = Sources(folder / "sources")
    data.mkdir(parents=True, exist_ok=True)
    (data / "collectors.json").write_text(json.dumps({"collectors": sources.settings()}))

    embedder = open_embedder(args.embedder)
    memory = Memory.open(data, embedder=embedder)
    if args.cold_after_days is not None:
        memory.set_cold_after_days(args.cold_after_days)
    print(f"load: database {memory.path} ({'kept' if keep else 'removed at the end'})", file=sys.stderr)
    fts_document("预热")   # jieba's dictionary, loaded as a running app has it
    supervisor, plugin_errors = build_supervisor(memory, data, env={}, watch=True)
    ticking = threading.Event()

    def tick() -> None:
        while not ticking.wait(args.tick):
            supervisor.tick()

    ticker = threading.Thread(target=tick, name="load-ticker", daemon=True)
    queries = QueryLoad(memory, args.query_pause)
    results: list[dict] = []
    stopped_early = None
    load_before = [round(x, 2) for x in os.getloadavg()]
    run_started = time.perf_counter()
    try:
        supervisor.tick()
        sources.start()
        ticker.start()
        queries.start()
        generated = payloads(args.max_events, span_days=args.span_days)
        ingested = 0
        for number, checkpoint in enumerate(checkpoints):
            segment_started = time.perf_counter()
            ingest_s = embed_s = 0.0
            queries.resume()
            while ingested < checkpoint:
                batch = list(itertools.islice(generated, min(args.batch, checkpoint - ingested)))
                started = time.perf_counter()
                memory.ingest_many(batch)
                ingest_s += time.perf_counter() - started
                queries.now = batch[-1]["occurred_at"] + 60
                started = time.perf_counter()
                memory.process_pending(queues=("embedding",))
                embed_s += time.perf_counter() - started
                ingested += len(batch)
                if ingested % 50_000 == 0:
                    print(f"load: {ingested:,} events, {time.perf_counter() - run_started:.0f} s", file=sys.stderr)
            segment_s = time.perf_counter() - segment_started
            during = queries.between(segment_started, time.perf_counter())
            queries.hold()
            now = queries.now
            # At rest, as the app is half a minute after the last vector (store/ann_build.py IDLE_FOLD_SECONDS): the
            # approximate index file holds every vector, none is left to scan exactly.
            started = time.perf_counter()
            folded = ann_build.maintain(memory.db, fold_at=1)
            fold_s = time.perf_counter() - started
            sizes = wal_checkpoint(memory)
            reader = memory.db.reader()
            l1_rows = reader.execute("SELECT count(*) FROM fact_events").fetchone()[0]
            chunks = reader.execute("SELECT count(*) FROM event_chunks").fetchone()[0]
            pending = memory.pending_by_queue()
            rest = at_rest(memory, now, args.rest_repeats)
            tiering = catch_up(memory, now, args.rest_repeats) if args.tiering else None
            l2_here = l2_on(memory, args.l2_per_checkpoint) if args.l2_per_checkpoint else None
            held = memory_mb()
            load = round(os.getloadavg()[0], 2)
            total = sizes["db_bytes"] + sizes["wal_bytes"] + sizes["shm_bytes"]
            events = checkpoint - (checkpoints[number - 1] if number else 0)
            results.append({
                "events": checkpoint, "l1_rows": l1_rows, "vector_chunks": chunks,
                "ann_at_rest": {"done": folded, "seconds": round(fold_s, 1)},
                "segment_events": events, "segment_seconds": round(segment_s, 1),
                "ingest_per_s": round(events / segment_s, 1),
                "ingest_many_per_s": round(events / ingest_s, 1), "embedding_seconds": round(embed_s, 1),
                "query_during_ingest": percentiles(during), "query_at_rest": rest,
                "bytes_per_event": round(total / checkpoint), **sizes, **held, "tiering": tiering,
                "load_average_1m": load, "pending": pending, "l2_at_checkpoint": l2_here, "collectors": {
                    name: {"runs": c["runs"], "stored": c["stored"],
                           "errors": c["rejected"] + c["write_failed"] + c["failures"] + c["quarantined"]}
                    for name, c in collector_counts(supervisor).items()},
            })
            print(f"load: checkpoint {checkpoint:,}: {events / segment_s:,.0f} events/s, at-rest p95 "
                  f"{rest.get('p95_ms')} ms, database {total / 2**20:,.1f} MB at {memory.path}, RSS "
                  f"{held['rss_mb']} MB (anonymous {held['anon_mb']} MB)",
                  file=sys.stderr)
            if number + 1 < len(checkpoints):
                following = checkpoints[number + 1] - checkpoint
                elapsed = time.perf_counter() - run_started
                projected = elapsed + following / (events / segment_s) * 1.2      # +20%: it slows as it grows
                free = shutil.disk_usage(folder).free
                needed = total / checkpoint * following * FREE_DISK_MARGIN
                print(f"load: next segment of {following:,} events projected to end at {projected:,.0f} s "
                      f"and to need {needed / 2**30:.1f} GiB ({free / 2**30:.1f} GiB free)", file=sys.stderr)
                if projected > args.time_budget:
                    stopped_early = f"the next segment would end at ~{projected:.0f} s > --time-budget"
                elif needed > free:
                    stopped_early = f"the next segment would need ~{needed / 2**30:.1f} GiB, {free / 2**30:.1f} free"
                if stopped_early:
                    print(f"load: stopping: {stopped_early}", file=sys.stderr)
                    break
        run_seconds = time.perf_counter() - run_started
        queries.finish()
        ticking.set()
        ticker.join(10)
        sources.stop()
        supervisor.wait_idle(60)
        supervisor.stop()
        collectors = collector_counts(supervisor)
        at_scale = l2_on(memory, args.l2_at_scale) if args.l2_at_scale else None
        texts = [row[0] for row in memory.db.reader().execute(
            "SELECT content FROM fact_events ORDER BY id LIMIT ?", (args.minilm_sample,))]
        final = wal_checkpoint(memory)
        chunks = results[-1]["vector_chunks"]
        db_path = str(memory.path)
    finally:
        queries.finish()
        ticking.set()
        sources.stop()
        supervisor.stop()
        memory.close()
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)
    with tempfile.TemporaryDirectory(prefix="magi-load-l2-") as tmp:
        fresh = l2_fresh(args.l2_sample, Path(tmp), embedder) if args.l2_sample else None
    minilm = minilm_rate(texts)
    print(json.dumps({
        "benchmark": "load", "embedder": "hashing-ngram-v1" if embedder == "hashing" else embedder.name,
        **({} if embedder == "hashing" else {"vector_cache": {"hits": embedder.hits, "misses": embedder.misses}}),
        "l2_projected_during_load": False, "tiering": args.tiering, "span_days": args.span_days,
        "batch": args.batch, "query_pause_s": args.query_pause, "questions": len(QUERIES),
        "load_average_before": load_before, "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "events": results[-1]["events"], "stopped_early": stopped_early, "run_seconds": round(run_seconds, 1),
        "database": db_path if keep else f"{db_path} (removed)",
        "database_bytes_final": final["db_bytes"] + final["wal_bytes"] + final["shm_bytes"],
        "checkpoints": results, "collectors_final": collectors, "source_appends": sources.appended,
        "plugin_errors": plugin_errors, "query_errors": queries.errors[:5], "query_error_count": len(queries.errors),
        "l2": {"at_scale": at_scale, "fresh": fresh,
               "at_scale_to_fresh": round(at_scale["events_per_s"] / fresh["events_per_s"], 2)
               if at_scale and fresh and fresh["events_per_s"] else None,
               "hours_for_all_events_at_fresh_rate": round(results[-1]["l1_rows"] / fresh["events_per_s"] / 3600, 2)
               if fresh and fresh["events_per_s"] else None},
        "minilm": minilm | {"chunks_stored": chunks,
                            "hours_to_embed_all_chunks": round(chunks / minilm["per_s"] / 3600, 1)},
    }, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
