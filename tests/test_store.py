"""The SQLite store: migrations, pragmas, permissions, FTS5 with Chinese, triggers, vectors."""
# Raw SQL left is what these tests are about: migrations, pragmas, the FTS index, and triggers fired by row deletes.

import os
import stat

import numpy as np
import pytest
from payloads import chat, sensor

from magi_desktop.core import Memory
from magi_desktop.core.store import Database, vectors
from magi_desktop.core.store.connection import connect
from magi_desktop.core.store.l1 import chat_sessions, event_row
from magi_desktop.core.store.migrations import (
    Migration,
    SchemaTooNew,
    available_migrations,
    migrate,
    split_statements,
)
from magi_desktop.core.store.search import fts_search, knn, match_count
from magi_desktop.core.store.tables import all_rows, row_count


def test_migrations_are_recorded_and_not_rerun(tmp_path):
    db = Database(tmp_path / "m.db")
    versions = [m.version for m in available_migrations()]
    assert db.applied_migrations == versions
    db.close()
    again = Database(tmp_path / "m.db")
    assert again.applied_migrations == []
    rows = again.reader().execute("SELECT version, name FROM schema_migrations").fetchall()
    assert [r[0] for r in rows] == versions
    again.close()


def test_a_failing_migration_leaves_nothing_behind(tmp_path):
    """The pending migrations are one upgrade: a failure in any rolls all of them back."""
    conn = connect(tmp_path / "m.db")
    migrate(conn, [Migration(1, "ok", "CREATE TABLE a (x);")])
    broken = [Migration(1, "ok", "CREATE TABLE a (x);"), Migration(2, "fine", "CREATE TABLE b (x);"),
              Migration(3, "broken", "CREATE TABLE c (x); INSERT INTO nowhere VALUES (1);")]
    with pytest.raises(Exception, match="nowhere"):
        migrate(conn, broken)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "a" in tables and "b" not in tables and "c" not in tables
    assert [r[0] for r in conn.execute("SELECT version FROM schema_migrations")] == [1]
    assert not conn.in_transaction


def test_a_newer_schema_is_refused(tmp_path):
    conn = connect(tmp_path / "m.db")
    migrate(conn, [Migration(1, "a", "CREATE TABLE a (x);"), Migration(2, "b", "CREATE TABLE b (x);")])
    with pytest.raises(SchemaTooNew, match="upgrade"):
        migrate(conn, [Migration(1, "a", "CREATE TABLE a (x);")])


