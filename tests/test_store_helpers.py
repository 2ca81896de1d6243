"""The small store helpers the SQL move added (issue 18, item 2): placeholders, read snapshots, the export's
reading of triggers, the statistics' guard, and the one check of storable text."""
# Raw SQL here: these test the store's own helpers (a read snapshot, trigger parsing) on tables made for them.

import pytest

from magi_desktop.core.storable import is_storable
from magi_desktop.core.store.connection import connect, placeholders, read_snapshot, write_transaction
from magi_desktop.core.store.exports import insert_trigger_writes
from magi_desktop.core.store.statistics import events_by


def test_placeholders_marks_one_parameter_each():
    assert placeholders(1) == "?"
    assert placeholders(3) == "?, ?, ?"


def test_a_read_snapshot_does_not_see_a_write_made_meanwhile(tmp_path):
    reader, writer = connect(tmp_path / "s.db"), connect(tmp_path / "s.db")
    writer.execute("CREATE TABLE t (x)")
    with read_snapshot(reader):
        assert reader.execute("SELECT count(*) FROM t").fetchone()[0] == 0     # the snapshot starts here
        with write_transaction(writer):
            writer.execute("INSERT INTO t VALUES (1)")
        assert reader.execute("SELECT count(*) FROM t").fetchone()[0] == 0
    assert not reader.in_transaction
    assert reader.execute("SELECT count(*) FROM t").fetchone()[0] == 1


def test_insert_trigger_writes_names_the_tables_an_insert_trigger_writes(tmp_path):
    conn = connect(tmp_path / "t.db")
    conn.executescript(
        "CREATE TABLE a (x); CREATE TABLE b (x); CREATE TABLE c (x);"
        "CREATE TRIGGER a_in AFTER INSERT ON a BEGIN INSERT INTO b VALUES (new.x); DELETE FROM c; END;"
        "CREATE TRIGGER a_up AFTER UPDATE ON a BEGIN INSERT INTO c VALUES (new.x); END;")
    assert sorted(insert_trigger_writes(conn)) == [("a", "b"), ("a", "c")]


def test_events_are_counted_only_by_the_columns_the_counts_have(tmp_path):
    with pytest.raises(ValueError, match="not counted by"):
        events_by(connect(tmp_path / "e.db"), "content")


@pytest.mark.parametrize(("text", "storable"), [("plain", True), ("空气炸锅", True), ("", True),
                                                ("a\x00b", False), ("lone \ud800", False)])
def test_is_storable_refuses_nul_and_lone_surrogates(text, storable):
    assert is_storable(text) is storable
