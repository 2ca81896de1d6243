"""Issue 16: forget is a resumable job — a SIGKILL at any point of it is finished by the next open."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlean
from payloads import chat, sensor
from reliability.fuzzing import files_holding

from magi_desktop.core import Memory

pytestmark = [pytest.mark.slow, pytest.mark.skipif(os.name != "posix", reason="needs SIGKILL")]

CHILD = Path(__file__).with_name("forget_child.py")
T0 = 1_760_000_000.0
VISITS = 400


def _progress(db: Path) -> tuple[str, int] | None:
    """(state, events removed so far) of the forget under way, read as another program would."""
    conn = sqlean.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        row = conn.execute("SELECT state, counts_json FROM forget_receipts ORDER BY receipt_id DESC LIMIT 1"
                           ).fetchone()
    except sqlean.OperationalError:
        return None
    finally:
        conn.close()
    return (row[0], json.loads(row[1]).get("fact_events", 0)) if row else None


@pytest.fixture
def filled(tmp_path) -> Path:
    folder = tmp_path / "d"
    with Memory.open(folder, embedder="hashing") as memory:
        memory.ingest_many([sensor("visit_page", {"url": f"https://gloxinia{i}.example/", "title": f"gloxinia {i}"},
                                   source="chrome", at=T0 + i, item=f"v{i}") for i in range(VISITS)])
        memory.ingest_many([chat(f"I water the ferns on day {i}.", at=T0 + i, item=f"c{i}") for i in range(50)])
        memory.process_pending()
        memory.run_due(now=T0 + 3 * 86400)
        memory.backup_now()
    return folder


@pytest.mark.parametrize("after_chunks", [0, 3, 25])
def test_a_forget_killed_mid_way_is_finished_by_the_next_open(filled, after_chunks):
    db = filled / "memory.db"
    proc = subprocess.Popen([sys.executable, str(CHILD), str(filled), "chrome"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "open", proc.stderr.read()
    deadline = time.monotonic() + 120
    seen = None
    while time.monotonic() < deadline:
        seen = _progress(db)
        if seen and seen[0] == "deleting" and seen[1] >= after_chunks * 10:
            os.kill(proc.pid, signal.SIGKILL)
            break
        if proc.poll() is not None:
            break
        time.sleep(0.002)
    proc.wait(30)
    assert proc.returncode == -signal.SIGKILL, f"not killed mid-way: {seen}, {proc.stderr.read()[-2000:]}"
    assert seen[1] < VISITS                                        # it stopped part-way

    memory = Memory.open(filled, embedder="hashing")                 # the open finishes it
    conn = memory.db.reader()
    receipt = memory.forget_receipts()[0]
    assert receipt["state"] == "done" and receipt["scrub"] == "done"
    assert receipt["removed"]["fact_events"] == VISITS and len(receipt["event_ids"]) == VISITS
    assert conn.execute("SELECT count(*) FROM fact_events WHERE source = 'chrome'").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM forget_targets").fetchone()[0] == 0
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    assert memory.query("when do I water the ferns?", now=T0 + 3 * 86400).findings
    assert files_holding(filled, ["gloxinia"]) == {}                   # database, WAL, backups
    memory.close()


def test_a_forget_running_in_another_process_is_left_to_it(filled):
    """Opening the memory (the app starting, any magi command) while another process is deleting: the job is
    not taken for a crashed one — the open neither waits for it nor does its work."""
    db = filled / "memory.db"
    proc = subprocess.Popen([sys.executable, str(CHILD), str(filled), "chrome", "slow"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "open", proc.stderr.read()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not ((_progress(db) or ("", 0))[1] >= 20):
            time.sleep(0.01)
        with Memory.open(filled, embedder="hashing") as memory:
            assert memory.forget_pending() and memory.resume_forget()["resumed"] == []
            state, removed = _progress(db)
            assert state == "deleting" and removed < VISITS             # still the other process's work
        assert proc.stdout.readline().strip() == "done"
    finally:
        proc.wait(120)
    assert _progress(db) == ("done", VISITS)