def test_reader_connections_die_with_their_threads(tmp_path):
    import gc
    import threading

    db = Database(tmp_path / "r.db")
    threads = [threading.Thread(target=lambda: db.reader().execute("SELECT 1").fetchone()) for _ in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    gc.collect()
    assert len(db._readers) == 0
    db.reader()
    assert len(db._readers) == 1
    db.close()


def test_connection_pragmas(tmp_path):
    conn = connect(tmp_path / "p.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 5000
    assert conn.execute("SELECT vec_version()").fetchone()[0].startswith("v")


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_database_and_folder_are_private(tmp_path):
    mem = Memory.open(tmp_path / "private", embedder="hashing")
    mem.ingest(chat("I have a cat"))
    folder = tmp_path / "private"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    files = list(folder.iterdir())
    assert {f.name for f in files} >= {"memory.db", "memory.db-wal", "memory.db-shm"}
    for f in files:
        assert stat.S_IMODE(f.stat().st_mode) == 0o600, f
    mem.close()


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_an_existing_folder_keeps_its_permissions(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o755)
    mem = Memory.open(shared / "notes.db", embedder="hashing")
    mem.close()
    assert stat.S_IMODE(shared.stat().st_mode) == 0o755
    assert stat.S_IMODE((shared / "notes.db").stat().st_mode) == 0o600


def test_fts_segments_chinese_for_index_and_query(memory):
    memory.ingest(chat("我新买了一个空气炸锅，我觉得它很好用", at=1.7e9))
    memory.ingest(chat("我住在上海", at=1.7e9 + 1))
    conn = memory.db.reader()
    for query in ("空气炸锅", "炸锅", "买了空气炸锅", "上海"):
        assert fts_search(conn, query), query
    hits = fts_search(conn, "炸锅")
    assert len(hits) == 1
    assert memory.get_event(hits[0][0])["content"].startswith("我新买了")


def test_fts_stems_english_and_survives_fts_syntax(memory):
    memory.ingest(chat("I bought two air fryers last week"))
    conn = memory.db.reader()
    assert fts_search(conn, "air fryer")
    for hostile in ('"', "*", "NEAR(a b)", "-fryer", "fryer AND OR NOT", "a:b", "(((", "'; DROP TABLE x; --", ""):
        fts_search(conn, hostile)  # must not raise


def test_fts_scope_filter(memory):
    memory.ingest(chat("the air fryer is great", role="assistant"))
    memory.ingest(chat("I own an air fryer"))
    conn = memory.db.reader()
    assert len(fts_search(conn, "air fryer")) == 2
    fact_only = fts_search(conn, "air fryer", scopes=["fact_authoritative"])
    assert [memory.get_event(e)["author_type"] for e, _ in fact_only] == ["user"]


def _session(conn, session_id):
    (session,) = [s for s in chat_sessions(conn) if s.session_id == session_id]
    return session


def test_deleting_an_event_removes_everything_derived(memory):
    kept = memory.ingest(chat("I like tea", session="s1", at=1.7e9)).event_id
    gone = memory.ingest(chat("I like coffee " * 200, session="s1", at=1.7e9 + 1)).event_id
    memory.process_pending()
    conn = memory.db.reader()
    gone_rowid = event_row(conn, gone)["id"]
    assert vectors.chunk_count(conn, gone_rowid) > 1
    assert _session(conn, "s1").message_count == 2
    vectors_before = vectors.chunk_vector_count(conn)

    with memory.db.transaction() as w:
        w.execute("DELETE FROM fact_events WHERE event_id = ?", (gone,))

    assert not fts_search(conn, "coffee")
    assert fts_search(conn, "tea")
    assert vectors.chunk_count(conn, gone_rowid) == 0
    assert vectors.chunk_vector_count(conn) == 1 < vectors_before
    assert vectors.chunk_vector_count(conn, gone_rowid) == 0
    assert _session(conn, "s1").message_count == 1
    assert memory.get_event(kept) is not None
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_chat_session_index(memory):
    memory.ingest_many([chat("hi", session="a", at=100_000.0), chat("later", session="a", at=300_000.0),
                        chat("middle", session="a", at=200_000.0, role="assistant"),
                        chat("other", session="b", at=150_000.0)])
    rows = chat_sessions(memory.db.reader())
    assert rows == [("a", 100_000.0, 300_000.0, 3, "local"), ("b", 150_000.0, 150_000.0, 1, "local")]


def test_vector_knn_filters_scope_and_time(memory):
    memory.ingest(chat("I adopted a grey cat", at=1_000_000.0))
    memory.ingest(chat("Cats are wonderful pets", role="assistant", at=2_000_000.0))
    memory.ingest(chat("My cat is called Miso", at=3_000_000.0))
    memory.process_pending()
    query = memory.embedder.embed(["my cat"])[0]
    conn = memory.db.reader()
    everything = knn(conn, query, k=10)
    assert len(everything) == 3
    facts = knn(conn, query, k=10, scopes=["fact_authoritative"])
    assert len(facts) == 2
    early = knn(conn, query, k=10, scopes=["fact_authoritative"], before=2_500_000.0)
    assert len(early) == 1
    distances = [d for _, _, d in everything]
    assert distances == sorted(distances)


def test_vector_rows_are_float32_of_the_model_dimension(memory):
    event_id = memory.ingest(chat("hello there")).event_id
    memory.process_pending()
    conn = memory.db.reader()
    ((_, blob),) = vectors.chunk_vectors_of_events(conn, [event_row(conn, event_id)["id"]])
    vector = np.frombuffer(blob, dtype=np.float32)
    assert vector.shape == (memory.embedder.dimension,)
    assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-5)


def test_split_statements_respects_triggers_comments_and_strings():
    sql = ("-- a comment; with a semicolon\nCREATE TABLE a (x TEXT DEFAULT ';');\n"
           "CREATE TRIGGER t AFTER INSERT ON a BEGIN INSERT INTO a VALUES ('x;y'); SELECT 1; END;\n;\n")
    statements = split_statements(sql)
    assert len(statements) == 2
    assert statements[1].startswith("CREATE TRIGGER") and statements[1].endswith("END;")
    with pytest.raises(ValueError, match="incomplete"):
        split_statements("SELECT 'unterminated")


def test_processes_opening_a_new_database_at_once_migrate_it_once(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "race" / "memory.db"
    code = ("import sys; from magi_desktop.core.store import Database; "
            "db = Database(sys.argv[1]); print(db.applied_migrations); db.close()")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    outputs = [p.communicate(timeout=60) for p in procs]
    assert all(p.returncode == 0 for p in procs), outputs
    applied = [out for out, _ in outputs if out.strip() != "[]"]
    assert len(applied) == 1
    conn = connect(path)
    assert row_count(conn, "schema_migrations") == len(available_migrations())


def test_event_counts_follow_inserts_and_deletes(memory):
    memory.ingest_many([chat("I have a cat"), chat("I have a dog"), chat("Nice pets!", role="assistant"),
                        sensor("visit_page", {"url": "https://a.example"}, item="v1"),
                        sensor("visit_page", {"url": "https://a.example"}, item="v1")])
    with memory.db.transaction() as conn:
        conn.execute("DELETE FROM fact_events WHERE content = 'I have a dog'")
    events = memory.stats()["events"]
    conn = memory.db.reader()
    assert events["total"] == row_count(conn, "fact_events") == 3
    assert events["by_evidence_class"] == {"user_self_report": 1, "assistant_response": 1, "external_observation": 1}
    assert events["by_scope"] == {"fact_authoritative": 2, "conversation_only": 1}
    assert events["by_source"] == {"chat": 2, "browser": 1}


def _context_hits(memory, word):
    conn = memory.db.reader()
    return sorted(row[0] for row in conn.execute(
        "SELECT e.source_item_id FROM fact_events_fts JOIN fact_events e ON e.id = fact_events_fts.rowid "
        "WHERE fact_events_fts MATCH ?", (f"context : {word}",)))


def test_the_previous_human_turn_is_a_turns_context(memory):
    memory.ingest_many([chat("What is your favourite fruit?", session="s", at=1.7e9, item="a"),
                        chat("Mangoes, always.", session="s", at=1.7e9 + 10, item="b")])
    memory.ingest(chat("And you?", session="s", at=1.7e9 + 20, item="c"))
    memory.ingest(chat("I like durian", role="assistant", session="s", at=1.7e9 + 30, item="d"))
    memory.ingest(chat("Durian smells!", session="s", at=1.7e9 + 40, item="e"))
    assert _context_hits(memory, "fruit") == ["b"]           # within a batch
    assert _context_hits(memory, "mangoes") == ["c"]         # across batches
    assert _context_hits(memory, "like") == []               # an assistant turn is never context


def test_deleting_a_turn_removes_it_from_the_next_turns_context(memory):
    memory.ingest_many([chat("I adopted a parrot called Kiwi", session="s", at=1.7e9, item="a"),
                        chat("Kiwi says hello every morning", session="s", at=1.7e9 + 10, item="b"),
                        chat("It is very loud", session="s", at=1.7e9 + 20, item="c")])
    assert _context_hits(memory, "parrot") == ["b"]
    with memory.db.transaction() as conn:
        conn.execute("DELETE FROM fact_events WHERE source_item_id = 'a'")
    assert _context_hits(memory, "parrot") == []
    assert fts_search(memory.db.reader(), "parrot") == []
    with memory.db.transaction() as conn:
        conn.execute("DELETE FROM fact_events WHERE source_item_id = 'b'")
    assert _context_hits(memory, "kiwi") == []
    assert memory.db.reader().execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_the_context_migration_reindexes_an_existing_database(tmp_path):
    """A database made before migration 0003 keeps working and gets the context column."""
    from magi_desktop.core.contracts import validate_payload
    from magi_desktop.core.ingest import normalize
    from magi_desktop.core.render import TemplateRegistry

    path = tmp_path / "old.db"
    conn = connect(path)
    migrate(conn, available_migrations()[:2])
    for i, text in enumerate(["I adopted a parrot called Kiwi", "Kiwi says hello every morning"]):
        event, _ = normalize(validate_payload(chat(text, session="s", at=1.7e9 + i, speaker="Ana")),
                             TemplateRegistry(), user_id="local", key_secret=b"k")
        conn.execute(
            "INSERT INTO fact_events (event_id, timestamp, event_type, source, idempotency_key, session_id, user_id, "
            "content, memory_domain, ingest_target, cognition_eligible, retention_class, author_type, content_type, "
            "evidence_class, l1_retrieval_scope, metadata_json, ingested_at) "
            "VALUES (?, ?, 'CHAT_MESSAGE', 'chat', ?, 's', 'local', ?, 'conversation', 'l1_and_l2', 1, 'durable', "
            "'user', 'statement', 'user_self_report', 'fact_authoritative', ?, ?)",
            (event.event_id, event.timestamp, event.idempotency_key, event.content,
             __import__("json").dumps(event.metadata), event.ingested_at))
    assert migrate(conn, available_migrations()[:3]) == [3]
    rows = conn.execute("SELECT rowid FROM fact_events_fts WHERE fact_events_fts MATCH 'context : parrot'").fetchall()
    assert len(rows) == 1
    assert conn.execute("SELECT count(*) FROM fact_events_fts WHERE fact_events_fts MATCH 'ana'").fetchone()[0] == 2


def test_another_process_opening_and_closing_the_memory_never_corrupts_it(tmp_path):
    """`magi status` while the app writes. Opening an existing database file with a descriptor of our own
    and closing it would drop this process's SQLite locks (POSIX), letting the other process delete the
    write-ahead log under us: a malformed database."""
    import subprocess
    import sys
    import threading

    from payloads import chat

    from magi_desktop.core import Memory

    memory = Memory.open(tmp_path / "data", embedder="hashing")
    errors, done = [], threading.Event()

    def write():
        try:
            for i in range(1500):
                memory.ingest(chat(f"line {i}", at=1.7e9 + i))
                if i % 100 == 0:
                    threading.Thread(target=memory.stats).start()   # a new thread: a new read connection
                    memory.process_pending()
        except Exception as exc:  # noqa: BLE001
            errors.append(repr(exc))
        finally:
            done.set()

    probe = (f"from magi_desktop.core import Memory\nfor _ in range(5):\n"
             f"    with Memory.open({str(tmp_path / 'data')!r}, embedder='hashing') as m: m.stats()\n")
    writer = threading.Thread(target=write)
    writer.start()
    probes = 0
    while not done.is_set():
        run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr[-800:]
        probes += 1
    writer.join()
    assert errors == [] and probes >= 1
    assert memory.db.reader().execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert memory.stats()["events"]["total"] == 1500
    memory.close()


def test_the_generic_readers_take_only_names_of_the_schema(memory):
    """row_count, all_rows and match_count spell a table's name into their statement: they refuse any other."""
    memory.ingest(chat("I like green tea"))
    conn = memory.db.reader()
    assert row_count(conn, "fact_events") == 1 == len(all_rows(conn, "fact_events"))
    assert match_count(conn, "fact_events_fts", "green") == 1 and match_count(conn, "fact_events_fts", "coffee") == 0
    for name in ("nowhere", "fact_events; DROP TABLE fact_events", 'fact_events" --'):
        with pytest.raises(ValueError):
            row_count(conn, name)
        with pytest.raises(ValueError):
            all_rows(conn, name)
    with pytest.raises(ValueError):
        match_count(conn, "fact_events", "green")             # a table, but no full-text index
    assert row_count(conn, "fact_events") == 1
