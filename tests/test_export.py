"""Export / import (issue 8): everything out as JSON Lines and back, the same answers after; Markdown files
of the saved facts and the beliefs; an import is all or nothing."""
# Raw SQL left: an accepted fact written by hand (background extraction's kind) and removed after, and the file's
# integrity and foreign-key checks after an import.

import json
import time

import pytest
from payloads import chat, sensor

from magi_desktop.core import Memory
from magi_desktop.core.export import ImportFailed
from magi_desktop.core.store.tables import all_rows, row_count

T0 = 1_760_000_000.0
DAY = 86400.0
NOW = T0 + 41 * DAY
QUESTIONS = (
    "where do I live now?",
    "我喜欢在哪里跑步？",
    "which Jiaxing pages did I visit?",
    "what is my cat called?",
    "what song did I listen to?",
    "How did we handle web search last time?",
    "what is my sister's name?",     # a remembered fact: asked after it was saved (remember() runs on the clock)
)
LATER = time.time() + DAY


def said(text, message_id):
    return [{"id": message_id, "role": "user", "text": text, "provenance": "human_input"}]


def tool_run(ok, at):
    return {"source_type": "runtime", "session_id": "agent-1", "occurred_at": at,
            "action": {"tool": "web_search", "category": "search", "ok": ok, "duration_ms": 120.0,
                       "input": {"q": "tea prices"}, "output": "3 results" if ok else None,
                       **({} if ok else {"error": "timeout"})}}


TURNS = {   # what the user told an agent, logged as chat turns (item = the agent's message id)
    "m1": "Remember: my sister's name is Anna.",
    "m2": "I prefer green tea, no sugar.",
    "m4": "Actually, now I prefer oolong.",
    "m3": "Always run the linter before committing.",
}


def fill(memory):
    memory.ingest_many([
        chat("I live in Shanghai.", at=T0, item="e1"),
        chat("Noted, Shanghai.", role="assistant", at=T0 + 5, item="e1a"),
        chat("I moved to Jiaxing with my cat Miso.", at=T0 + 30 * DAY, session="s2", item="e2"),
        chat("我喜欢在西湖边跑步，每周三次。", at=T0 + 31 * DAY, session="s3", item="e3"),
        chat("好的，我记住了：西湖边跑步。", role="assistant", at=T0 + 31 * DAY + 5, session="s3", item="e4"),
        sensor("visit_page", {"url": "https://jiaxing.example/old-town", "title": "Jiaxing old town guide"},
               at=T0 + 31 * DAY + 60, item="v1"),
        sensor("listen_music", {"track_name": "End Of An Era", "artist_name": "Dua Lipa", "play_duration_sec": 206},
               source="netease_music", at=T0 + 32 * DAY, item="n1",
               entities=[{"mention_text": "Dua Lipa", "entity_type": "person"}]),
        chat("My bank PIN is something I should not have said.", at=T0 + 33 * DAY, session="s4", item="e5"),
        *[tool_run(i != 2, T0 + 34 * DAY + i * 60) for i in range(5)],
        chat("A turn with no item id.", at=T0 + 35 * DAY, session="s6"),     # deduped by a keyed hash
        *[chat(text, at=T0 + 36 * DAY + i * 60, session="s5" if item != "m3" else "s8", item=item)
          for i, (item, text) in enumerate(TURNS.items())],
        # A conclusion the user accepts: background extraction makes it an "accepted" fact.
        chat("Should the app store its data in Postgres or SQLite?", at=T0 + 37 * DAY, session="s7", item="q1"),
        chat("Use SQLite in WAL mode: one file, no server to run.", role="assistant", at=T0 + 37 * DAY + 5,
             session="s7", item="q2"),
        chat("Yes, let's do that.", at=T0 + 37 * DAY + 30, session="s7", item="q3"),
    ])
    memory.end_session("s7")
    memory.process_pending()
    memory.remember("my sister's name is Anna", "The user's sister is called Anna.", said(TURNS["m1"], "m1"),
                    category="relation", session_id="s5")
    tea = memory.remember("I prefer green tea", "The user prefers green tea.", said(TURNS["m2"], "m2"),
                          category="preference")
    memory.remember("now I prefer oolong", "The user prefers oolong tea.", said(TURNS["m4"], "m4"),
                    category="preference", replaces=tea)        # the old fact points at a later one
    memory.remember("run the linter before committing", "Run the linter before each commit.",
                    said(TURNS["m3"], "m3"), category="procedure", project="magi")
    memory.forget(source_item_ids=["e5"])
    memory.process_pending()
    beliefs = {(b.relation, b.value): b.key for c in ("assertions", "facts") for b in memory.beliefs(c, limit=100)}
    memory.confirm(beliefs[("lives_in", "Jiaxing")])
    memory.deny(beliefs[("VISITED", "jiaxing.example")])
    memory.correct(beliefs[("likes", "在西湖边跑步")], "在运河边跑步")
    memory.ingest(chat("I visited jiaxing.example again today.", at=T0 + 38 * DAY, session="s9", item="e6"))
    memory.process_pending()
    memory.run_due(now=T0 + 40 * DAY)                 # L3 and maintenance, once everything is in
    memory.process_pending()


