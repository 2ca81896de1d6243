"""Issue 16, defect 3: forget leaves nothing on disk, and its receipt names nothing.

Every test reads the raw bytes of every file under the data folder (database, WAL, backups, what a
restore kept aside, collector temp copies) for the forgotten words, in UTF-8 and UTF-16.
"""
# Raw SQL left is about bytes on disk: integrity and foreign-key checks, and a schema-13 file with unscrubbed pages.

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from payloads import chat, sensor
from reliability.fuzzing import files_holding

from magi_desktop.core import Memory, restore_backup
from magi_desktop.core.paths import temp_dir
from magi_desktop.core.store.assertions import snapshot_texts
from magi_desktop.core.store.entities import catalog
from magi_desktop.core.store.l1 import event_rows
from magi_desktop.core.store.summaries import dangling_links, summary_texts

T0 = 1_760_000_000.0
DAY = 86400.0
HOLDER = Path(__file__).with_name("lock_holder.py")


def _summaries_naming(conn, word: str) -> list[str]:
    """The summaries holding ``word`` in any case (as SQL's LIKE matches ASCII)."""
    return [text for text in summary_texts(conn) if word.lower() in text.lower()]


def visits(memory: Memory, prefix: str, n: int, at: float) -> list[str]:
    items = [f"{prefix}{i}" for i in range(n)]
    memory.ingest_many([sensor("visit_page", {"url": f"https://{prefix}site{i}.example/",
                                              "title": f"{prefix}title {i}"}, at=at + i, item=item)
                        for i, item in enumerate(items)])
    return items


def test_forgotten_browser_visits_leave_no_copy_in_any_file(tmp_path):
    """As filed: 30 visits forgotten from a memory that embedded, projected, summarised and backed them up."""
    memory = Memory.open(tmp_path / "d", embedder="hashing")
    visits(memory, "keepq", 200, T0)
    forgotten = visits(memory, "zqxsecret", 30, T0 + 1000)
    memory.process_pending()
    memory.run_due(now=T0 + 5 * DAY)
    memory.backup_now()
    assert files_holding(tmp_path / "d", ["zqxsecret"])                  # it was everywhere
    receipt = memory.forget(source_item_ids=forgotten)
    assert files_holding(tmp_path / "d", ["zqxsecret"]) == {}             # before: 120 copies in memory.db
    assert receipt["removed"]["fact_events"] == 30 and receipt["scrub"] == "done"
    assert receipt["removed"]["entity_catalog"] >= 30                      # the sites' entities went at once
    assert memory.query("keepqtitle 7", now=T0 + 5 * DAY).findings        # the rest still answers
    memory.close()
    assert files_holding(tmp_path / "d", ["zqxsecret"]) == {}


def test_rows_moved_by_ingest_before_the_forget_leave_no_copy_in_free_space(memory):
    """secure_delete is always on: as the event table grows, SQLite moves rows between pages (splits,
    rebalancing) and, without it, left the old copies in the pages' free space — a forget, which zeroes only
    what it deletes itself, missed them (no entity, no background work involved here)."""
    for i in range(400):
        word = f"zqmark{i:03d}x" if i % 10 == 0 else f"plain{i}"
        memory.ingest(chat(f"note {i}: remember the {word} thing please", at=T0 + i, item=f"n{i}"))
    memory.forget(source_item_ids=[f"n{i}" for i in range(0, 400, 10)])
    memory.close()
    assert files_holding(memory.path.parent, ["zqmark"]) == {}


def test_a_forgotten_entity_its_snapshot_and_its_name_go_at_once(memory):
    memory.ingest(chat("I live in Shanghai.", at=T0, item="e1"))
    memory.ingest(chat("My cat Mirzakhanova sleeps all day.", at=T0 + 1, item="e2",
                       entities=[{"mention_text": "Mirzakhanova", "entity_type": "pet"}]))
    memory.process_pending()
    conn = memory.db.reader()
    assert len(catalog(conn, name_key="mirzakhanova")) >= 1
    receipt = memory.forget(entity="MIRZAKHANOVA")                       # any case
    # No maintenance run: the entity, its snapshot and every mention are gone now.
    assert len(catalog(conn, name_key="mirzakhanova")) == 0
    assert not [s for s in snapshot_texts(conn) if "irzakhanova" in s]
    assert "irzakhanova" not in json.dumps(receipt).lower()              # before: the name in criteria_json
    assert receipt["removed"]["fact_events"] == 1 and receipt["scrub"] == "done"
    assert files_holding(memory.path.parent, ["mirzakhanova"]) == {}
    assert [r["receipt_id"] for r in memory.forget_receipts(entity="mirzakhanova")] == [receipt["receipt_id"]]
    assert memory.forget_receipts(entity="Shanghai") == []
    assert memory.query("where do I live?", now=T0 + 5).findings


