"""Re-redaction (issue 16): secrets stored under older rules are gone from everything after `magi redact`.

The memory is built with an older rule set (``Memory.open(redaction=CURRENT.without(...))``: the families
the adversarial pass saw leak, and the entropy rule), every secret sent every way in and everything derived;
then it is opened with the current rules and redacted again. The privacy test's searcher then looks in
every column of every table, the full-text index terms, the database files' bytes and the backups.
"""
# Raw SQL left is about stored bytes: every text column of every table, the integrity check; and the rules record
# removed, as an old memory lacks it.

from __future__ import annotations

import json
import sqlite3

import pytest
from payloads import chat

from magi_desktop.cli import main
from magi_desktop.core import Memory
from magi_desktop.core.redact import CURRENT
from magi_desktop.core.reredact import UNKNOWN, text_tables
from magi_desktop.core.store.queue import EMBEDDING_JOBS
from magi_desktop.core.store.tables import row_count

from .secret_families import load_corpus
from .test_privacy import DAY, START, _Prepared, every_stored_text, ingest_everywhere, remember_it

# The families seen leaking in the adversarial pass, and the entropy rule: what the "older" rules lack.
NEW_FAMILIES = ("onepassword", "adobe", "artifactory", "azure_ad", "facebook", "intra42", "notion", "slack",
                "sourcegraph", "vault", "discord", "jfrog", "high_entropy")
OLDER = CURRENT.without(*NEW_FAMILIES)


def _texts() -> list[tuple[str, str]]:
    """(text, secret): two corpus samples of each new family, written the way a person would."""
    picked, seen = [], {}
    for sample in load_corpus():
        if sample.family in NEW_FAMILIES and seen.get(sample.family, 0) < 2 and "\n" not in sample.secret:
            seen[sample.family] = seen.get(sample.family, 0) + 1
            picked.append((f"{sample.keyword} = {sample.secret}", sample.secret))
    picked.append(("signing_key: Qm7Xv2Wk9Lp4Zr8Nb3Yc6Hf1Jd5Sg0Ae", "Qm7Xv2Wk9Lp4Zr8Nb3Yc6Hf1Jd5Sg0Ae"))
    return picked


def _file_bytes(folder) -> dict[str, str]:
    """The database files and every backup, read as bytes (what a thief with the disk would see)."""
    return {str(p.relative_to(folder)): p.read_bytes().decode("latin-1") for p in sorted(folder.rglob("*"))
            if p.is_file() and ".db" in p.name}


@pytest.fixture(scope="module")
def stored_under_older_rules(tmp_path_factory):
    folder = tmp_path_factory.mktemp("reredact") / "data"
    texts = _texts()
    memory = Memory.open(folder, embedder="hashing", redaction=OLDER)
    try:
        for index, (text, _) in enumerate(texts):
            ingest_everywhere(memory, index, text, text.startswith("https://"))
            remember_it(memory, index, text)
        memory.ingest(chat("thanks, noted", role="assistant", session="s0", at=START + 30))
        memory.process_pending()
        for index in range(len(texts)):
            memory.end_session(f"s{index}")
        memory.extract_facts(now=START + 30 * DAY)
        memory.run_due(now=START + 40 * DAY)
        memory.process_pending()
        memory.backup_now()
    finally:
        memory.close()
    return folder, texts


def test_the_older_rules_stored_the_secrets(stored_under_older_rules):
    """The test below could fail: under the older rules the secrets are in the tables, the index and the
    backup."""
    folder, texts = stored_under_older_rules
    with Memory.open(folder, embedder="hashing", redaction=OLDER) as memory:
        haystacks = every_stored_text(memory)
        status = memory.redaction_status()
    prepared = _Prepared(haystacks | _file_bytes(folder))
    leaked = [secret for _, secret in texts if prepared.find(secret)]
    assert len(leaked) == len(texts)
    assert status["current"] and status["stored_version"] == OLDER.version != CURRENT.version


def test_redacting_again_removes_them_from_every_table_index_file_and_backup(stored_under_older_rules):
    folder, texts = stored_under_older_rules
    with Memory.open(folder, embedder="hashing") as memory:
        before = memory.redaction_status()
        assert not before["current"] and "magi redact" in before["hint"]
        dry = memory.redact_stored(dry_run=True)
        assert dry["changed"] and dry["receipt_id"] is None and memory.redaction_status() == before
        receipt = memory.redact_stored()
        for table in ("fact_events", "runtime_traces", "entity_catalog"):   # (a dry run cannot see the summaries
            assert receipt["changed"][table] == dry["changed"][table]        # that will be made again)
        assert receipt["changed"]["fact_events"] >= 6 * len(texts) and receipt["backups_replaced"] >= 1
        assert set(receipt["families"]) <= set(NEW_FAMILIES) | {"assignment"}
        assert receipt["changed"]["l3_summaries (summarised again)"] > 0
        assert receipt["longest_batch_seconds"] < 1.0
        haystacks = every_stored_text(memory)
        conn = memory.db.reader()
        queued = EMBEDDING_JOBS.counts(conn).get("pending", 0)
        after = memory.redaction_status()
        kept = memory.redaction_receipts()[0]
    haystacks |= _file_bytes(folder)
    prepared = _Prepared(haystacks)
    leaked = {secret: where for _, secret in texts if (where := prepared.find(secret))}
    assert leaked == {}
    assert queued >= receipt["changed"]["fact_events"]           # changed events wait to be embedded again
    assert after["current"] and after["hint"] is None and after["last_run"]["receipt_id"] == receipt["receipt_id"]
    assert kept["changed"] == receipt["changed"] and kept["rules_from"] == OLDER.version
    assert not any(secret in json.dumps(kept) for _, secret in texts)        # counts, never the secrets


