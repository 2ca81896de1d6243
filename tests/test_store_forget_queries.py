"""The store functions forget and re-redaction call (issue 18, item 2): what they add over the SQL they hold —
chunked IN lists, empty inputs, a PRAGMA put back, a row found by its key."""
# Raw SQL here: these test the store's forget queries themselves (a PRAGMA put back, rows only SQL can set up).

from payloads import chat

from magi_desktop.core.store import erasure, forget_receipts, forgetting, reredaction
from magi_desktop.core.store.connection import placeholders

T0 = 1_760_000_000.0


def _stored(memory, n):
    for i in range(n):
        memory.ingest(chat(f"note {i}", at=T0 + i, item=f"n{i}"))
    return [r[0] for r in memory.db.reader().execute("SELECT id FROM fact_events ORDER BY id")]


def test_placeholders():
    assert placeholders(0) == "" and placeholders(1) == "?" and placeholders(3) == "?, ?, ?"


def test_event_ids_of_reads_past_a_chunk_and_skips_rowids_not_stored(memory):
    rowids = _stored(memory, 3)
    asked = [*rowids, *range(rowids[-1] + 1, rowids[-1] + 1200)]      # more than one chunk of 500
    found = forget_receipts.event_ids_of(memory.db.reader(), asked)
    assert found == [r[0] for r in memory.db.reader().execute("SELECT event_id FROM fact_events ORDER BY id")]


def test_first_recorded_is_the_earliest_time_and_none_without_rows(memory):
    rowids = _stored(memory, 2)
    conn = memory.db.reader()
    assert forget_receipts.first_recorded(conn, [], [], []) is None
    earliest = conn.execute("SELECT min(ingested_at) FROM fact_events").fetchone()[0]
    assert forget_receipts.first_recorded(conn, rowids, [], []) == earliest


def test_facts_citing_finds_a_fact_beyond_the_first_chunk_of_message_ids(memory):
    fact_id = memory.remember("My cat is called Miso", "The user's cat is called Miso.",
                              [{"id": "m0", "role": "user", "text": "My cat is called Miso.",
                                "provenance": "human_input"}])
    conn = memory.db.reader()
    message = memory.fact(fact_id)["source_message_id"]
    assert message == "m0"
    others = [f"no-such-message-{i}" for i in range(700)]
    assert forgetting.facts_citing(conn, [*others, message]) == {fact_id}
    assert forgetting.facts_citing(conn, []) == set()


def test_secure_writes_turns_secure_delete_on_and_back_to_what_it_was(memory):
    with memory.db.writer() as conn:
        conn.execute("PRAGMA secure_delete = 0")
        with erasure.secure_writes(conn):
            assert conn.execute("PRAGMA secure_delete").fetchone()[0] == 1
        assert conn.execute("PRAGMA secure_delete").fetchone()[0] == 0
        conn.execute("PRAGMA secure_delete = ON")


def test_update_row_changes_only_the_row_with_that_key(memory):
    memory.ingest(chat("first", at=T0, session="one", item="a"))
    memory.ingest(chat("second", at=T0 + 1, session="two", item="b"))
    conn = memory.db.reader()
    table = next(t for t in reredaction.text_tables(conn) if t.name == "chat_sessions")
    rowid = conn.execute("SELECT rowid FROM chat_sessions WHERE session_id = 'one'").fetchone()[0]
    with memory.db.transaction() as tx:
        reredaction.update_row(tx, table, {"session_id": "renamed"}, (rowid,))
    sessions = dict(conn.execute("SELECT rowid, session_id FROM chat_sessions"))
    assert sessions[rowid] == "renamed" and sorted(sessions.values()) == ["renamed", "two"]