def test_receipts_keep_keyed_hashes_and_can_still_be_asked_by_name(memory):
    memory.ingest(chat("Booked the dentist.", at=T0, item="dentist-appointment-42"))
    receipt = memory.forget(source_item_ids=["dentist-appointment-42"])
    stored = memory.forget_receipts()[0]
    assert "dentist" not in json.dumps(stored) and "dentist" not in json.dumps(receipt)
    assert stored["criteria"]["source_item_ids"][0].startswith("hmac-sha256:")
    assert memory.forget_receipts(source_item_id="dentist-appointment-42")[0]["receipt_id"] == receipt["receipt_id"]
    assert memory.forget_receipts(source_item_id="dentist-appointment-43") == []
    # The key stays with this memory: an export carries no forget_secret.
    export = memory.path.parent / "out.jsonl"
    memory.export_jsonl(export)
    assert "forget_secret" not in {json.loads(line).get("table") for line in export.read_text().splitlines()[1:]}


def test_the_files_a_restore_kept_aside_go_with_the_next_forget(tmp_path):
    folder = tmp_path / "d"
    with Memory.open(folder, embedder="hashing") as memory:
        memory.ingest(chat("I live in Shanghai.", at=T0, item="e1"))
        memory.backup_now()
        memory.ingest(chat("My secret is vexillumcaper.", at=T0 + 1, item="e2"))
    done = restore_backup(folder)                              # the newer file, with e2, is kept aside
    assert done["kept_aside"] and files_holding(folder, ["vexillumcaper"])
    with Memory.open(folder, embedder="hashing") as memory:
        memory.ingest(chat("My secret is vexillumcaper.", at=T0 + 1, item="e2"))
        receipt = memory.forget(source_item_ids=["e2"])
    assert not any(Path(p).exists() for p in done["kept_aside"])         # before: kept, holding everything
    assert receipt["scrub"] == "done"
    assert files_holding(folder, ["vexillumcaper"]) == {}


def test_collector_temp_copies_are_wiped(memory):
    scratch = temp_dir(memory.path.parent) / "chrome"
    scratch.mkdir(parents=True)
    (scratch / "History").write_bytes(b"SQLite format 3\x00 ... https://plumbagoclinic.example/ ...")
    memory.ingest(sensor("visit_page", {"url": "https://plumbagoclinic.example/"}, source="chrome", at=T0, item="v1"))
    memory.forget(source_item_ids=["v1"])
    assert files_holding(memory.path.parent, ["plumbagoclinic"]) == {}
    assert temp_dir(memory.path.parent).exists() and not any(temp_dir(memory.path.parent).iterdir())


