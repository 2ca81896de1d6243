"""Issue 16, defect 5: `database is locked` never reaches a user.

Another program (a real second process) holds the memory's write lock: opening the memory does not wait
for it (it writes only when it must), and the writers that do wait — `magi ingest`, an MCP `log_turn`,
`Memory.ingest` — say so as progress and proceed when it is free, or end in a clear MemoryBusy, never an
OperationalError or a traceback. (How long a writer waits during a big forget is measured by
benchmarks/lock_wait.py: timing belongs there.)
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from payloads import chat

from magi_desktop.core import Memory, MemoryBusy
from magi_desktop.core.store.l1 import event_rows
from magi_desktop.core.store.tables import row_count

pytestmark = pytest.mark.slow

HOLDER = Path(__file__).with_name("lock_holder.py")
T0 = 1_760_000_000.0
# Longer than the 10-s busy timeout the writers had before: a plain wait on SQLite's busy handler fails.
LONG_HOLD = 11.5


def hold(db_path: Path, mode: str, seconds: float | None = None) -> subprocess.Popen:
    """Another process holding the write lock (for ``seconds``) or a read snapshot (until told)."""
    args = [sys.executable, str(HOLDER), str(db_path), mode] + ([str(seconds)] if seconds is not None else [])
    proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held", proc.stderr.read()
    return proc


@pytest.fixture
def made(tmp_path) -> Path:
    folder = tmp_path / "data"
    with Memory.open(folder, embedder="hashing") as memory:
        memory.ingest(chat("I live in Shanghai.", at=T0, item="e1"))
    return folder


def test_opening_the_memory_takes_no_write_lock_when_nothing_is_pending(made):
    holder = hold(made / "memory.db", "write", 60)
    try:
        # Before: every open wrote (the vector index, the secret, the L2 leases) and failed after the busy
        # timeout with OperationalError — the app died at start. Patience 3 s: a wait would show.
        memory = Memory.open(made, embedder="hashing", lock_patience=3)
        assert memory.query("where do I live?", now=T0 + 5).findings    # and reads go on
        memory.close()
    finally:
        holder.kill()
        holder.wait()


def test_a_write_past_its_patience_is_memory_busy_and_stores_nothing(made):
    memory = Memory.open(made, embedder="hashing", lock_patience=1)
    holder = hold(made / "memory.db", "write", 60)
    try:
        with pytest.raises(MemoryBusy, match="busy: another program has held its write lock"):
            memory.ingest(chat("I moved to Jiaxing.", at=T0 + 1, item="e2"))
    finally:
        holder.kill()
        holder.wait()
    assert row_count(memory.db.reader(), "fact_events") == 1
    memory.ingest(chat("I moved to Jiaxing.", at=T0 + 1, item="e2"))           # free again: it is stored
    assert row_count(memory.db.reader(), "fact_events") == 2
    memory.close()


def test_writers_wait_for_a_long_write_with_progress_and_then_proceed(made, tmp_path):
    """While another process holds the write lock past the old busy timeout: `magi ingest` shows that it
    waits and stores its file, an MCP log_turn is stored (not refused as busy), and Memory.ingest reports
    its wait and stores."""
    from test_mcp import call, connect

    payloads = tmp_path / "in.jsonl"
    payloads.write_text(json.dumps(chat("I bought an air fryer.", at=T0 + 2, item="cli-1")) + "\n", "utf-8")
    waits: list[tuple[float, bool]] = []
    memory = Memory.open(made, embedder="hashing", lock_wait=lambda waited, acquired: waits.append((waited, acquired)))

    async def log_turn():
        with open(tmp_path / "mcp.err", "w") as errlog:
            async with connect(made, errlog) as session:
                ready.set()
                return await call(session, "log_turn", session_id="agent-1", role="user",
                                  text="I bought a rice cooker.", provenance="human_input")

    ready = threading.Event()
    mcp_result: dict = {}
    mcp = threading.Thread(target=lambda: mcp_result.update(r=asyncio.run(log_turn())))
    mcp.start()
    assert ready.wait(60)                  # the server is up (its open did not need the lock either)
    holder = hold(made / "memory.db", "write", LONG_HOLD)
    try:
        cli = subprocess.Popen([sys.executable, "-m", "magi_desktop.cli", "ingest", str(payloads), "--no-embed",
                                "--data-dir", str(made)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)})
        stored = memory.ingest(chat("I moved to Jiaxing.", at=T0 + 1, item="e2"))
        out, err = cli.communicate(timeout=120)
        mcp.join(120)
    finally:
        holder.kill()
        holder.wait()
    assert not stored.duplicate and waits and waits[-1][1] and waits[-1][0] >= 5    # told while it waited
    assert cli.returncode == 0, err
    assert "stored 1" in out and "waiting for another program writing to the memory" in err
    assert "Traceback" not in err and "database is locked" not in err
    result = mcp_result["r"]
    assert not result.is_error, result.content[0].text
    assert "database is locked" not in (tmp_path / "mcp.err").read_text()
    items = {r["source_item_id"] for r in event_rows(memory.db.reader())}
    assert {"e1", "e2", "cli-1"} <= items
    assert len([r for r in event_rows(memory.db.reader())
                if r["source"] == "chat" and "rice cooker" in r["content"].lower()]) == 1
    memory.close()


def test_the_app_start_shows_that_it_waits_for_another_program(qapp, tmp_path, monkeypatch):
    """A first start (the schema must be made) while another program holds the new file's write lock past
    the old busy timeout: a progress dialog says so, then the app opens its memory."""
    from magi_desktop.ui import recovery
    from magi_desktop.ui.qt import QApplication, QProgressDialog, QTimer

    refused: list[str] = []       # before: "database is locked" — a modal "cannot start" box (recorded here)
    monkeypatch.setattr(recovery, "_cannot_start", lambda error, parent: refused.append(str(error)))

    folder = tmp_path / "fresh"
    folder.mkdir()
    holder = hold(folder / "memory.db", "write", LONG_HOLD)
    seen: list[str] = []

    def look():
        seen.extend(w.labelText() for w in QApplication.topLevelWidgets()
                    if isinstance(w, QProgressDialog) and w.isVisible())
    timer = QTimer()
    timer.timeout.connect(look)
    timer.start(200)
    try:
        memory = recovery.open_memory(folder, "rules")
    finally:
        timer.stop()
        holder.kill()
        holder.wait()
    assert memory is not None, refused
    assert any("Waiting for another program that is writing to the memory" in text for text in seen)
    assert not [w for w in QApplication.topLevelWidgets() if isinstance(w, QProgressDialog) and w.isVisible()]
    memory.close()
