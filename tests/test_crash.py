"""Acknowledged ingest survives kill -9; replaying the source adds no duplicates."""
# Raw SQL left is about the file a kill -9 left: its integrity and foreign-key checks.

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from payloads import mixed_stream

from magi_desktop.core import Memory
from magi_desktop.core.store import vectors
from magi_desktop.core.store.l1 import event_rows
from magi_desktop.core.store.tables import row_count

pytestmark = [pytest.mark.slow, pytest.mark.skipif(os.name != "posix", reason="needs SIGKILL")]

CHILD = Path(__file__).parent / "crash_child.py"
TOTAL = 4000
BATCH = 25


def ingest_until_killed(db_path: Path, kill_after_acks: int) -> int:
    """Run the child, SIGKILL it after some acknowledgements; return the highest acknowledged index."""
    proc = subprocess.Popen([sys.executable, str(CHILD), str(db_path), str(TOTAL), str(BATCH)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    acked, seen = -1, 0
    try:
        for line in proc.stdout:
            if line.startswith("ack "):
                acked = int(line.split()[1])
                seen += 1
                if seen >= kill_after_acks:
                    os.kill(proc.pid, signal.SIGKILL)
                    break
            elif line.startswith("done"):
                break
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read()
    return acked


def stored_keys(memory: Memory) -> list[tuple]:
    return [(r["source"], r["event_type"], r["idempotency_key"]) for r in event_rows(memory.db.reader())]


@pytest.mark.parametrize("kill_after_acks", [7, 61, 140])
def test_kill_minus_nine_loses_nothing_acknowledged(tmp_path, kill_after_acks):
    db_path = tmp_path / "crash" / "memory.db"
    acked = ingest_until_killed(db_path, kill_after_acks)
    assert acked >= 0

    memory = Memory.open(db_path, embedder="hashing")
    conn = memory.db.reader()
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []

    payloads = list(mixed_stream(TOTAL))
    # Every acknowledged payload is there: re-sending it is a duplicate.
    replay = memory.ingest_many(payloads[: acked + 1])
    assert all(r.duplicate for r in replay)
    before = len(stored_keys(memory))
    assert before >= acked + 1

    # Replaying the whole source completes it without duplicates.
    memory.ingest_many(payloads)
    keys = stored_keys(memory)
    assert len(keys) == len(set(keys)) == TOTAL
    assert all(r.duplicate for r in memory.ingest_many(payloads))
    # FTS and the embedding queue stayed in step with the events.
    assert row_count(conn, "fact_events_fts") == TOTAL
    jobs = row_count(conn, "embedding_jobs")
    chunks = vectors.chunked_event_count(conn)
    assert jobs + chunks == TOTAL
    memory.process_pending()
    assert vectors.chunked_event_count(conn) == TOTAL
    memory.close()
