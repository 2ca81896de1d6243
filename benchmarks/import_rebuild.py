"""Import of an export (issue 16): the events go through the write path again and L2 is rebuilt.

Builds a memory of N workload-mix payloads (hashing embedder, rules L2), exports it, and imports the
export into a new memory: the seconds of the import (re-derivation, entity links, facts and reviews
checked) next to ``ingest_many`` of the same payloads in the same run, then the L2 rebuild
(``process_pending``); how many values the import changed or dropped (0 for a genuine export) and
how many events were stored differently from the original (0). Prints one JSON line.

    .venv/bin/python benchmarks/import_rebuild.py --n 10000
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from workload import payloads

from magi_desktop.core import Memory

_EVENT_ROW = ("SELECT event_id, evidence_class, l1_retrieval_scope, author_type, content_type, content, "
              "metadata_json FROM fact_events ORDER BY id")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="magi-import-bench-"))
    batch = list(payloads(args.n))
    with Memory.open(root / "original", embedder="hashing") as original:
        started = time.perf_counter()
        for first in range(0, len(batch), 500):
            original.ingest_many(batch[first:first + 500])
        ingest_s = time.perf_counter() - started
        original.process_pending()
        started = time.perf_counter()
        original.export_jsonl(root / "memory.jsonl")
        export_s = time.perf_counter() - started
        rows = original.db.reader().execute(_EVENT_ROW).fetchall()
    with Memory.open(root / "copy", embedder="hashing") as copy:
        started = time.perf_counter()
        report = copy.import_jsonl(root / "memory.jsonl")
        import_s = time.perf_counter() - started
        started = time.perf_counter()
        copy.process_pending()
        rebuild_s = time.perf_counter() - started
        differ = sum(a != b for a, b in zip(rows, copy.db.reader().execute(_EVENT_ROW).fetchall(), strict=True))
        edges = copy.stats()["l2"]["edges"]
    print(json.dumps({
        "events": report.events, "ingest_s": round(ingest_s, 2), "export_s": round(export_s, 2),
        "import_s": round(import_s, 2), "import_over_ingest": round(import_s / ingest_s, 2),
        "l2_rebuild_s": round(rebuild_s, 2), "edges_rebuilt": edges, "events_stored_differently": differ,
        "values_changed": sum(t.count for t in report.changed.values()),
        "rows_dropped": sum(t.count for t in report.dropped.values()),
        "export_mb": round((root / "memory.jsonl").stat().st_size / 1e6, 1),
    }))


if __name__ == "__main__":
    main()
