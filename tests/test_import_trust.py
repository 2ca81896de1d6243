"""Issue 16, defect 2: an import trusts no derived value. The three filed examples, each against a real
export of a real memory edited the way the report says."""
# Raw SQL left: a fact row no code path writes (as an old bug might have), and review_replays (no store reader yet).

import json

import pytest
from payloads import chat, sensor

from magi_desktop.core import Memory
from magi_desktop.core.export_markdown import MarkdownTargetError
from magi_desktop.core.store.l1 import event_rows, trace_rows
from magi_desktop.core.store.queue import L2_PROJECTION_JOBS

T0 = 1_760_000_000.0


def said(event_id, text):
    return [{"id": event_id, "role": "user", "text": text, "provenance": "human_input"}]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A small memory (a user statement, an assistant turn, a browser visit, a stated fact) and its export."""
    folder = tmp_path_factory.mktemp("trust")
    with Memory.open(folder / "original", embedder="hashing") as memory:
        stated = memory.ingest(chat("I am allergic to penicillin.", at=T0, item="u1"))
        memory.ingest_many([
            chat("Noted: penicillin.", role="assistant", at=T0 + 5, item="a1"),
            sensor("visit_page", {"url": "https://forum.example/allergy", "title": "I am allergic to shellfish"},
                   source="chrome", at=T0 + 60, item="v1"),
        ])
        memory.remember("allergic to penicillin", "The user is allergic to penicillin.",
                        said(stated.event_id, "I am allergic to penicillin."), category="profile")
        memory.process_pending()
        memory.export_jsonl(folder / "memory.jsonl")
    return folder / "memory.jsonl"


def edited(path, table, match, change, out):
    """The export with ``change(row)`` applied to the rows of ``table`` that ``match(row)``."""
    lines = path.read_text("utf-8").splitlines()
    for i, line in enumerate(lines[1:], 1):
        record = json.loads(line)
        if record["table"] == table and match(record["row"]):
            change(record["row"])
            lines[i] = json.dumps(record, ensure_ascii=False)
    out.write_text("\n".join(lines) + "\n", "utf-8")
    return out


def imported(tmp_path, export):
    memory = Memory.open(tmp_path / "copy", embedder="hashing")
    report = memory.import_jsonl(export)
    memory.process_pending()
    return memory, report


def test_a_browser_row_edited_to_user_self_report_stays_an_observation(exported, tmp_path):
    export = edited(exported, "fact_events", lambda r: r["source_item_id"] == "v1",
                    lambda r: r.update(evidence_class="user_self_report", author_type="user",
                                       content_type="statement", retention_class="durable"), tmp_path / "e.jsonl")
    memory, report = imported(tmp_path, export)
    with memory:
        row = event_rows(memory.db.reader(), source_item_id="v1")[0]
        assert (row["evidence_class"], row["author_type"], row["content_type"], row["retention_class"]) == (
            "external_observation", "external", "observation", "compressible")
        findings = memory.query("What am I allergic to?", now=T0 + 3600).findings
        browser = [f for f in findings if f.source_item_id == "v1"]
        assert browser and all(f.evidence_class == "external_observation" and f.author == "external" for f in browser)
        assert not [f for f in findings if f.source == "chrome" and f.evidence_class == "user_self_report"]
    changed = {(c["table"], c["column"]) for c in report.to_dict()["changed"]}
    assert {("fact_events", "evidence_class"), ("fact_events", "author_type")} <= changed


def test_a_fact_whose_source_message_names_no_event_is_not_stated(exported, tmp_path):
    export = edited(exported, "memory_facts", lambda r: True, lambda r: r.update(source_message_id="01NOSUCHEVENT"),
                    tmp_path / "f.jsonl")
    memory, report = imported(tmp_path, export)
    with memory:
        facts = memory.facts(status=None)
        assert [f["evidence_type"] for f in facts] == ["unknown"] and facts[0]["source_message_id"] is None
        assert facts[0]["quote"] is None                       # the quote would pass for the user's words
        findings = memory.query("what am I allergic to? penicillin", now=T0 + 3600).findings
        assert not [f for f in findings if f.evidence_class == "fact_stated"]
    reasons = {(c["table"], c["column"], c["reason"]) for c in report.to_dict()["changed"]}
    assert ("memory_facts", "evidence_type", "source_missing") in reasons


@pytest.mark.parametrize("column, value", [
    ("scope", "../../outside"), ("category", "../../../outside"), ("scope", "/tmp/absolute"),
])
def test_a_fact_naming_a_path_is_dropped_and_markdown_stays_in_its_folder(exported, tmp_path, column, value):
    victim = tmp_path / "outside.md"
    victim.write_text("the user's own notes\n", "utf-8")
    export = edited(exported, "memory_facts", lambda r: True, lambda r: r.update({column: value}),
                    tmp_path / "p.jsonl")
    memory, report = imported(tmp_path, export)
    with memory:
        assert memory.facts(status=None) == []
        dropped = report.to_dict()["dropped"]
        assert [(d["table"], d["reason"]) for d in dropped] == [("memory_facts", f"invalid_{column}")]
        out = tmp_path / "md" / "a" / "b"
        written = memory.export_markdown(out)
        assert all(p.resolve().is_relative_to(out.resolve()) for p in written)
    assert victim.read_text("utf-8") == "the user's own notes\n"


@pytest.mark.parametrize("scope, category", [
    ("../../..", "outside"), ("user", "../../../outside"), ("/abs", "x"), ("user", "CON"), ("a\x00b", "c"),
    ("user", "ｕｓｅｒ／．．／x"), ("user", "x" * 600),
])
def test_markdown_names_files_from_a_safe_slug_whatever_the_database_holds(tmp_path, scope, category):
    victim = tmp_path / "outside.md"
    victim.write_text("mine\n", "utf-8")
    with Memory.open(tmp_path / "data", embedder="hashing") as memory:
        with memory.db.transaction() as conn:       # a row no current code path writes, as an old bug might have
            conn.execute("INSERT INTO memory_facts (content, scope, category, created_at, updated_at) "
                         "VALUES ('A fact.', ?, ?, ?, ?)", (scope, category, T0, T0))
        out = tmp_path / "md" / "deep" / "er"
        written = memory.export_markdown(out)
    root = out.resolve()
    for path in written:
        assert path.resolve().is_relative_to(root) and not path.is_symlink()
        relative = path.resolve().relative_to(root)
        assert len(relative.parts) <= 2 and all(len(p) <= 80 and p.isascii() for p in relative.parts)
        assert relative.parts[-1].split(".")[0].upper() not in ("CON", "PRN", "AUX", "NUL")
    assert victim.read_text("utf-8") == "mine\n"
    assert any("A fact." in p.read_text("utf-8") for p in written)


def test_markdown_refuses_a_symlink_that_leads_out(tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "preference.md").write_text("not ours\n", "utf-8")
    with Memory.open(tmp_path / "data", embedder="hashing") as memory:
        memory.remember("I prefer green tea", "The user prefers green tea.",
                        said("m1", "I prefer green tea, no sugar."), category="preference")
        out = tmp_path / "md"
        out.mkdir()
        (out / "user").symlink_to(outside, target_is_directory=True)
        with pytest.raises(MarkdownTargetError, match="symbolic link"):
            memory.export_markdown(out)
        (out / "user").unlink()
        (out / "beliefs.md").symlink_to(outside / "preference.md")
        with pytest.raises(MarkdownTargetError, match="symbolic link"):
            memory.export_markdown(out)
    assert (outside / "preference.md").read_text("utf-8") == "not ours\n"


# ------------------------------------------------------------------ reviews through an import


def beliefs_of(memory):
    return sorted((b.category, b.subject, b.relation, b.value, b.status, b.state, b.confirmed_at)
                  for c in ("assertions", "facts", "relationships") for b in memory.beliefs(c, limit=1000))


def key_of(memory, relation, value, state="current"):
    return next(b.key for c in ("assertions", "facts") for b in memory.beliefs(c, state=state, limit=100)
                if (b.relation, b.value) == (relation, value))


def test_reviews_apply_again_to_the_rebuilt_beliefs_when_the_rebuild_reaches_them(tmp_path):
    """Each review is applied with the evidence the belief had when the user made it: what the user said
    after a deletion still brings the belief back, as it did in the original."""
    with Memory.open(tmp_path / "original", embedder="hashing") as original:
        original.ingest(chat("I live in Shanghai.", at=T0, item="r1"))
        original.ingest(chat("My favourite colour is green.", at=T0 + 10, item="r2"))
        original.ingest(chat("I work at Acme.", at=T0 + 20, item="r3"))
        original.process_pending()
        original.deny(key_of(original, "lives_in", "Shanghai"))
        original.confirm(key_of(original, "WORKS_AT", "Acme"))
        original.ingest(chat("I live in Shanghai, really.", at=T0 + 3600, session="s2", item="r4"))  # after it
        original.ingest(chat("I work at Acme.", at=T0 + 3700, session="s2", item="r5"))
        original.process_pending()
        original.export_jsonl(tmp_path / "memory.jsonl")
        expected = beliefs_of(original)
        reviews = [(r["action"], r["created_at"]) for r in reversed(original.reviews())]
        assert any(state == "denied" for *_, state, _ in expected) and any(
            (relation, value, state) == ("lives_in", "Shanghai", "current") for _, _, relation, value, _, state, _
            in expected)
    with Memory.open(tmp_path / "copy", embedder="hashing") as copy:
        report = copy.import_jsonl(tmp_path / "memory.jsonl")
        assert report.queued["review_replays"] == 2 and not report.changed and not report.dropped
        assert copy.beliefs("assertions") == []                  # L2 is rebuilt, not loaded
        copy.process_pending()
        assert beliefs_of(copy) == expected
        assert [(r["action"], r["created_at"]) for r in reversed(copy.reviews())] == reviews
        assert copy.stats()["l2"]["imported_reviews"] == {"applied": 2}


def test_a_review_whose_belief_the_export_lacks_or_the_rebuild_never_makes_is_reported(tmp_path):
    with Memory.open(tmp_path / "original", embedder="hashing") as original:
        original.ingest(chat("I live in Shanghai.", at=T0, item="r1"))
        original.process_pending()
        original.confirm(key_of(original, "lives_in", "Shanghai"))
        original.export_jsonl(tmp_path / "memory.jsonl")
    lacking = edited(tmp_path / "memory.jsonl", "tom_trait_assertions", lambda r: True,
                     lambda r: r.update(assertion_id=r["assertion_id"] + 1000), tmp_path / "lacking.jsonl")
    with Memory.open(tmp_path / "a", embedder="hashing") as copy:
        report = copy.import_jsonl(lacking)
        assert [(d["table"], d["reason"]) for d in report.to_dict()["dropped"]] == [
            ("user_reviews", "names no belief the export holds")]
    never = edited(tmp_path / "memory.jsonl", "tom_trait_assertions", lambda r: True,
                   lambda r: r.update(value="Atlantis"), tmp_path / "never.jsonl")
    with Memory.open(tmp_path / "b", embedder="hashing") as copy:
        copy.import_jsonl(never)
        copy.process_pending()
        assert copy.db.reader().execute("SELECT state, outcome FROM review_replays").fetchall() == [
            ("unmatched", "the rebuilt memory holds no such belief")]
        assert [b.confirmed_at for b in copy.beliefs("assertions")] == [None]       # nothing else was confirmed


def test_a_correction_applies_again_with_its_own_statement(tmp_path):
    with Memory.open(tmp_path / "original", embedder="hashing") as original:
        original.ingest(chat("I live in Shanghai.", at=T0, item="r1"))
        original.process_pending()
        original.correct(key_of(original, "lives_in", "Shanghai"), "Hangzhou")
        original.ingest(chat("I moved to Jiaxing.", at=T0 + 60, session="s2", item="r2"))
        original.process_pending()
        original.export_jsonl(tmp_path / "memory.jsonl")
        expected = beliefs_of(original)
    with Memory.open(tmp_path / "copy", embedder="hashing") as copy:
        copy.import_jsonl(tmp_path / "memory.jsonl")
        copy.process_pending()
        assert beliefs_of(copy) == expected
        assert [r["action"] for r in copy.reviews()] == ["correct"]


# ------------------------------------------------------------------ what is taken, and the report


def test_every_table_is_either_imported_or_rebuilt(memory):
    """A migration that adds a table must say which it is (user state to check, or derived to rebuild)."""
    from magi_desktop.core.export_schema import IMPORTED, REBUILT, TRANSLATION_ONLY, exported_tables

    names = {t.name for t in exported_tables(memory.db.reader())}
    assert names == set(IMPORTED) | set(REBUILT) and not set(IMPORTED) & set(REBUILT)
    assert set(TRANSLATION_ONLY) <= set(REBUILT)


def timeline_of(row, **changes):
    metadata = json.loads(row["metadata_json"])
    metadata["timeline"] |= changes
    row["metadata_json"] = json.dumps(metadata)


def test_an_event_goes_where_its_fields_send_it_and_one_they_cannot_describe_is_dropped(exported, tmp_path):
    export = edited(exported, "fact_events", lambda r: r["source_item_id"] == "u1",
                    lambda r: timeline_of(r, provenance="timer"), tmp_path / "a.jsonl")
    export = edited(export, "fact_events", lambda r: r["source_item_id"] == "v1",
                    lambda r: r.update(metadata_json='{"timeline": {"provenance": {"title": "no activity"}}}'),
                    tmp_path / "b.jsonl")
    with Memory.open(tmp_path / "copy", embedder="hashing") as memory:
        report = memory.import_jsonl(export).to_dict()
        conn = memory.db.reader()
        assert [t["evidence_class"] for t in trace_rows(conn, source_item_id="u1")] == [
            "system_runtime"]                                    # a timer's words are not the user's
        assert [r for r in event_rows(conn) if r["source_item_id"] in ("u1", "v1")] == []
        assert {(d["table"], d["reason"]) for d in report["dropped"]} == {
            ("fact_events", "unclassifiable: activity"), ("chat_extraction", "names no imported chat message")}
        assert ("fact_events", "(table)") in {(c["table"], c["column"]) for c in report["changed"]}
        # The fact that quoted it lost its proof with it.
        assert [f["evidence_type"] for f in memory.facts()] == ["unknown"]
        assert "I am allergic" not in json.dumps(report)          # ids in the report, never content


def test_magi_import_prints_what_it_changed(exported, tmp_path, capsys):
    from magi_desktop.cli import main

    export = edited(exported, "fact_events", lambda r: r["source_item_id"] == "v1",
                    lambda r: r.update(evidence_class="user_self_report"), tmp_path / "e.jsonl")
    assert main(["--data-dir", str(tmp_path / "copy"), "import", str(export), "--no-embed"]) == 0
    out = capsys.readouterr().out
    assert "changed fact_events.evidence_class in 1 row(s): re-derived from the stored payload fields" in out
    assert "rebuilt, not loaded:" in out and "kg_edges" in out
    assert main(["--data-dir", str(tmp_path / "again"), "import", str(export), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["changed"][0]["table"] == "fact_events" and report["events"] == 3
    with Memory.open(tmp_path / "again", embedder="hashing") as memory:          # the CLI ran the workers
        jobs = L2_PROJECTION_JOBS.counts(memory.db.reader())
        assert memory.pending_by_queue()["l2"] == 0 and jobs.get("done", 0) >= 2