def answers(memory, question):
    """What a question finds: L1 events by id; beliefs, summaries and skills by what they say (their local
    ids are made again when L2–L4 are rebuilt), each with its evidence class."""
    return [(f.layer, f.event_id if f.layer == "L1" or f.event_id.startswith("fact:") else f.event_id.split(":")[0],
             f.text, f.source_item_id, f.session_id, f.evidence_class, f.supporting_event_ids)
            for f in memory.query(question, now=LATER if "sister" in question else NOW).findings]


def beliefs_of(memory, category):
    return sorted((b.subject, b.relation, b.value, b.status, b.state, round(b.confidence, 6), b.observations,
                   b.confirmed_at is not None, tuple(b.sources)) for b in memory.beliefs(category, limit=1000))


def rows_of(path, *tables):
    """The rows of ``tables`` in an export, without the rowids SQLite picked (a table's own ids stay)."""
    records = [json.loads(line) for line in lines_of(path)[1:]]
    return [(r["table"], r["row"]) for r in records if r["table"] in tables]


def table_counts(memory, *tables):
    conn = memory.db.reader()
    return {t: row_count(conn, t) for t in tables}


@pytest.fixture(scope="module")
def exported(tmp_path_factory, minilm):
    """A memory with a bit of everything (real model), and its export."""
    folder = tmp_path_factory.mktemp("export")
    memory = Memory.open(folder / "original", embedder=minilm)
    fill(memory)
    memory.export_jsonl(folder / "memory.jsonl")
    yield memory, folder / "memory.jsonl"
    memory.close()


def lines_of(path):
    return path.read_text("utf-8").splitlines()


def test_export_then_import_gives_the_same_answers(exported, tmp_path, minilm):
    original, path = exported
    header = json.loads(lines_of(path)[0])
    assert header["format"] == "magi-desktop-export" and header["format_version"] == 1
    assert header["schema_version"] == original.stats()["schema_version"] and header["exported_at"] > 0
    names = [t["name"] for t in header["tables"]]
    assert "fact_events" in names and "memory_facts" in names and "forget_receipts" in names
    assert not any(n.endswith("_fts") or n.startswith(("chunk_vectors", "sqlite_")) for n in names)
    assert {f["evidence_type"] for f in original.facts(status=None)} == {"stated", "accepted"}

    with Memory.open(tmp_path / "copy", embedder=minilm) as copy:
        report = copy.import_jsonl(path)
        # A genuine export: every value the import re-derived or re-checked came out as stored.
        assert report.changed == {} and report.dropped == {}, report.lines()
        assert report.events == original.stats()["events"]["total"] == report.queued["embedding"]
        assert {"kg_edges", "tom_trait_assertions", "l3_summaries", "procedural_skills"} <= set(report.rebuilt)
        assert table_counts(copy, "kg_edges", "l3_summaries") == {"kg_edges": 0, "l3_summaries": 0}   # made below
        assert table_counts(copy, "procedural_skills") == {"procedural_skills": 1}     # counted from the tool runs
        copy.process_pending()                                    # vectors, L2, the reviews, L4 strategies
        copy.run_due(now=T0 + 40 * DAY)                           # L3, as the original ran it
        copy.process_pending()
        for question in QUESTIONS:
            # L3 is summarised again from the finished L2 (the original summarised as it went, so a window's
            # wording may differ): the same layers answer, and the L1, L2 and L4 findings are the same.
            mine, theirs = answers(copy, question), answers(original, question)
            assert [f for f in mine if f[0] != "L3"] == [f for f in theirs if f[0] != "L3"], question
            assert {f[0] for f in mine} == {f[0] for f in theirs}, question
        found = [answers(original, q) for q in QUESTIONS]
        layers = {layer for findings in found for layer, *_ in findings}
        assert {"L1", "L2", "L4"} <= layers and all(found)
        assert any("西湖" in text for findings in found for _, _, text, *_ in findings)
        assert any(item == "v1" for findings in found for _, _, _, item, *_ in findings)
        assert any("Anna" in text for findings in found for _, _, text, *_ in findings)    # a remembered fact
        assert copy.facts(status=None) == original.facts(status=None)
        assert copy.forget_receipts() == original.forget_receipts()
        for category in ("assertions", "relationships", "facts"):
            assert beliefs_of(copy, category) == beliefs_of(original, category), category
        assert [(r["action"], r["created_at"]) for r in copy.reviews()] == [
            (r["action"], r["created_at"]) for r in original.reviews()]           # applied again, as made
        assert [s | {"distilled_at": None} for s in copy.skills()] == [   # distilled again, later
            s | {"distilled_at": None} for s in original.skills()]
        derived = ("event_chunks", "chunk_vectors", "edge_vectors", "entity_vectors", "chat_sessions",
                   "l2_projection_jobs", "user_denials", "procedural_skills", "l1_event_counts")
        assert table_counts(copy, *derived) == table_counts(original, *derived)
        assert copy.stats()["events"] == original.stats()["events"]
        conn = copy.db.reader()
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        copy.export_jsonl(tmp_path / "again.jsonl")
        kept = ("fact_events", "runtime_traces", "memory_facts", "forget_receipts", "chat_sessions", "chat_extraction",
                "fact_extractions", "memory_meta")
        # Row for row the same — but for the memory's own bookkeeping in memory_meta (the redaction rules
        # version, the scrub's), which every memory keeps for itself.
        def imported(rows):
            return [(t, r) for t, r in rows if t != "memory_meta" or r["key"] == "idempotency_secret"]

        assert imported(rows_of(tmp_path / "again.jsonl", *kept)) == imported(rows_of(path, *kept))
        # The dedupe secret came along: the same chat turn sent again is a duplicate, not a new event.
        assert copy.ingest(chat("A turn with no item id.", at=T0 + 35 * DAY, session="s6")).duplicate


