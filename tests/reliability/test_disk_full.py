"""A full disk (architecture §14): a write fails with a clear DiskFull, nothing committed before is lost,
the memory keeps answering read-only, collectors and queues do not crash-loop or lose their place,
and the next write after space returns succeeds without a restart.

Two ways to fill the disk, both real SQLITE_FULL errors: ``PRAGMA max_page_count`` on the writer
(works anywhere, so CI always covers it) and a small tmpfs (needs root; skipped where mounting is
not permitted).
"""
# Raw SQL left is about the file: its page limit (how the disk is filled) and integrity checks.

import contextlib
import os
import subprocess
from pathlib import Path

import pytest
from payloads import chat, sensor, without_blocks

from magi_desktop.collectors import Supervisor
from magi_desktop.core import DiskFull, Memory, MemoryUnavailable
from magi_desktop.core.store import vectors
from magi_desktop.core.store.l1 import event_rows
from magi_desktop.core.store.queue import L2_PROJECTION_JOBS
from magi_desktop.core.store.tables import row_count
from magi_desktop.plugin_api import activity

T0 = 1_700_000_000.0


def burst(n, start=0, words=40):
    """n chat turns and sensor events, each with enough text to need new pages."""
    filler = " ".join(f"word{i}" for i in range(words))
    return [chat(f"Entry {start + i}: I planted tomatoes and basil today, {filler}", session=f"s{(start + i) // 20}",
                 at=T0 + (start + i) * 60) if i % 2 else
            sensor("visit_page", {"url": f"https://example.com/{start + i}", "title": f"Page {start + i} {filler}"},
                   source="chrome", item=f"visit-{start + i}", at=T0 + (start + i) * 60)
            for i in range(n)]


def events(memory):
    return row_count(memory.db.reader(), "fact_events")


@pytest.fixture
def memory(memory):
    """The shared fixture's memory, its events counted without activity blocks beside them."""
    return without_blocks(memory)


@contextlib.contextmanager
def page_limit(memory):
    """No page beyond the ones the database has now: the next write that needs one fails with SQLITE_FULL."""
    with memory.db.writer() as conn:
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages}")
    try:
        yield
    finally:
        with memory.db.writer() as conn:
            conn.execute("PRAGMA max_page_count = 1073741823")


def test_a_full_disk_refuses_writes_clearly_keeps_answering_and_recovers_by_itself(memory):
    memory.ingest_many(burst(60))
    memory.process_pending()
    assert memory.stats()["storage"]["writable"]
    with page_limit(memory):
        with pytest.raises(DiskFull) as caught:
            memory.ingest_many(burst(300, start=60))
        message = str(caught.value)
        assert "is full" in message and "free" in message and str(memory.path) in message
        assert isinstance(caught.value, MemoryUnavailable)              # the CLI and the app catch this family
        # Nothing committed is lost, nothing of the failed batch is half-written.
        assert events(memory) == 60
        conn = memory.db.reader()
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert row_count(conn, "fact_events_fts") == 60
        # Read-only, not down: questions still answer, status says why writes are refused.
        assert memory.query("What did I plant?", mode="exact_fact").findings
        storage = memory.stats()["storage"]
        assert storage["writable"] is False and "is full" in storage["error"] and storage["full_since"]
        with pytest.raises(DiskFull):                                   # and it stays refused, clearly
            memory.ingest_many(burst(300, start=60))
    # Space is back: the very next write succeeds, in the same process.
    results = memory.ingest_many(burst(300, start=60))
    assert not any(r.duplicate for r in results) and events(memory) == 360
    assert memory.stats()["storage"]["writable"] is True
    assert memory.db.reader().execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_background_work_under_a_full_disk_raises_clearly_and_resumes(memory):
    memory.ingest_many(burst(200))
    with page_limit(memory):
        with pytest.raises(DiskFull):
            memory.process_pending()
        with pytest.raises(DiskFull):
            memory.process_pending(queues=("l2",))
    memory.process_pending()
    conn = memory.db.reader()
    # No job lost or stuck: every event embedded and projected once space returned.
    assert row_count(conn, "embedding_jobs") == 0
    assert L2_PROJECTION_JOBS.counts(conn) == {"done": 200}
    assert vectors.chunked_event_count(conn) == 200


