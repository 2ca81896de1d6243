"""The chunk vectors' approximate index against vec0's exact scan (issue 20, item 1). Prints one JSON line.

On real MiniLM vectors — LoCoMo dialogue turns and benchmarks/workload.py texts, embedded once by the
installed model and cached outside git (``~/.cache/magi-bench/minilm-workload.npy``, extended when more are
asked for) — for each size it builds a memory's chunk tables (the store's own schema: events with a scope mix,
their chunk rows, the vec0 table, then the index as the embedding worker builds it) and asks held-out questions
through the paths' filters: scope IN (conversation_only, fact_authoritative) and recorded by ``now`` (the end of
the history for live use, a random point of it for replays). A size larger than the real vectors is filled with
noise-perturbed copies of them (each a real vector plus Gaussian noise, cosine ~0.85 to its source), and the
JSON says how many were real.

Reported per size and per index setting (``--index-params``, connectivity:expansion_add, each index built from
the same vec0 table in turn): recall@10 of ``store.ann.nearest_chunks`` against the exact filtered vec0 KNN, the
latency of both (k=100, as the vector path asks, measured alternately query by query), the index's build time,
size (its partitions' files summed: one per scope code) and the process's RSS; with ``--by-scope``, the same
recall and latency for the fact-only modes' filter too (scope fact_authoritative: that scope's partition alone);
with the first setting also the exact scan with the old text scope column and without ``mmap_size``; and, at the
``--libraries`` size, usearch (f32/f16/i8) against hnswlib on the same vectors without filters.

    .venv/bin/python benchmarks/ann_recall.py --sizes 10000,100000 --queries 100 --by-scope --index-params 16:128,16:64
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from workload import payloads

from magi_desktop.core.store import Database, ann, ann_build, vectors
from magi_desktop.core.store.connection import connect

CACHE = Path.home() / ".cache" / "magi-bench" / "minilm-workload.npy"
LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "bench" / "locomo10.json"
SCOPES = ("conversation_only", "fact_authoritative")
FACT_SCOPES = ("fact_authoritative",)          # retrieval/modes.py FACT_SCOPES
SCOPE_MIX = (("fact_authoritative", 0.35), ("conversation_only", 0.25), ("audit_only", 0.40))
START = 1_735_689_600.0
SPAN = 365 * 86400.0
K = 100
NOISE_COSINE = 0.85
TIE_TOLERANCE = 2e-3     # the index's f16 distances; a hit this close to the exact 10th counts as one of the 10


def texts(n: int) -> list[str]:
    """The first ``n`` texts, always in the same order (the cache holds a prefix of them)."""
    out: list[str] = []
    if LOCOMO.exists():
        for conv in json.loads(LOCOMO.read_text("utf-8")):
            for key, turns in conv["conversation"].items():
                if key.startswith("session_") and isinstance(turns, list):
                    out += [f"{t['speaker']}: {t['text']}" for t in turns]
    for p in payloads(max(n, 1)):
        if len(out) >= n:
            break
        out.append(p["chat"]["text"] if "chat" in p else " ".join(str(v) for v in p["provenance"].values()))
    return out[:n]


def real_vectors(n: int, embed_more: bool) -> np.ndarray:
    cached = np.load(CACHE) if CACHE.exists() else np.zeros((0, 384), dtype=np.float32)
    if len(cached) >= n or not embed_more:
        return cached[:n]
    from magi_desktop.core.embed import MiniLMEmbedder

    embedder = MiniLMEmbedder(batch_size=64)
    wanted = texts(n)
    parts = [cached]
    for start in range(len(cached), n, 512):
        parts.append(embedder.embed(wanted[start:start + 512]).astype(np.float32))
        CACHE.parent.mkdir(parents=True, exist_ok=True)
        np.save(CACHE, np.vstack(parts))          # a run cut short keeps what it embedded
    return np.vstack(parts)


def synthesise(real: np.ndarray, n: int, seed: int) -> np.ndarray:
    if n <= len(real):
        return real[:n].copy()
    rng = np.random.default_rng(seed)
    sigma = np.sqrt((1 / NOISE_COSINE ** 2 - 1) / real.shape[1])
    extra = real[rng.integers(0, len(real), n - len(real))] + rng.normal(0, sigma, (n - len(real), real.shape[1]))
    extra /= np.linalg.norm(extra, axis=1, keepdims=True)
    return np.vstack([real, extra.astype(np.float32)])


def percentiles(seconds: list[float]) -> dict[str, float]:
    ordered = sorted(seconds)
    return {"p50_ms": round(statistics.median(ordered) * 1000, 2),
            "p95_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))] * 1000, 2)}


def fill(db: Database, data: np.ndarray, seed: int) -> None:
    """Events (one chunk each) with a scope mix and times over a year, written as the store writes them."""
    rng = np.random.default_rng(seed)
    names = [s for s, _ in SCOPE_MIX]
    scopes = rng.choice(len(names), len(data), p=[p for _, p in SCOPE_MIX])
    times = START + np.sort(rng.random(len(data))) * SPAN
    with db.writer() as conn:
        vectors.ensure_vector_index(conn, "all-MiniLM-L6-v2", data.shape[1])
    for start in range(0, len(data), 5_000):
        rows = range(start, min(start + 5_000, len(data)))
        with db.transaction() as w:
            w.executemany(
                "INSERT INTO fact_events (id, event_id, timestamp, recorded_at, event_type, source, idempotency_key, "
                "user_id, content, memory_domain, ingest_target, cognition_eligible, retention_class, author_type, "
                "content_type, evidence_class, l1_retrieval_scope, ingested_at) VALUES "
                "(?, ?, ?, ?, 'CHAT_MESSAGE', 'bench', ?, 'u', 'x', 'personal', 'l1_only', 0, 'durable', 'user', "
                "'statement', 'user_self_report', ?, ?)",
                [(i + 1, f"e{i}", times[i], times[i], f"k{i}", names[scopes[i]], times[i]) for i in rows])
            w.executemany("INSERT INTO event_chunks (chunk_id, event_rowid, chunk_index, char_start, char_end, model) "
                          "VALUES (?, ?, 0, 0, 1, 'all-MiniLM-L6-v2')", [(i + 1, i + 1) for i in rows])
            w.executemany(f"INSERT INTO {vectors.VEC_TABLE} (rowid, embedding, scope_code, occurred_at, event_rowid) "
                          "VALUES (?, ?, ?, ?, ?)",
                          [(i + 1, data[i].tobytes(), vectors.SCOPE_CODES[names[scopes[i]]], times[i], i + 1)
                           for i in rows])
            w.execute("DELETE FROM embedding_jobs")


def old_layout_copy(db: Database, dimension: int) -> None:
    """The same vectors in a table with the scope as text, as before issue 20."""
    with db.transaction() as w:
        w.execute(f"CREATE VIRTUAL TABLE chunk_vectors_text USING vec0(embedding float[{dimension}] "
                  "distance_metric=cosine, l1_scope text, occurred_at float, +event_rowid integer)")
        codes = " ".join(f"WHEN {c} THEN '{s}'" for s, c in vectors.SCOPE_CODES.items())
        w.execute(f"INSERT INTO chunk_vectors_text (rowid, embedding, l1_scope, occurred_at, event_rowid) "
                  f"SELECT rowid, embedding, CASE scope_code {codes} END, occurred_at, event_rowid "
                  f"FROM {vectors.VEC_TABLE}")


def exact(conn, vector: bytes, k: int, now: float, table: str = vectors.VEC_TABLE,
          scopes: tuple[str, ...] = SCOPES) -> list[tuple[int, float]]:
    if table == vectors.VEC_TABLE:
        scope = f"scope_code IN ({', '.join(map(str, vectors.scope_codes(scopes)))})"
    else:
        scope = f"l1_scope IN ({', '.join(repr(s) for s in scopes)})"
    return conn.execute(f"SELECT event_rowid, distance FROM {table} WHERE embedding MATCH ? AND k = ? AND {scope} "
                        "AND occurred_at <= ? ORDER BY distance", (vector, k, now)).fetchall()


def scored(truth_rows, got_rows, distance: dict[int, float]) -> tuple[float, float]:
    """recall@10 of ``got_rows`` (None: the exact scan answered) against ``truth_rows`` (the exact answer), by
    event and counting ties; ``distance``: the exact 1000 nearest under the same filter."""
    truth = [e for e, _ in truth_rows[:10]]
    got = truth if got_rows is None else [e for e, _ in got_rows[:10]]
    # Near-duplicate texts give many chunks the same distance: any of them is a right answer.
    tenth = truth_rows[:10][-1][1] + TIE_TOLERANCE
    return (len(set(got) & set(truth)) / len(truth),
            sum(1 for e in got if distance.get(e, 2.0) <= tenth) / len(truth))


def summary(recalls: list[tuple[float, float]], fallbacks: int) -> dict[str, Any]:
    by_event, tied = [r for r, _ in recalls], [t for _, t in recalls]
    return {"recall_at_10": round(statistics.mean(by_event), 4), "recall_at_10_min": round(min(by_event), 2),
            "recall_at_10_ties": round(statistics.mean(tied), 4), "recall_at_10_ties_min": round(min(tied), 2),
            "exact_fallbacks": fallbacks}


def rss_mb() -> float:
    return round(psutil.Process().memory_info().rss / 2**20, 1)


def one_size(n: int, real: np.ndarray, queries: np.ndarray, folder: Path, old_layout: bool,
             settings: list[tuple[int, int]], by_scope: bool) -> dict:
    data = synthesise(real, n, seed=n)
    path = folder / f"m{n}.db"
    db = Database(path, check=False)
    started = time.perf_counter()
    fill(db, data, seed=n)
    filled = time.perf_counter() - started
    if old_layout:
        old_layout_copy(db, data.shape[1])
    report: dict[str, Any] = {"chunks": n, "real_vectors": min(n, len(real)), "synthesised": max(0, n - len(real)),
                              "fill_s": round(filled, 1), "db_file_mb": round(path.stat().st_size / 2**20, 1),
                              "queries": len(queries), "indexes": []}
    ranked: dict[tuple[int, str], dict[int, float]] = {}    # (question, filter) -> the exact 1000 nearest (ties)
    defaults = ann_build.CONNECTIVITY, ann_build.EXPANSION_ADD
    try:
        for connectivity, expansion_add in settings:
            ann_build.CONNECTIVITY, ann_build.EXPANSION_ADD = connectivity, expansion_add
            first = not report["indexes"]
            report["indexes"].append(one_index(db, path, queries, old_layout and first, first, by_scope, ranked))
    finally:
        ann_build.CONNECTIVITY, ann_build.EXPANSION_ADD = defaults
    db.close()
    for file in folder.glob(f"m{n}.db*"):
        file.unlink()
    return report


def one_index(db: Database, path: Path, queries: np.ndarray, old_layout: bool, plain_too: bool, by_scope: bool,
              ranked: dict[tuple[int, str], dict[int, float]]) -> dict:
    """Build the index with the module's current settings (the first from scratch, the next again from vec0, as
    after a forget) and ask every question of it and of the exact scan, alternately."""
    rss_before = rss_mb()
    started = time.perf_counter()
    built = ann_build.maintain(db, min_vectors=0) if vectors.ann_recorded(db.reader())[0] is None else (
        ann_build.maintain(db, erase=True))
    build_s = time.perf_counter() - started
    held = vectors.ann_recorded(db.reader())[1]
    reader = db.reader()
    plain = connect(path)           # no mmap_size: the reader as before issue 20
    rng = np.random.default_rng(1)
    nows = [START + SPAN if i % 3 else START + SPAN * rng.uniform(0.2, 1.0) for i in range(len(queries))]
    timings: dict[str, list[float]] = {"exact": [], "exact_no_mmap": [], "ann": [], "exact_text_scope": [],
                                       "exact_fact": [], "ann_fact": []}
    recalls: dict[str, list[tuple[float, float]]] = {"all": [], "fact": []}
    fallbacks = {"all": 0, "fact": 0}
    for i, (q, now) in enumerate(zip(queries, nows, strict=True)):
        vector = q.astype(np.float32).tobytes()
        runs: list[tuple[str, Any, tuple]] = [
            ("exact", exact, (reader, vector, K, now)), ("ann", ann.nearest_chunks, (reader, vector, K, SCOPES, now))]
        if plain_too:
            runs.append(("exact_no_mmap", exact, (plain, vector, K, now)))
        if old_layout:
            runs.append(("exact_text_scope", exact, (reader, vector, K, now, "chunk_vectors_text")))
        if by_scope:
            runs += [("exact_fact", exact, (reader, vector, K, now, vectors.VEC_TABLE, FACT_SCOPES)),
                     ("ann_fact", ann.nearest_chunks, (reader, vector, K, FACT_SCOPES, now))]
        results = {}
        for label, run, run_args in runs:   # alternating in one loop: the machine's load hits all alike
            t = time.perf_counter()
            results[label] = run(*run_args)
            timings[label].append(time.perf_counter() - t)
        for which, suffix, scopes in (("all", "", SCOPES), ("fact", "_fact", FACT_SCOPES)):
            if f"ann{suffix}" in results:
                fallbacks[which] += int(results[f"ann{suffix}"] is None)
                if results[f"exact{suffix}"]:
                    # Asked once per question and filter: every setting is scored against the same exact answer.
                    distance = ranked.get((i, which))
                    if distance is None:
                        distance = ranked[i, which] = dict(exact(reader, vector, 1000, now, scopes=scopes))
                    recalls[which].append(scored(results[f"exact{suffix}"], results[f"ann{suffix}"], distance))
    plain.close()
    # The recorded ann_file is the generation's token, not a file: the files are its partitions'.
    files = ann.partitions(reader).values()
    report = {
        "connectivity": ann_build.CONNECTIVITY, "expansion_add": ann_build.EXPANSION_ADD, "index": built,
        "index_vectors": held,
        "build_s": round(build_s, 1), "index_partitions": len(files),
        "index_file_mb": round(sum(ann.index_path(path, file).stat().st_size for file, _ in files) / 2**20, 1),
        **summary(recalls["all"], fallbacks["all"]),
        "rss_mb_before_index": rss_before, "rss_mb_after_queries": rss_mb(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    if by_scope:
        report["fact_only"] = summary(recalls["fact"], fallbacks["fact"])
    for label, seconds in timings.items():
        if seconds:
            report[label] = percentiles(seconds)
    return report


def libraries(data: np.ndarray, queries: np.ndarray, folder: Path) -> dict:
    """usearch (three storage types) and hnswlib on the same vectors, no filters: recall@10 against brute force."""
    import hnswlib
    from usearch.index import Index

    norm = data / np.linalg.norm(data, axis=1, keepdims=True)
    qn = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    similarity = qn @ norm.T
    truth = np.argsort(-similarity, axis=1)[:, :10]
    tenth = np.take_along_axis(similarity, truth[:, 9:10], axis=1)[:, 0] - 1e-6
    keys = np.arange(len(data), dtype=np.uint64)
    out = {"vectors": len(data)}

    def recall(found: np.ndarray) -> dict[str, float]:
        by_id = np.mean([len(set(f) & set(t)) / 10 for f, t in zip(found, truth, strict=True)])
        ties = np.mean([np.sum(similarity[i, f] >= tenth[i]) / 10 for i, f in enumerate(found)])
        return {"recall_at_10": round(float(by_id), 4), "recall_at_10_ties": round(float(ties), 4)}

    for dtype in ("f32", "f16", "i8"):
        rss = rss_mb()
        index = Index(ndim=data.shape[1], metric="cos", dtype=dtype, connectivity=ann_build.CONNECTIVITY,
                      expansion_add=ann_build.EXPANSION_ADD, expansion_search=ann.EXPANSION_SEARCH)
        t = time.perf_counter()
        index.add(keys, data, threads=0)
        build = time.perf_counter() - t
        file = folder / f"u-{dtype}.usearch"
        index.save(str(file))
        del index
        view = Index.restore(str(file), view=True)
        view.expansion_search = ann.EXPANSION_SEARCH
        seconds, found = [], []
        for q in queries:
            t = time.perf_counter()
            found.append(view.search(q, 10, threads=1).keys.astype(np.int64))
            seconds.append(time.perf_counter() - t)
        out[f"usearch_{dtype}"] = {"build_s": round(build, 1), "file_mb": round(file.stat().st_size / 2**20, 1),
                                   **recall(np.array(found)), **percentiles(seconds),
                                   "rss_mb_delta_viewed": round(rss_mb() - rss, 1)}
        del view
        file.unlink()
    rss = rss_mb()
    index = hnswlib.Index(space="cosine", dim=data.shape[1])
    index.init_index(max_elements=len(data), ef_construction=ann_build.EXPANSION_ADD, M=ann_build.CONNECTIVITY)
    t = time.perf_counter()
    index.add_items(data, np.arange(len(data)), num_threads=os.cpu_count() or 1)
    build = time.perf_counter() - t
    file = folder / "h.bin"
    index.save_index(str(file))
    index.set_ef(ann.EXPANSION_SEARCH)
    index.set_num_threads(1)
    seconds, found = [], []
    for q in queries:
        t = time.perf_counter()
        labels, _ = index.knn_query(q, k=10)
        seconds.append(time.perf_counter() - t)
        found.append(labels[0])
    out["hnswlib_f32"] = {"build_s": round(build, 1), "file_mb": round(file.stat().st_size / 2**20, 1),
                          **recall(np.array(found)), **percentiles(seconds),
                          "rss_mb_delta_loaded": round(rss_mb() - rss, 1)}
    file.unlink()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--real", type=int, default=20_000, help="real MiniLM vectors wanted (embedded if missing)")
    parser.add_argument("--no-embed", action="store_true", help="use only the vectors already cached")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--libraries", type=int, default=100_000, help="size of the library comparison (0: none)")
    parser.add_argument("--old-layout-up-to", type=int, default=100_000)
    parser.add_argument("--index-params", default=f"{ann_build.CONNECTIVITY}:{ann_build.EXPANSION_ADD}",
                        help="connectivity:expansion_add of each index built, comma-separated")
    parser.add_argument("--by-scope", action="store_true", help="also the fact-only filter (one partition)")
    args = parser.parse_args()
    pool = real_vectors(args.real + args.queries, embed_more=not args.no_embed)
    if len(pool) <= args.queries:
        raise SystemExit(f"only {len(pool)} MiniLM vectors cached in {CACHE}: embed some first")
    # Held-out questions: every 50th real vector, the others are the memory's chunks.
    held = np.zeros(len(pool), dtype=bool)
    held[::max(1, len(pool) // args.queries)] = True
    queries, real = pool[held][:args.queries], pool[~held]
    sizes = [int(s) for s in args.sizes.split(",") if s]
    settings = [(int(m), int(ef)) for m, ef in (p.split(":") for p in args.index_params.split(",") if p)]
    with tempfile.TemporaryDirectory(prefix="magi-ann-") as tmp:
        folder = Path(tmp)
        out: dict = {"benchmark": "ann_recall", "k": K, "filters": {"scopes": SCOPES, "now": "end, or a random "
                     "point of the year for 1 query in 3"}, "scope_mix": dict(SCOPE_MIX),
                     "load_average": [round(x, 2) for x in os.getloadavg()], "cpus": os.cpu_count(),
                     "index_params": {"dtype": ann.DTYPE, "expansion_search": ann.EXPANSION_SEARCH,
                                      "overfetch": ann.OVERFETCH, "min_fetch": ann.MIN_FETCH,
                                      "build_threads": ann_build.BUILD_THREADS},
                     "sizes": [one_size(n, real, queries, folder, n <= args.old_layout_up_to, settings,
                                        args.by_scope) for n in sizes]}
        if args.libraries:
            out["libraries"] = libraries(synthesise(real, args.libraries, seed=7), queries, folder)
        out["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