def test_after_redacting_again_the_memory_works_and_a_second_run_changes_nothing(stored_under_older_rules):
    folder, texts = stored_under_older_rules
    with Memory.open(folder, embedder="hashing") as memory:
        memory.redact_stored()
        memory.process_pending()
        memory.run_due(now=START + 42 * DAY)              # the windows whose summaries went are summarised again
        memory.process_pending()
        assert memory.stats()["embedding"]["pending"] == 0
        assert row_count(memory.db.reader(), "l3_summaries") > 0
        prepared = _Prepared(every_stored_text(memory))
        assert [secret for _, secret in texts if prepared.find(secret)] == []
        pack = memory.query("what did I note for later?", mode="event_stream", now=START + 41 * DAY)
        assert pack.findings and all(secret not in json.dumps(pack.to_dict()) for _, secret in texts)
        again = memory.redact_stored(dry_run=True)
        conn = memory.db.reader()
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert again["changed"] == {}


def test_what_current_rules_stored_needs_nothing_redacted_again(tmp_path):
    """Ingest and re-redaction agree: data stored under the current rules is left exactly as it is."""
    with Memory.open(tmp_path / "data", embedder="hashing") as memory:
        for index, (text, _) in enumerate(_texts()[:8]):
            ingest_everywhere(memory, index, text, False)
        memory.process_pending()
        assert memory.redaction_status()["current"]
        assert memory.redact_stored(dry_run=True)["changed"] == {}


def test_a_memory_from_before_versions_is_reported(tmp_path):
    folder = tmp_path / "data"
    with Memory.open(folder, embedder="hashing") as memory:
        memory.ingest(chat("I have a cat"))
    conn = sqlite3.connect(folder / "memory.db")
    conn.execute("DELETE FROM memory_meta WHERE key = 'redaction_rules'")
    conn.commit()
    conn.close()
    with Memory.open(folder, embedder="hashing") as memory:
        assert memory.redaction_status()["stored_version"] == UNKNOWN
        assert not memory.stats()["redaction"]["current"]


def test_every_text_column_of_the_schema_is_visited(tmp_path):
    """Found from the schema: a new table with text is covered without a list to update."""
    with Memory.open(tmp_path / "data", embedder="hashing") as memory:
        conn = memory.db.reader()
        visited = {t.name: set(t.columns) for t in text_tables(conn)}
        names = {n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE "
                                            "'CREATE VIRTUAL TABLE%' AND name NOT LIKE 'sqlite_%'")}
        for table in names - {"memory_meta", "schema_migrations", "redaction_receipts"}:
            if any(table.startswith(v) for v in ("fact_events_fts", "l3_summaries_fts", "memory_facts_fts",
                                                  "procedural_skills_fts", "chunk_vectors", "edge_vectors",
                                                  "entity_vectors", "summary_vectors")):
                continue
            text = {c[1] for c in conn.execute(f'PRAGMA table_info("{table}")') if (c[2] or "").upper() == "TEXT"}
            assert visited.get(table, set()) == text, table
    for needed in ("fact_events", "runtime_traces", "entity_catalog", "kg_edges", "tom_trait_assertions",
                   "l3_summaries", "memory_facts", "procedural_skills", "l4_execution_traces", "fact_extractions"):
        assert needed in visited


def test_magi_redact_and_magi_status(tmp_path, capsys):
    folder = tmp_path / "data"
    with Memory.open(folder, embedder="hashing", redaction=OLDER) as memory:
        memory.ingest(chat(_texts()[0][0]))
    assert main(["status", "--data-dir", str(folder)]) == 0
    assert "run `magi redact`" in capsys.readouterr().out
    assert main(["redact", "--dry-run", "--data-dir", str(folder)]) == 0
    assert "would change" in capsys.readouterr().out
    assert main(["redact", "--json", "--data-dir", str(folder)]) == 0
    receipt = json.loads(capsys.readouterr().out)
    assert receipt["changed"] and not receipt["dry_run"]
    assert main(["status", "--data-dir", str(folder)]) == 0
    assert "magi redact" not in capsys.readouterr().out
