"""The background worker embeds while other threads ingest."""
# Raw SQL left: the file's integrity check after concurrent writers.

import threading
import time

from payloads import chat

from magi_desktop.core.store import vectors
from magi_desktop.core.store.assertions import named_assertions
from magi_desktop.core.store.tables import row_count
from magi_desktop.workers import BackgroundWorker


def test_worker_keeps_up_with_concurrent_ingest(memory):
    worker = BackgroundWorker(memory, batch=32, idle_poll_seconds=0.2)
    worker.start()
    errors = []

    def produce(n):
        try:
            for i in range(250):
                memory.ingest(chat(f"producer {n} line {i}", session=f"p{n}", at=1.7e9 + i))
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    producers = [threading.Thread(target=produce, args=(n,)) for n in range(3)]
    for t in producers:
        t.start()
    for t in producers:
        t.join()
    deadline = time.monotonic() + 30
    while memory.pending_work() and time.monotonic() < deadline:
        time.sleep(0.05)
    worker.stop()
    assert errors == [] and worker.last_error is None
    conn = memory.db.reader()
    assert row_count(conn, "fact_events") == 750
    assert vectors.chunked_event_count(conn) == 750
    assert row_count(conn, "embedding_jobs") == 0
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_stopping_the_worker_then_closing_is_clean(tmp_path):
    from magi_desktop.core import Memory

    memory = Memory.open(tmp_path / "w", embedder="hashing")
    worker = BackgroundWorker(memory, idle_poll_seconds=0.1)
    worker.start()
    memory.ingest_many([chat(f"m {i}", at=1.7e9 + i) for i in range(200)])
    worker.stop()
    memory.close()
    assert worker._thread is None
    reopened = Memory.open(tmp_path / "w", embedder="hashing")
    stats = reopened.stats()["embedding"]
    assert stats["chunks"] + stats["pending"] == 200  # whatever was embedded is whole; the rest is still queued
    reopened.close()


def test_the_worker_runs_periodic_maintenance(memory):
    memory.ingest(chat("I'm so stressed today.", at=1.7e9))     # long ago: its TTL has passed
    worker = BackgroundWorker(memory, idle_poll_seconds=0.05, maintenance_seconds=0.1)
    worker.start()
    deadline = time.monotonic() + 10
    conn = memory.db.reader()
    while time.monotonic() < deadline and not [a for a in named_assertions(conn) if a.status == "expired"]:
        time.sleep(0.05)
    worker.stop()
    assert worker.maintenance_runs >= 1 and worker.last_error is None
    assert [a.status for a in named_assertions(conn)] == ["expired"]
