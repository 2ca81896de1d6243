"""Query latency per mode (issue: Retrieval). Prints one JSON line.

For a memory of N mixed events (benchmarks/workload.py), times ``Memory.query``
in every mode over a fixed question set, next to the raw calls it is built on:
one FTS5 MATCH (same terms, ORDER BY bm25, LIMIT 50) plus one vec0 KNN (k=100)
for the same question. Target: ours ≤ 3× raw.

The memory uses the hashing embedder so 100k events embed in seconds; the
MiniLM question embedding, which a real query adds once, is timed separately.

    .venv/bin/python benchmarks/query_latency.py --sizes 10000,100000
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from workload import payloads

from magi_desktop.core import Memory
from magi_desktop.core.retrieval.modes import MODES
from magi_desktop.core.retrieval.terms import content_terms
from magi_desktop.core.store.vectors import VEC_TABLE
from magi_desktop.core.text import fts_or_query

QUESTIONS = [
    "What did I buy for the kitchen?", "Where do I live now?", "What music did I listen to last week?",
    "Which pages about Python did I read?", "What did you recommend for dinner?", "What happened recently?",
    "Summarise my week", "What was I busy with last month?", "How did we fix the failing build last time?",
    "我最近在学什么？", "What did I commit to the magi repo?", "Which app did I use the most?",
    "When is the team sync?", "What did I say about running?", "What is my sister's birthday?",
]


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"p50_ms": round(statistics.median(ordered) * 1000, 2),
            "p95_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))] * 1000, 2)}


def raw_calls(memory: Memory, question: str, vector: np.ndarray, now: float) -> float:
    conn = memory.db.reader()
    started = time.perf_counter()
    terms = content_terms(question)
    if terms:
        conn.execute("SELECT e.id FROM fact_events_fts JOIN fact_events e ON e.id = fact_events_fts.rowid "
                     "WHERE fact_events_fts MATCH ? AND e.timestamp <= ? ORDER BY bm25(fact_events_fts) LIMIT 50",
                     (fts_or_query(terms), now)).fetchall()
    conn.execute(f"SELECT event_rowid, distance FROM {VEC_TABLE} WHERE embedding MATCH ? AND k = 100 "
                 "AND occurred_at <= ? ORDER BY distance", (vector.tobytes(), now)).fetchall()
    return time.perf_counter() - started


def measure(size: int, repeats: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        memory = Memory.open(Path(tmp), embedder="hashing")
        items = list(payloads(size))
        for first in range(0, size, 2000):
            memory.ingest_many(items[first:first + 2000])
        memory.process_pending()
        now = max(p["occurred_at"] for p in items) + 60
        vectors = {q: memory.embedder.embed([q])[0] for q in QUESTIONS}
        for q in QUESTIONS:  # warm caches
            memory.query(q, now=now)
        result: dict = {"events": size, "modes": {}}
        raw = [raw_calls(memory, q, vectors[q], now) for _ in range(repeats) for q in QUESTIONS]
        result["raw_fts_knn"] = percentiles(raw)
        for mode in MODES:
            times = []
            for _ in range(repeats):
                for q in QUESTIONS:
                    started = time.perf_counter()
                    memory.query(q, mode=mode, now=now)
                    times.append(time.perf_counter() - started)
            stats = percentiles(times)
            stats["ratio_p50_to_raw"] = round(stats["p50_ms"] / result["raw_fts_knn"]["p50_ms"], 2)
            result["modes"][mode] = stats
        memory.close()
    return result


def minilm_question_embedding() -> dict:
    from magi_desktop.core.embed import MiniLMEmbedder

    embedder = MiniLMEmbedder(idle_seconds=None)
    embedder.embed(["warm up"])
    times = []
    for q in QUESTIONS * 3:
        started = time.perf_counter()
        embedder.embed([q])
        times.append(time.perf_counter() - started)
    return percentiles(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    report = {"benchmark": "query_latency", "questions": len(QUESTIONS), "embedder": "hashing-ngram-v1",
              "sizes": [measure(int(size), args.repeats) for size in args.sizes.split(",")],
              "minilm_question_embedding": minilm_question_embedding()}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