@pytest.mark.skipif(os.name != "posix", reason="another process's read lock")
def test_the_scrub_waits_for_a_reader_in_another_process_then_completes(memory):
    """The WAL and the old pages cannot be cleared while another process reads an older snapshot: the
    receipt says pending (before: forget returned as if done, the WAL still held the words), and the next
    attempt once the reader lets go completes it."""
    memory.ingest(chat("My hobby is ornithopterwelding.", at=T0, item="h1"))
    memory.ingest(chat("I live in Shanghai.", at=T0 + 1, item="h2"))
    memory.process_pending()
    reader = subprocess.Popen([sys.executable, str(HOLDER), str(memory.path), "read"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert reader.stdout.readline().strip() == "held"
    try:
        receipt = memory.forget(source_item_ids=["h1"])
        assert receipt["scrub"] == "pending" and receipt["removed"]["fact_events"] == 1
        assert memory.forget_receipts()[0]["scrub"] == "pending" and memory.forget_pending()
        assert not memory.query("ornithopterwelding", now=T0 + 5).findings    # gone from every answer
        assert memory.resume_forget()["pending"]                             # still held: still pending
    finally:
        reader.stdin.write("release\n")
        reader.stdin.flush()
        assert reader.stdout.readline().strip() == "released"
        reader.wait(30)
    report = memory.resume_forget()
    assert report["scrubbed"] == [receipt["receipt_id"]] and report["pending"] is None
    assert memory.forget_receipts()[0]["scrub"] == "done" and not memory.forget_pending()
    assert files_holding(memory.path.parent, ["ornithopterwelding"]) == {}


def test_a_receipt_lists_the_earlier_exports_that_still_hold_it(memory, tmp_path):
    before = tmp_path / "before.jsonl"
    memory.export_jsonl(tmp_path / "too-early.jsonl")             # before the event: cannot hold it
    memory.ingest(chat("My passport number is in the drawer.", at=T0, item="p1"))
    memory.export_jsonl(before)
    memory.export_markdown(tmp_path / "md")
    gone = tmp_path / "deleted-since.jsonl"
    memory.export_jsonl(gone)
    gone.unlink()                                                 # the user deleted it: holds nothing now
    receipt = memory.forget(source_item_ids=["p1"])
    assert [(Path(e["path"]).name, e["format"]) for e in receipt["exports"]] == [("before.jsonl", "jsonl"),
                                                                                 ("md", "markdown")]
    memory.export_jsonl(tmp_path / "after.jsonl")                 # made after: does not hold it
    assert [Path(e["path"]).name for e in memory.forget_receipts()[0]["exports"]] == ["before.jsonl", "md"]


def test_magi_forget_prints_the_scrub_and_the_exports_that_still_hold_it(tmp_path):
    folder = tmp_path / "d"
    with Memory.open(folder, embedder="hashing") as memory:
        memory.ingest(chat("I live in Shanghai.", at=T0, item="e1"))
        memory.export_jsonl(tmp_path / "old.jsonl")
    out = subprocess.run([sys.executable, "-m", "magi_desktop.cli", "forget", "--yes", "--item", "e1", "--data-dir",
                          str(folder)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "scrub done" in out.stdout
    assert "these exports still hold it" in out.stderr and str(tmp_path / "old.jsonl") in out.stderr


def test_between_chunks_nothing_cites_a_forgotten_event(memory, monkeypatch):
    """A forget in many small chunks: after each, every derived row and every answer cites only events that
    still exist (the breather between chunks is where other writers and readers come in)."""
    from magi_desktop.core.services import forgetting as memory_forget

    for i in range(60):
        memory.ingest(chat(f"Day {i}: I bought a teapot number {i} in Hangzhou.", at=T0 + i * 3600,
                           session=f"s{i // 10}", item=f"t{i}"))
    memory.process_pending()
    memory.run_due(now=T0 + 4 * DAY)
    conn = memory.db.reader()
    checked = []

    def check(_seconds):
        ids = {r["event_id"] for r in event_rows(conn)}
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        pack = memory.query("what did I buy in Hangzhou?", now=T0 + 4 * DAY, limit=20)
        for finding in pack.findings:
            assert set(finding.supporting_event_ids or [finding.event_id]) <= ids | {None}, finding
        assert dangling_links(conn) == 0
        checked.append(len(ids))

    monkeypatch.setattr(memory_forget, "FIRST_CHUNK", 7)
    monkeypatch.setattr(memory_forget, "MAX_CHUNK", 7)
    monkeypatch.setattr(memory_forget.time, "sleep", check)
    receipt = memory.forget(source="chat", start=T0, end=T0 + 45 * 3600)
    assert receipt["removed"]["fact_events"] == 45 and len(checked) == 7 and checked[-1] == 15
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_memory_from_before_is_rekeyed_and_rewritten_once_at_its_first_open(tmp_path):
    """A database at schema 13 whose old receipt names an entity in clear, and whose free space still holds
    a row deleted without secure_delete: the first open of this version hashes the name and clears both."""
    import sqlean

    from magi_desktop.core.store.connection import connect
    from magi_desktop.core.store.migrations import available_migrations, migrate

    folder = tmp_path / "old"
    folder.mkdir()
    conn = connect(folder / "memory.db")
    conn.execute("PRAGMA secure_delete = OFF")                      # as every connection was before
    migrate(conn, [m for m in available_migrations() if m.version <= 13])
    conn.execute("INSERT INTO forget_receipts (created_at, criteria_json, event_ids_json, counts_json) VALUES "
                 "(?, ?, '[]', '{}')", (T0, json.dumps({"entity": "Wenceslasquirk"})))
    conn.execute("CREATE TABLE scratch (note TEXT)")
    conn.execute("INSERT INTO scratch VALUES (?)", ("a deleted note about gallimaufryzq " * 20,))
    conn.execute("DELETE FROM scratch")                              # leaves its bytes in a free page
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    assert files_holding(folder, ["wenceslasquirk", "gallimaufryzq"])
    with Memory.open(folder, embedder="hashing") as memory:
        receipt, = memory.forget_receipts()
        assert receipt["scrub"] == "done" and receipt["criteria"]["entity"].startswith("hmac-sha256:")
        assert memory.forget_receipts(entity="wenceslasquirk")
        assert files_holding(folder, ["wenceslasquirk", "gallimaufryzq"]) == {}
        kept = sqlean.connect(str(memory.path))
        assert kept.execute("SELECT count(*) FROM memory_meta WHERE key = 'free_space_unscrubbed'").fetchone()[0] == 0
        kept.close()


def _busy_day_with(memory: Memory, word: str) -> list[str]:
    """A browsing day of 300 pages with a dozen visits to one site late in it: the day's summary names the site
    among its topics, though it links only a sample of the day's events."""
    memory.ingest_many([sensor("visit_page", {"url": f"https://filler{i % 40}.example.org/p/{i}",
                                              "title": f"Filler page {i}"}, at=T0 + i * 60, item=f"f{i}")
                        for i in range(300)])
    items = [f"w{k}" for k in range(12)]
    memory.ingest_many([sensor("visit_page", {"url": f"https://{word}.example.net/x{k}", "title": f"{word} clinic"},
                               at=T0 + 301 * 60 + k * 700, item=item) for k, item in enumerate(items)])
    memory.process_pending()
    memory.run_due(now=T0 + 40 * DAY)
    return items


def test_a_summary_that_names_a_forgotten_site_goes_although_it_does_not_link_its_visits(tmp_path):
    """Review of issue 16: the day, week and month summaries named the site in their topics and 'Mentioned'
    (drawn from every event of the window), but linked only a sample that left its visits out — forget kept them,
    and "what did I do in that month" answered with the forgotten site."""
    memory = Memory.open(tmp_path / "d", embedder="hashing")
    items = _busy_day_with(memory, "qzbrowsdomain")
    conn = memory.db.reader()
    assert _summaries_naming(conn, "qzbrowsdomain")
    receipt = memory.forget(source_item_ids=items)
    assert receipt["scrub"] == "done"
    assert files_holding(tmp_path / "d", ["qzbrowsdomain"]) == {}
    memory.run_due(now=T0 + 41 * DAY)                      # the windows are summarised again, without it
    assert summary_texts(conn, granularity="day")
    assert not _summaries_naming(conn, "qzbrowsdomain")
    memory.close()


def test_a_restored_backup_holds_no_stale_copy_that_outlives_a_forget(tmp_path):
    """Review of issue 16: the backup copy was scrubbed (FTS merge, VACUUM) without secure_delete, which leaves
    copies of rows in the unused space of rebuilt pages; restored, a later forget zeroed the rows but not those."""
    folder = tmp_path / "d"
    memory = Memory.open(folder, embedder="hashing")
    items = _busy_day_with(memory, "qzbrowsdomain")
    memory.backup_now()
    memory.close()
    restore_backup(folder)
    with Memory.open(folder, embedder="hashing") as memory:
        receipt = memory.forget(source_item_ids=items)
    assert receipt["scrub"] == "done"
    assert files_holding(folder, ["qzbrowsdomain"]) == {}


def test_a_summary_drawn_while_another_process_forgets_from_its_window_is_drawn_again_without_it(
        tmp_path, monkeypatch):
    """Second review of issue 16: a day drawn while a forget (another process) removed the day's newest event
    and a late event took its rowid passed the check (count and max rowid unchanged) and kept the forgotten
    words; and a day whose write was skipped was never summarised again (the job had moved past it)."""
    from magi_desktop.core.l3 import jobs

    folder = tmp_path / "d"
    memory = Memory.open(folder, embedder="hashing")
    memory.ingest_many([chat(f"Filler line {i} about the weather", at=T0 + i * 60, item=f"f{i}") for i in range(2)])
    memory.ingest(chat("My secret word is qzracerword, remember it.", at=T0 + 3600 * 5, item="race1"))
    memory.process_pending()
    drawn = jobs.extractive
    raced = []

    def extractive_while_a_forget_runs(conn, label, events, previous):
        draft = drawn(conn, label, events, previous)
        if not raced and "qzracerword" in draft.content:
            raced.append(True)
            with Memory.open(folder, embedder="hashing") as other:   # as `magi forget` and a collector would
                other.forget(source_item_ids=["race1"])
                other.ingest(chat("A late line of the same day.", at=T0 + 3600 * 6, item="late"))
        return draft

    monkeypatch.setattr(jobs, "extractive", extractive_while_a_forget_runs)
    memory.run_due(now=T0 + 40 * DAY)
    assert raced
    conn = memory.db.reader()
    assert not _summaries_naming(conn, "qzracerword")
    memory.run_due(now=T0 + 40 * DAY + 60)
    days = summary_texts(conn, granularity="day")
    assert days and all("qzracerword" not in d for d in days)
    assert any("late line" in d for d in days), days         # the day drawn again, from what is left
    memory.close()
    assert files_holding(folder, ["qzracerword"]) == {}
