"""What a fold of the approximate chunk index (store/ann.py) costs the embedding process in memory. Prints one JSON
line.

A memory of ``--size`` chunks (real MiniLM vectors from benchmarks/ann_recall.py's cache, noise-perturbed copies past
them) with its index built, then ``--pending`` more chunks waiting in ``chunk_vectors_pending``. Each variant runs in
a fresh process, as the embedding worker would: it opens the memory, asks ``--queries`` questions through the index
(its view's pages become resident), then folds (``ann_build.maintain(fold_at=1)``) while a thread samples the RSS every
10 ms. Reported per variant: the memory figures of ``process_memory.memory_mb`` (RSS, anonymous, file-backed, PSS,
USS) after the questions, the peak RSS during the fold, the figures after it, and after the view of the old file is
dropped and one question has opened the new one.
Variants: ``as_the_worker_runs`` (``maintain`` called with the view of the questions held) and ``released_first``
(the process's view dropped by the caller before ``maintain``).

    PYTHONPATH=.:plugins .venv/bin/python benchmarks/ann_fold_rss.py --size 100000 --pending 2000
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ann_recall import SCOPES, SPAN, START, fill, real_vectors, synthesise
from process_memory import memory_mb

from magi_desktop.core.store import Database, ann, ann_build, vectors


def prepare(path: Path, data: np.ndarray, size: int) -> float:
    """The memory with ``size`` chunks indexed and the rest pending, as embedding leaves it between two folds;
    returns the index file's size in MB."""
    db = Database(path, check=False)
    fill(db, data[:size], seed=size)
    assert ann_build.maintain(db, min_vectors=0) == "built"
    first = size + 1
    rows = [(first + i, first + i, START + SPAN + i, v.tobytes()) for i, v in enumerate(data[size:])]
    with db.transaction() as w:         # the next chunks, written as embedding writes them while an index exists
        w.executemany(
            "INSERT INTO fact_events (id, event_id, timestamp, recorded_at, event_type, source, idempotency_key, "
            "user_id, content, memory_domain, ingest_target, cognition_eligible, retention_class, author_type, "
            "content_type, evidence_class, l1_retrieval_scope, ingested_at) VALUES "
            "(?, 'p' || ?, ?, ?, 'CHAT_MESSAGE', 'bench', 'p' || ?, 'u', 'x', 'personal', 'l1_only', 0, 'durable', "
            "'user', 'statement', 'user_self_report', 'fact_authoritative', ?)",
            [(r, r, t, t, r, t) for r, _, t, _ in rows])
        w.executemany("INSERT INTO event_chunks (chunk_id, event_rowid, chunk_index, char_start, char_end, model) "
                      "VALUES (?, ?, 0, 0, 1, 'all-MiniLM-L6-v2')", [(c, e) for c, e, _, _ in rows])
        w.executemany(f"INSERT INTO {vectors.VEC_TABLE} (rowid, embedding, scope_code, occurred_at, event_rowid) "
                      "VALUES (?, ?, 1, ?, ?)", [(c, v, t, e) for c, e, t, v in rows])
        w.executemany(f"INSERT INTO {vectors.PENDING_TABLE} (chunk_id, embedding) VALUES (?, ?)",
                      [(c, v) for c, _, _, v in rows])
    size_mb = ann.index_path(path, vectors.ann_recorded(db.reader())[0]).stat().st_size / 2**20
    db.close()
    return round(size_mb, 1)


def variant(path: str, release_first: bool, questions: list[bytes], out) -> None:
    db = Database(Path(path), check=False)
    reader = db.reader()
    end = START + 2 * SPAN
    for vector in questions:
        assert ann.nearest_chunks(reader, vector, 100, SCOPES, end) is not None
    report: dict = {"after_questions": memory_mb()}
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        process = psutil.Process()
        while not done.is_set():
            peak[0] = max(peak[0], process.memory_info().rss)
            time.sleep(0.01)

    sampler = threading.Thread(target=sample)
    sampler.start()
    started = time.perf_counter()
    if release_first:
        ann.release(db.path)
    folded = ann_build.maintain(db, fold_at=1)
    report["fold_s"] = round(time.perf_counter() - started, 1)
    done.set()
    sampler.join()
    report["folded"] = folded
    report["peak_during_fold_rss_mb"] = round(peak[0] / 2**20, 1)
    report["after_fold"] = memory_mb()
    ann.release(db.path)
    assert ann.nearest_chunks(reader, questions[0], 100, SCOPES, end) is not None
    report["after_one_question_on_the_new_file"] = memory_mb()
    report["index_vectors"] = vectors.ann_recorded(reader)[1]
    db.close()
    out.put(report)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--pending", type=int, default=2_000)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--real", type=int, default=16_000)
    args = parser.parse_args()
    pool = real_vectors(args.real, embed_more=False)
    if len(pool) < 1_000:
        raise SystemExit("no MiniLM vectors cached: run benchmarks/ann_recall.py once first")
    data = synthesise(pool, args.size + args.pending + args.queries, seed=3)
    questions = [q.tobytes() for q in data[-args.queries:]]
    data = data[:-args.queries]
    context = multiprocessing.get_context("spawn")
    out: dict = {"benchmark": "ann_fold_rss", "size": args.size, "pending": args.pending, "queries": args.queries,
                 "load_average": [round(x, 2) for x in os.getloadavg()]}
    with tempfile.TemporaryDirectory(prefix="magi-fold-") as tmp:
        for name, release_first in (("as_the_worker_runs", False), ("released_first", True)):
            path = Path(tmp) / f"{name}.db"
            out[f"index_file_mb_{name}"] = prepare(path, data, args.size)
            queue = context.Queue()
            child = context.Process(target=variant, args=(str(path), release_first, questions, queue))
            child.start()
            out[name] = queue.get(timeout=3_600)
            child.join(60)
    out["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
