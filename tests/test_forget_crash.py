"""Issue 16: forget is a resumable job — a SIGKILL at any point of it is finished by the next open."""
# Raw SQL left is about the file: a second program's read-only view of it mid-forget, and its checks after.

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
from magi_desktop.core.store.episodes import episodes
from magi_desktop.core.store.l1 import event_rows
from magi_desktop.core.store.tables import row_count

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
    assert [r for r in event_rows(conn) if r["source"] == "chrome"] == []
    assert row_count(conn, "forget_targets") == 0
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


def test_opening_works_on_an_interrupted_forget_for_a_bounded_time_then_leaves_it_to_the_background(
        tmp_path, monkeypatch):
    """Review of issue 16: a killed forget of 20,000 events was finished inside Memory.open, which then took
    minutes (`magi status` 2 min 43 s; `magi mcp` would not answer `initialize`). Opening now deletes for at most
    OPEN_FORGET_SECONDS; the rest goes on in the background work, run_due or the next open."""
    from magi_desktop.core import forget_job
    from magi_desktop.core import memory as memory_module

    folder = tmp_path / "d"
    with Memory.open(folder, embedder="hashing") as memory:
        memory.ingest_many([sensor("visit_page", {"url": f"https://zqsite{i}.example/", "title": f"zqpage {i}"},
                                   source="chrome", at=T0 + i, item=f"v{i}") for i in range(300)])
        with memory.db.transaction() as conn:           # requested, and its runner gone before the first chunk
            forget_job.request(conn, forget_job.criteria_of(None, None, None, "chrome", None, None))
    monkeypatch.setattr(memory_module, "OPEN_FORGET_SECONDS", 0.0)
    with Memory.open(folder, embedder="hashing") as memory:
        assert memory.forget_pending()
        assert row_count(memory.db.reader(), "fact_events") == 300
        report = memory.resume_forget()                 # what the background work does
        assert report["resumed"] and report["pending"] is None
        assert row_count(memory.db.reader(), "fact_events") == 0
        assert not memory.forget_pending()
    assert files_holding(folder, ["zqpage"]) == {}


def test_forgetting_most_of_a_long_episode_keeps_its_count_and_title_true(memory):
    """The episode is brought up to date once per chunk (the trigger only queues it): its count is what is
    left, its title no forgotten text."""
    memory.ingest_many([chat(f"zqforgotten line {i}" if i < 150 else f"kept line {i}", at=T0 + i * 60,
                             session="one", item=f"c{i}") for i in range(200)])
    memory.process_pending()
    conn = memory.db.reader()
    episode = episodes(conn)
    assert len(episode) == 1 and episode[0].event_count == 200 and "zqforgotten" in episode[0].title
    memory.forget(source_item_ids=[f"c{i}" for i in range(150)])
    assert [(e.event_count, e.title) for e in episodes(conn)] == [(50, "kept line 150")]
    assert row_count(conn, "l2_episode_upkeep") == 0
