"""A damaged database (architecture §14): detected at open with a message that names the file and says it is
corrupt, and replaced from an automatic backup — made daily and before upgrades with SQLite's online
backup API, verified, rotated, user-only — by ``magi restore`` or the app's dialog; the damaged file
is kept aside, never deleted."""
# Raw SQL left is about the file: integrity checks, and what a backup copy holds read as a plain SQLite file.

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from payloads import chat, mixed_stream

from magi_desktop.core import DatabaseCorrupt, Memory, MemoryUnavailable, list_backups, restore_backup
from magi_desktop.core.store import backup as backups
from magi_desktop.core.store.connection import connect
from magi_desktop.core.store.migrations import available_migrations, migrate
from magi_desktop.core.store.tables import row_count


def events(memory):
    return row_count(memory.db.reader(), "fact_events")


def garble(path):
    """Random bytes over three pages in the middle of the file."""
    size = path.stat().st_size
    with open(path, "r+b") as handle:
        handle.seek(size // 2 // 4096 * 4096)
        handle.write(os.urandom(3 * 4096))


def truncate(path):
    with open(path, "r+b") as handle:
        handle.truncate(path.stat().st_size // 2)


def overwrite_header(path):
    with open(path, "r+b") as handle:
        handle.write(os.urandom(100))


def empty(path):
    with open(path, "r+b") as handle:
        handle.truncate(0)


DAMAGE = {"garbled pages": garble, "truncated": truncate, "header overwritten": overwrite_header, "emptied": empty}


@pytest.fixture
def backed_up(tmp_path):
    """A memory of 1,200 events with one automatic backup, closed (checkpointed into the main file)."""
    data = tmp_path / "data"
    memory = Memory.open(data, embedder="hashing")
    for rule in memory.aggregation_settings():      # 1,200 events, no activity block beside them
        memory.set_aggregation(rule, False)
    memory.ingest_many(list(mixed_stream(1200)))
    memory.process_pending()
    made = memory.run_due(jobs=("backup",))["backup"]["made"]
    assert made is not None
    memory.ingest(chat("After the backup: I repainted the fence", at=1_800_000_000.0))
    memory.close()
    return data


@pytest.mark.parametrize("damage", DAMAGE)
def test_damage_is_detected_at_open_and_the_backup_restores_it(backed_up, damage):
    database = backed_up / "memory.db"
    DAMAGE[damage](database)
    damaged_bytes = database.read_bytes()
    with pytest.raises(DatabaseCorrupt) as caught:
        Memory.open(backed_up, embedder="hashing")
    message = str(caught.value)
    assert f"the memory database {database} is corrupt" in message and "magi restore" in message
    assert isinstance(caught.value, MemoryUnavailable) and len(caught.value.backups) == 1

    done = restore_backup(backed_up)
    aside = [p for p in map(type(database), done["kept_aside"]) if p.name.startswith("memory.db.replaced-")]
    assert aside and aside[0].read_bytes() == damaged_bytes              # kept, byte for byte
    memory = Memory.open(backed_up, embedder="hashing")
    assert events(memory) == 1200                                        # as of the backup
    assert memory.db.reader().execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert memory.query("garden", mode="exact_fact").findings
    memory.ingest(chat("Writing works again", at=1_800_000_100.0))
    memory.close()


def test_without_a_backup_the_message_says_so(tmp_path):
    memory = Memory.open(tmp_path / "d", embedder="hashing")
    memory.ingest_many(list(mixed_stream(1200)))
    memory.close()
    garble(tmp_path / "d" / "memory.db")
    with pytest.raises(DatabaseCorrupt, match="no automatic backup of it yet") as caught:
        Memory.open(tmp_path / "d", embedder="hashing")
    assert caught.value.backups == []
    with pytest.raises(MemoryUnavailable, match="no sound automatic backup"):
        restore_backup(tmp_path / "d")
    assert (tmp_path / "d" / "memory.db").exists()                       # nothing was moved


def test_an_emptied_file_without_backups_is_a_new_memory(tmp_path):
    """SQLite's own rule, kept: an empty file is a new database (the app creates it empty, 0600)."""
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "memory.db").touch()
    Memory.open(tmp_path / "d", embedder="hashing").close()


def test_backups_are_daily_verified_rotated_and_private(memory):
    memory.ingest_many(list(mixed_stream(200)))
    first = memory.run_due(jobs=("backup",))["backup"]["made"]
    assert first and memory.run_due(jobs=("backup",))["backup"] == {"made": None}   # one a day
    listed = memory.backups()
    assert [b["path"] for b in listed] == [first] and listed[0]["reason"] == "daily"
    for _ in range(backups.KEEP + 2):
        memory.backup_now()
        time.sleep(0.002)                                               # distinct names (millisecond stamps)
    kept = memory.backups()
    assert len(kept) == backups.KEEP and first not in [b["path"] for b in kept]  # the oldest rotated out
    folder = memory.path.parent / "backups"
    if os.name == "posix":
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        assert all(stat.S_IMODE(os.stat(b["path"]).st_mode) == 0o600 for b in kept)
    for made in kept:
        assert backups.verify(made["path"]) is None
        copy = connect(made["path"], readonly=True)
        assert copy.execute("SELECT count(*) FROM fact_events").fetchone()[0] == events(memory)
        assert copy.execute("PRAGMA journal_mode").fetchone()[0] == "delete"     # one file, no -wal
        assert copy.execute("PRAGMA freelist_count").fetchone()[0] == 0          # vacuumed
        copy.close()
    assert memory.stats()["storage"]["last_backup"]["path"] == kept[0]["path"]
    assert not list(folder.glob("*.partial"))


def test_a_damaged_live_database_is_never_backed_up_over_good_backups(tmp_path):
    memory = Memory.open(tmp_path / "d", embedder="hashing")
    memory.ingest_many(list(mixed_stream(1200)))
    good = memory.backup_now()
    memory.close()
    garble(tmp_path / "d" / "memory.db")
    with pytest.raises(DatabaseCorrupt, match="corrupt"):
        backups.make_backup(tmp_path / "d" / "memory.db", "daily", keep=1)
    assert [b["path"] for b in list_backups(tmp_path / "d")] == [good["path"]]   # the good one survives
    assert not list((tmp_path / "d" / "backups").glob("*.partial"))


def test_a_schema_upgrade_backs_up_first(tmp_path):
    path = tmp_path / "d" / "memory.db"
    path.parent.mkdir()
    older = available_migrations()[:-1]
    conn = connect(path)
    migrate(conn, older)
    conn.close()
    Memory.open(path, embedder="hashing").close()
    made, = list_backups(path)
    assert made["reason"] == f"pre-migration-v{older[-1].version}"
    copy = connect(made["path"], readonly=True)
    assert copy.execute("SELECT max(version) FROM schema_migrations").fetchone()[0] == older[-1].version
    copy.close()


def test_forgetting_replaces_the_backups_that_hold_what_was_forgotten(memory):
    secret = memory.ingest(chat("My locker code is 4417", at=1_700_000_000.0)).event_id
    memory.ingest(chat("I like green tea", at=1_700_000_100.0))
    old = memory.backup_now()
    receipt = memory.forget(event_ids=[secret])
    assert receipt["backups_replaced"] == 1
    kept, = memory.backups()
    assert kept["path"] != old["path"] and kept["reason"] == "forget" and not os.path.exists(old["path"])
    assert b"4417" not in Path(kept["path"]).read_bytes()              # not even in free pages


def test_restore_refuses_while_the_memory_is_open(backed_up):
    memory = Memory.open(backed_up, embedder="hashing")
    with pytest.raises(MemoryUnavailable, match="open in another program"):
        restore_backup(backed_up)
    memory.close()
    child = subprocess.Popen([sys.executable, "-c", (
        "import sys, time\nfrom magi_desktop.core import Memory\n"
        f"m = Memory.open({str(backed_up)!r}, embedder='hashing')\nprint('open', flush=True)\ntime.sleep(60)")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "open"
        with pytest.raises(MemoryUnavailable, match="open in another program"):
            restore_backup(backed_up)
    finally:
        child.kill()
        child.wait()
    assert restore_backup(backed_up)["restored_from"]["reason"] == "daily"    # free again


def test_a_damaged_newest_backup_is_skipped(backed_up):
    memory = Memory.open(backed_up, embedder="hashing")
    newer = memory.backup_now()
    memory.close()
    garble(type(backed_up)(newer["path"]))
    overwrite_header(backed_up / "memory.db")
    done = restore_backup(backed_up)
    assert done["restored_from"]["reason"] == "daily"                    # the older, sound one
    with pytest.raises(MemoryUnavailable, match="damaged too"):
        restore_backup(backed_up, newer["path"])


def magi(*args, data_dir):
    env = {**os.environ, "MAGI_DATA_DIR": str(data_dir)}
    return subprocess.run([sys.executable, "-m", "magi_desktop.cli", *args], capture_output=True, text=True,
                          env=env, timeout=120)


def test_cli_names_the_damage_lists_and_restores(backed_up):
    garble(backed_up / "memory.db")
    status = magi("status", data_dir=backed_up)
    assert status.returncode == 2 and "is corrupt" in status.stderr and "magi restore" in status.stderr
    assert "Traceback" not in status.stderr
    listing = magi("restore", "--list", data_dir=backed_up)
    assert listing.returncode == 0 and "daily" in listing.stdout and "memory-" in listing.stdout
    restored = magi("restore", data_dir=backed_up)
    assert restored.returncode == 0 and "restored" in restored.stdout and "kept as" in restored.stdout
    status = magi("status", data_dir=backed_up)
    assert status.returncode == 0 and "L1 events     1200" in status.stdout and "last backup" in status.stdout


# ------------------------------------------------------------------------------------------ the app


def _answer_dialog(qtbot, button: str):
    """Click ``button`` ("restore" or "quit") on the restore dialog once it is up (it runs modally)."""
    from magi_desktop.ui.qt import QApplication, QTimer
    from magi_desktop.ui.recovery import RestoreDialog

    seen = []

    def click():
        dialog = QApplication.activeModalWidget()
        if not isinstance(dialog, RestoreDialog):
            QTimer.singleShot(20, click)
            return
        seen.append(dialog.informativeText())
        getattr(dialog, f"{button}_button").click()

    QTimer.singleShot(0, click)
    return seen


def test_the_app_offers_the_newest_good_backup_when_the_database_is_damaged(qtbot, backed_up):
    pytest.importorskip("pytestqt")
    from magi_desktop.ui.recovery import open_memory

    garble(backed_up / "memory.db")
    seen = _answer_dialog(qtbot, "quit")
    assert open_memory(backed_up, "rules") is None                        # declined: nothing touched
    assert "Restore the automatic backup of" in seen[0]
    assert not list(backed_up.glob("memory.db.replaced-*"))
    seen = _answer_dialog(qtbot, "restore")
    memory = open_memory(backed_up, "rules")
    try:
        assert memory is not None and events(memory) == 1200
        assert "kept beside it" in seen[0]
        assert list(backed_up.glob("memory.db.replaced-*"))               # the damaged file, kept aside
    finally:
        memory.close()