def test_markdown_files_per_scope_and_category_with_evidence(exported, tmp_path):
    original, _ = exported
    with original.db.transaction() as conn:     # a fact the user accepted (background extraction writes these)
        conn.execute("INSERT INTO memory_facts (content, scope, category, evidence_type, source_message_id, "
                     "accepting_message_id, created_at, updated_at) VALUES ('The user likes jasmine tea.', 'user', "
                     "'preference', 'accepted', 'm7', 'm8', ?, ?)", (T0, T0))
    try:
        files = original.export_markdown(tmp_path / "md")
        names = sorted(p.relative_to(tmp_path / "md").as_posix() for p in files)
        assert names == ["beliefs.md", "index.md", "project/procedure.md", "user/knowledge.md", "user/preference.md",
                         "user/relation.md"]
        relation = (tmp_path / "md/user/relation.md").read_text("utf-8")
        assert "# User · relation" in relation and "The user's sister is called Anna." in relation
        anna = next(f["source_message_id"] for f in original.facts() if "Anna" in f["content"])   # event of "m1"
        assert f"Evidence: stated — the user said “my sister's name is Anna” (message {anna}, session s5)" in relation
        meta = json.loads(relation.split("<!-- ")[2].split(" -->")[0])
        assert meta["scope"] == "user" and meta["category"] == "relation" and meta["evidence_type"] == "stated"
        preference = (tmp_path / "md/user/preference.md").read_text("utf-8")
        assert "oolong" in preference and "2 fact(s) (1 stated, 1 accepted)" in preference
        assert preference.index("## Replaced") < preference.index("green tea") and "Replaced by fact" in preference
        assert "Evidence: accepted" in preference and "accepted in message m8" in preference
        project = (tmp_path / "md/project/procedure.md").read_text("utf-8")
        assert "## Project: magi" in project and "Run the linter before each commit." in project
        beliefs = (tmp_path / "md/beliefs.md").read_text("utf-8")
        assert "lives_in: **Jiaxing**" in beliefs and "Shanghai" not in beliefs.split("## Relationships")[0]
        assert "1 evidence event(s) (chat)" in beliefs
        before = {p: p.read_bytes() for p in files}
        (tmp_path / "md/user/event.md").write_text(relation)                # left by an earlier export
        again = original.export_markdown(tmp_path / "md")
        assert {p: p.read_bytes() for p in again} == before                 # deterministic
        assert not (tmp_path / "md/user/event.md").exists()                 # stale generated file removed
        (tmp_path / "md/notes.txt").write_text("mine")
        with pytest.raises(ValueError, match="did not write"):
            original.export_markdown(tmp_path / "md")
    finally:
        with original.db.transaction() as conn:
            conn.execute("DELETE FROM memory_facts WHERE source_message_id = 'm7'")


def corrupt(lines, index, change):
    lines = list(lines)
    record = json.loads(lines[index])
    change(record)
    lines[index] = json.dumps(record, ensure_ascii=False)
    return lines


def first_row(lines, table):
    return next(i for i, line in enumerate(lines) if line.startswith(f'{{"table":"{table}"'))


def second_event_gets_the_first_id(lines):
    first = first_row(lines, "fact_events")
    event_id = json.loads(lines[first])["row"]["event_id"]
    return first + 1, corrupt(lines, first + 1, lambda r: r["row"].update(event_id=event_id))