def test_collectors_neither_fail_nor_lose_their_place_while_the_disk_is_full(memory):
    class Notes:
        name, source_type, interval_seconds, settings_schema, privacy_note = "notes", "notes", 60, {}, "test"

        def collect(self, since, ctx):
            for i in range(300):
                if since is None or T0 + i > since:
                    yield activity("notes", "write_note", T0 + i, {"title": f"note {i} " + "x" * 300},
                                   item_id=f"note-{i}")

    now = [1000.0]
    supervisor = Supervisor(memory, [Notes()], clock=lambda: now[0])
    with page_limit(memory):
        supervisor.tick()
        assert supervisor.wait_idle()
        status = supervisor.status["notes"]
        assert status.counts["write_failed"] > 0 and status.failures == 0 and not status.quarantined
        assert memory.plugin_cursor("notes") is None                     # the cursor did not move past them
        assert status.next_run_at == pytest.approx(1060.0)              # its normal interval, not a loop
    now[0] += 61
    supervisor.tick()
    assert supervisor.wait_idle()
    supervisor.stop()
    assert len([r for r in event_rows(memory.db.reader()) if r["source"] == "notes"]) == 300
    assert memory.plugin_cursor("notes") == T0 + 299


def test_the_app_says_disk_full_read_only(qtbot, tmp_path):
    pytest.importorskip("pytestqt")
    from magi_desktop.ui.app import DesktopApp
    from magi_desktop.ui.qt import QApplication

    memory = without_blocks(Memory.open(tmp_path / "data", embedder="hashing"))
    memory.ingest_many(burst(20))
    app = DesktopApp(QApplication.instance(), memory)
    qtbot.addWidget(app.window)
    try:
        with page_limit(memory):
            with pytest.raises(DiskFull):
                memory.ingest_many(burst(300, start=20))
            assert app.status_line().startswith("Disk full — read-only")
            app.window.refresh()
            assert app.window.fields["storage"].text().startswith("disk full — read-only")
            assert app.window.fields["events"].text() == "20"           # the window still reads the memory
        memory.ingest(chat("Space is back", at=T0))
        app.window.refresh()
        assert app.window.fields["storage"].text().startswith("writable")
        assert not app.status_line().startswith("Disk full")
    finally:
        app.shutdown()


# ------------------------------------------------------------------------------------------- tmpfs


@pytest.fixture
def small_disk(tmp_path):
    """A 4 MB tmpfs, most of it taken by a filler file that can be deleted to "free space"."""
    if os.name != "posix" or not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_real_full_filesystem(small_disk):
    memory = without_blocks(Memory.open(small_disk / "data", embedder="hashing"))
    try:
        filler = small_disk / "filler"
        free = os.statvfs(small_disk).f_bavail * os.statvfs(small_disk).f_frsize
        filler.write_bytes(b"\0" * max(0, free - 600_000))         # leave ~600 kB for the memory
        acknowledged = 0
        with pytest.raises(DiskFull) as caught:
            for start in range(0, 100_000, 50):
                memory.ingest_many(burst(50, start=start, words=80))
                acknowledged = start + 50
        assert "is full" in str(caught.value) and acknowledged > 0
        assert events(memory) == acknowledged                            # every acknowledged batch is there
        assert memory.db.reader().execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert memory.query("What did I plant?", mode="exact_fact").findings
        assert memory.stats()["storage"]["writable"] is False
        backup = memory.run_due(jobs=("backup",))["backup"]               # no room for a backup either:
        assert backup["made"] is None and "full" in backup["error"]     # reported, not raised
        assert not list((small_disk / "data" / "backups").glob("*"))     # and nothing half-copied left
        filler.unlink()                                                  # the user frees space
        memory.ingest_many(burst(50, start=acknowledged, words=80))      # no restart
        assert events(memory) == acknowledged + 50 and memory.stats()["storage"]["writable"] is True
    finally:
        memory.close()
    reopened = Memory.open(small_disk / "data", embedder="hashing")
    assert events(reopened) == acknowledged + 50
    assert reopened.db.reader().execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    reopened.close()


def test_opening_on_a_full_disk_fails_clearly_not_with_a_traceback(small_disk):
    Memory.open(small_disk / "data", embedder="hashing").close()
    free = os.statvfs(small_disk).f_bavail * os.statvfs(small_disk).f_frsize
    Path(small_disk / "filler").write_bytes(b"\0" * free)
    try:
        memory = Memory.open(small_disk / "data", embedder="hashing")
    except MemoryUnavailable as exc:      # e.g. no room for the write-ahead log's index
        assert "full" in str(exc) or "cannot open" in str(exc)
    else:
        assert memory.query("anything at all", mode="exact_fact") is not None   # opened read-mostly: fine too
        memory.close()