@pytest.mark.parametrize("make, field, reason", [
    (lambda ls: (3, ls[:2] + ['{"table": "fact_events", "row": {'] + ls[3:]), None, "invalid JSON"),
    (lambda ls: (5, corrupt(ls, 4, lambda r: r["row"].update(nonsense=1))), "row.nonsense", "has no column"),
    (lambda ls: (first_row(ls, "fact_events") + 1,
                 corrupt(ls, first_row(ls, "fact_events"), lambda r: r["row"].update(timestamp=[1, 2]))),
     "row.timestamp", "must be null, a number"),
    (lambda ls: (len(ls), ls[:-1]), None, "truncated"),
    (lambda ls: (second_event_gets_the_first_id(ls)[0] + 1, second_event_gets_the_first_id(ls)[1]),
     "row.event_id", "UNIQUE constraint failed: fact_events.event_id"),
])
def test_a_malformed_line_is_named_and_nothing_is_written(exported, tmp_path, make, field, reason):
    _, path = exported
    line, lines = make(lines_of(path))
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n", "utf-8")
    with Memory.open(tmp_path / "target", embedder="hashing") as target:
        secret = all_rows(target.db.reader(), "memory_meta")
        with pytest.raises(ImportFailed, match=reason) as caught:
            target.import_jsonl(bad)
        assert caught.value.line == line and caught.value.field == field
        assert str(caught.value).startswith(f"line {line}: ")
        assert target.stats()["events"]["total"] == 0
        assert table_counts(target, "fact_events", "entity_catalog", "chat_sessions", "embedding_jobs",
                            "l2_projection_jobs", "fact_events_fts") == dict.fromkeys(
            ("fact_events", "entity_catalog", "chat_sessions", "embedding_jobs", "l2_projection_jobs",
             "fact_events_fts"), 0)
        assert all_rows(target.db.reader(), "memory_meta") == secret


@pytest.mark.parametrize("key, change, reason", [
    ("schema_version", 1, "newer memory schema"),
    ("format_version", 1, "format version 2 is newer"),
])
def test_an_export_from_a_newer_schema_is_refused(exported, tmp_path, key, change, reason):
    _, path = exported
    lines = corrupt(lines_of(path), 0, lambda header: header.update({key: header[key] + change}))
    newer = tmp_path / "newer.jsonl"
    newer.write_text("\n".join(lines) + "\n", "utf-8")
    with Memory.open(tmp_path / "target", embedder="hashing") as target:
        with pytest.raises(ImportFailed, match=reason) as caught:
            target.import_jsonl(newer)
        assert (caught.value.line, caught.value.field) == (1, key)
        assert target.stats()["events"]["total"] == 0


def test_a_memory_that_is_not_empty_is_refused(exported, tmp_path):
    _, path = exported
    with Memory.open(tmp_path / "busy", embedder="hashing") as busy:
        busy.ingest(chat("Already here.", item="x1"))
        with pytest.raises(ImportFailed, match="not empty"):
            busy.import_jsonl(path)
        assert busy.stats()["events"]["total"] == 1


def test_magi_export_and_import(exported, tmp_path, capsysbinary):
    from magi_desktop.cli import main

    original, _ = exported
    source = tmp_path / "source"
    with Memory.open(source, embedder="hashing") as memory:
        memory.ingest_many([chat("I live in Shanghai.", at=T0, item="e1"), chat("上海很热。", at=T0 + 1, item="e2")])
    assert main(["--data-dir", str(source), "export", "--out", "-"]) == 0
    out = capsysbinary.readouterr()
    text = out.out.decode("utf-8")
    assert json.loads(text.splitlines()[0])["format"] == "magi-desktop-export" and "上海很热" in text
    assert b"exported 2 events" in out.err
    dump = tmp_path / "dump.jsonl"
    dump.write_text(text, "utf-8")
    assert main(["--data-dir", str(tmp_path / "copy"), "import", str(dump), "--no-embed"]) == 0
    assert b"imported 2 events" in capsysbinary.readouterr().out
    assert main(["--data-dir", str(tmp_path / "copy"), "import", str(dump), "--no-embed"]) == 2
    assert b"not empty" in capsysbinary.readouterr().err
    dump.write_text(text.replace('"table":"fact_events"', '"table":"fact_event"', 1), "utf-8")
    assert main(["--data-dir", str(tmp_path / "other"), "import", str(dump), "--no-embed"]) == 2
    err = capsysbinary.readouterr().err.decode()
    assert "line " in err and "table 'fact_event' is not in the header" in err and "nothing was imported" in err
    assert main(["--data-dir", str(source), "export", "--format", "markdown", "--out", str(tmp_path / "md")]) == 0
    assert (tmp_path / "md" / "beliefs.md").is_file()
    assert main(["--data-dir", str(source), "export", "--format", "markdown", "--out", "-"]) == 2
