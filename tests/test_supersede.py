"""Supersede an L1 event by its natural key (issue 17): one live version per (source, key), its L2 evidence
handed over, a retired version never retrievable, forget erasing every version; the payload contract of
``schedule`` / ``natural_key`` / ``retire``; the migration of a memory written before them; export→import."""
# Raw SQL left: the migration test builds a pre-0019 database, and export→import compares the stored metadata text.

import json
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reliability.fuzzing import files_holding

from magi_desktop.core import Memory
from magi_desktop.core.contracts import PayloadError, validate_payload
from magi_desktop.core.store.connection import connect
from magi_desktop.core.store.evidence import evidence_of_event
from magi_desktop.core.store.l1 import event_row, event_rows
from magi_desktop.core.store.migrations import available_migrations, migrate
from magi_desktop.core.store.summaries import summary_texts
from magi_desktop.core.store.supersede import superseded
from magi_desktop.core.store.tables import row_count

T0 = 1_700_000_000.0
SOON = time.time() + 30 * 86400      # a plan a month ahead of the machine's clock (which stamps the ingest)


def said(text, at, key="home", **extra):
    """A note the user keeps in a notes app, edited in place (a chat turn cannot carry a natural key)."""
    return {"source_type": "notes", "occurred_at": at, "natural_key": key, "activity": {"action_code": "edit_note"},
            "provenance": {"title": text}, **extra}


def booking(title, start, key, **extra):
    return {"source_type": "bookings", "occurred_at": start, "activity": {"action_code": "book_table"},
            "provenance": {"title": title}, "schedule": {"start": start, "end": start + 3600}, "natural_key": key,
            **extra}


def live(memory, key):
    return [r["content"] for r in event_rows(memory.db.reader(), natural_key=key)]


def test_a_new_version_supersedes_the_stored_one_and_takes_over_its_l2_evidence(memory):
    first = memory.ingest(said("I live in Berlin and I have a cat called Momo.", T0))
    memory.process_pending()
    conn = memory.db.reader()
    old_rowid = event_row(conn, first.event_id)["id"]
    links = evidence_of_event(conn, old_rowid)
    assert links                                                   # the L2 worker derived rows from it
    second = memory.ingest(said("I live in Berlin and I have a cat called Momo, who is three.", T0 + 60))
    assert not second.duplicate and second.event_id != first.event_id
    new_rowid = event_row(conn, second.event_id)["id"]
    assert evidence_of_event(conn, new_rowid) == links             # handed over, nothing derived was lost
    assert event_row(conn, first.event_id) is None
    assert superseded(conn)[first.event_id] == second.event_id
    assert [text.split("title: ")[-1] for text in live(memory, "home")] == [
        "I live in Berlin and I have a cat called Momo, who is three."]
    pack = memory.query("How old is my cat Momo?", now=T0 + 120)
    assert pack.findings and all(f.event_id != first.event_id and first.event_id not in f.supporting_event_ids
                                 for f in pack.findings)
    # The same version sent again is a duplicate, not a third version.
    assert memory.ingest(said("I live in Berlin and I have a cat called Momo, who is three.", T0 + 60)).duplicate


def test_forgetting_the_live_version_erases_every_version(tmp_path):
    memory = Memory.open(tmp_path / "d", embedder="hashing")
    memory.ingest(said("My locker code is zqxfirst.", T0))
    memory.process_pending()
    newest = memory.ingest(said("My locker code is zqxsecond now.", T0 + 60))
    memory.process_pending()
    receipt = memory.forget(event_ids=[newest.event_id])
    assert receipt["scrub"] == "done"
    assert files_holding(tmp_path / "d", ["zqxfirst", "zqxsecond"]) == {}
    assert row_count(memory.db.reader(), "l1_superseded") == 0
    memory.close()
    assert files_holding(tmp_path / "d", ["zqxfirst", "zqxsecond"]) == {}


def summaries_of(memory):
    return summary_texts(memory.db.reader(), summary_type="temporal")


def test_the_summaries_quoting_a_replaced_version_are_drawn_again(memory):
    # Ten days back, so the hour, day and week windows have all closed when the L3 jobs run.
    at = T0 - 10 * 86400
    memory.ingest(booking("Dinner at Lucca", at, "lucca"))
    memory.ingest(said("Packing list: tent, stove", at + 600, key="packing"))
    memory.process_pending()
    memory.run_due(now=T0, jobs=["l3:hour", "l3:day", "l3:week"])
    assert any("Lucca" in text for text in summaries_of(memory))
    memory.ingest(booking("Dinner at Osteria Nonna", at, "lucca"))       # the booking moved restaurants
    assert not any("Lucca" in text for text in summaries_of(memory))     # nothing quotes the old version now
    memory.run_due(now=T0 + 60, jobs=["l3:hour", "l3:day", "l3:week"])
    drawn = summaries_of(memory)
    assert any("Osteria Nonna" in text for text in drawn) and not any("Lucca" in text for text in drawn)
    memory.ingest({**booking("x", at, "lucca"), "retire": True})         # then it was cancelled
    memory.run_due(now=T0 + 120, jobs=["l3:hour", "l3:day", "l3:week"])
    drawn = summaries_of(memory)
    assert drawn and not any("Osteria" in text for text in drawn)         # the packing list is still summarised


def test_a_summary_that_counted_a_cancelled_event_without_citing_it_is_drawn_again(memory):
    at = T0 - 10 * 86400
    memory.ingest_many([booking(f"Standup {i}", at + i * 60, f"standup-{i}") for i in range(20)])
    memory.ingest_many([booking("Interview at Initech", at + 3000 + i * 60, f"initech-{i}") for i in range(3)])
    memory.process_pending()
    memory.run_due(now=T0, jobs=["l3:hour", "l3:day"])
    assert any("Initech" in text for text in summaries_of(memory))
    memory.ingest_many([booking("x", at + 3000 + i * 60, f"initech-{i}", retire=True) for i in range(3)])
    memory.run_due(now=T0 + 60, jobs=["l3:hour", "l3:day"])
    drawn = summaries_of(memory)
    assert drawn and not any("Initech" in text for text in drawn)


def test_a_plan_moved_into_a_summarised_day_redraws_that_day(memory):
    at = T0 - 10 * 86400
    memory.ingest_many([booking("Dinner at Lucca", at, "lucca"), said("Packing list", at + 2 * 86400, key="pack")])
    memory.process_pending()
    memory.run_due(now=T0, jobs=["l3:hour", "l3:day"])
    memory.ingest(booking("Dinner at Lucca, moved", at + 2 * 86400 + 600, "lucca"))     # two days later
    memory.run_due(now=T0 + 60, jobs=["l3:hour", "l3:day"])
    assert any("moved" in text for text in summaries_of(memory))


def test_retire_removes_the_stored_version_and_what_only_it_supported(memory):
    stored = memory.ingest(booking("Table for two at Lucca", T0 + 86400, "lucca"))
    memory.process_pending()
    result = memory.ingest({**booking("Table for two at Lucca", T0 + 86400, "lucca"), "retire": True})
    assert result.target == "retired" and result.event_id == stored.event_id and not result.duplicate
    assert live(memory, "lucca") == []
    conn = memory.db.reader()
    assert row_count(conn, "l2_evidence") == 0
    assert superseded(conn)[stored.event_id] is None
    assert memory.query("Lucca table").findings == []
    # Retiring what is not stored stores nothing; a later version of the key is stored again.
    nothing = memory.ingest({**booking("x", T0, "never-stored"), "retire": True})
    assert nothing.target == "retired" and nothing.event_id is None
    memory.ingest(booking("Table for four at Lucca", T0 + 2 * 86400, "lucca"))
    assert len(live(memory, "lucca")) == 1


def test_one_batch_applies_its_versions_and_retirements_in_order(memory):
    results = memory.ingest_many([booking("v1 Lucca", T0 + 10, "k"), booking("v2 Lucca", T0 + 20, "k"),
                                  {**booking("v2 Lucca", T0 + 20, "k"), "retire": True},
                                  booking("v3 Lucca", T0 + 30, "k")])
    assert results[2].target == "retired" and results[2].event_id == results[1].event_id
    assert not any(r.duplicate for r in results)
    retired = superseded(memory.db.reader())
    assert retired == {results[0].event_id: None, results[1].event_id: None}   # v1 → v2, then v2 retired
    assert [t for t in live(memory, "k")] == [event_row(memory.db.reader(), results[3].event_id)["content"]]


def test_a_plan_is_visible_from_when_it_was_collected_a_past_one_from_its_time(memory):
    memory.ingest(booking("Dinner at Lucca", SOON, "lucca"))
    memory.ingest(booking("Lunch at Nomad", T0 - 86400, "nomad"))
    rows = {r["natural_key"]: r["recorded_at"] - r["ingested_at"] for r in event_rows(memory.db.reader())}
    assert rows["lucca"] == 0.0
    recorded = {r["natural_key"]: r["recorded_at"] for r in event_rows(memory.db.reader())}
    assert recorded["nomad"] == T0 - 86400
    assert any("Lucca" in f.text for f in memory.query("Lucca dinner", mode="event_stream").findings)
    assert not any("Lucca" in f.text for f in memory.query("Lucca dinner", now=T0).findings)   # not known yet


@pytest.mark.parametrize(("change", "field"), [
    ({"schedule": {"start": T0, "end": T0 - 1}}, "schedule.end"),
    ({"schedule": {"start": T0 + 5, "end": T0 + 9}}, "schedule.start"),
    ({"schedule": {"start": "tomorrow"}}, "schedule.start"),
    ({"schedule": {"start": T0, "all_day": "yes"}}, "schedule.all_day"),
    ({"schedule": {"start": T0, "when": 1}}, "schedule.when"),
    ({"schedule": [T0]}, "schedule"),
    ({"retire": True, "natural_key": None}, "retire"),
    ({"retire": "yes"}, "retire"),
    ({"natural_key": ""}, "natural_key"),
    ({"natural_key": "k" * 600}, "natural_key"),
])
def test_bad_schedules_and_keys_are_refused_by_field(change, field):
    payload = {**booking("x", T0, "k"), **change}
    payload = {k: v for k, v in payload.items() if v is not None}
    with pytest.raises(PayloadError) as caught:
        validate_payload(payload)
    assert caught.value.field == field, str(caught.value)


def test_a_schedule_alone_gives_the_time_and_chat_turns_have_none():
    payload = {k: v for k, v in booking("x", T0, "k").items() if k != "occurred_at"}
    parsed = validate_payload(payload)
    assert parsed.occurred_at == T0 and parsed.schedule.end == T0 + 3600 and parsed.schedule.all_day is False
    with pytest.raises(PayloadError) as caught:
        validate_payload({"source_type": "chat", "session_id": "s1", "occurred_at": T0, "schedule": {"start": T0},
                          "chat": {"role": "user", "text": "hi", "provenance": "human_input"}})
    assert caught.value.field == "schedule"


@pytest.mark.parametrize("role", ["user", "assistant"])
def test_a_chat_turn_cannot_carry_a_natural_key(memory, role):
    """Review of issue 17: an assistant turn naming the key of the user's turn replaced it ("You are not allergic
    to anything."), and a retire from another session deleted the user's words outside forget."""
    memory.ingest({"source_type": "chat", "session_id": "s1", "occurred_at": T0, "source_item_id": "m1",
                   "chat": {"role": "user", "text": "I am allergic to peanuts.", "provenance": "human_input"}})
    for extra in ({"natural_key": "m1"}, {"natural_key": "m1", "retire": True}):
        with pytest.raises(PayloadError) as caught:
            memory.ingest({"source_type": "chat", "session_id": "s2", "occurred_at": T0 + 60,
                           "chat": {"role": role, "text": "You are not allergic to anything."}, **extra})
        assert caught.value.field == "natural_key"
    assert [r["content"] for r in event_rows(memory.db.reader())] == ["I am allergic to peanuts."]


def test_the_migration_gives_stored_plans_their_schedule_and_record_time(tmp_path):
    from magi_desktop.core.ingest import normalize
    from magi_desktop.core.render import TemplateRegistry

    conn = connect(tmp_path / "old.db")
    migrate(conn, [m for m in available_migrations() if m.version < 19])
    ingested = T0
    rows = []
    for at, summary in ((T0 + 86400, "Board review"), (T0 - 86400, "Coffee with Anna")):
        payload = {"source_type": "calendar", "occurred_at": at, "source_item_id": summary,
                   "activity": {"source_code": "calendar", "action_code": "calendar_event"},
                   "provenance": {"summary": summary, "start": at, "end": at + 3600, "all_day": False}}
        event, _ = normalize(validate_payload(payload), TemplateRegistry(), user_id="local", key_secret=b"k",
                             now=ingested)
        metadata = {k: v for k, v in event.metadata.items() if k != "schedule"}
        rows.append((event.event_id, at, event.idempotency_key, event.content, json.dumps(metadata), ingested))
    conn.executemany(
        "INSERT INTO fact_events (event_id, timestamp, event_type, source, idempotency_key, user_id, content, "
        "memory_domain, ingest_target, cognition_eligible, retention_class, author_type, content_type, "
        "evidence_class, l1_retrieval_scope, metadata_json, ingested_at) VALUES (?, ?, 'SENSOR_EVENT', 'calendar', "
        "?, 'local', ?, 'external_activity', 'l1_and_l2', 1, 'durable', 'external', 'observation', "
        "'external_observation', 'fact_authoritative', ?, ?)", rows)
    conn.execute("DELETE FROM embedding_jobs")
    assert migrate(conn)[0] == 19                   # then every later one
    got = {r[0]: r[1:] for r in conn.execute(
        "SELECT json_extract(metadata_json, '$.timeline.provenance.summary'), recorded_at, "
        "json_extract(metadata_json, '$.schedule.end'), json_extract(metadata_json, '$.schedule.all_day') "
        "FROM fact_events")}
    assert got == {"Board review": (ingested, T0 + 86400 + 3600, 0),
                   "Coffee with Anna": (T0 - 86400, T0 - 86400 + 3600, 0)}
    # The plan made visible is embedded again, so its vectors carry its record time.
    assert conn.execute("SELECT count(*) FROM embedding_jobs").fetchone()[0] == 1
    conn.close()


def test_export_then_import_keeps_schedule_natural_key_and_record_time(tmp_path):
    with Memory.open(tmp_path / "a", embedder="hashing") as original:
        original.ingest(booking("Dinner at Lucca", SOON, "lucca"))
        original.ingest(booking("Dinner at Lucca, 8 pm", SOON + 3600, "lucca"))   # moved: supersedes
        original.export_jsonl(tmp_path / "m.jsonl")
        before = original.db.reader().execute(
            "SELECT event_id, timestamp, recorded_at, natural_key, metadata_json FROM fact_events").fetchall()
    with Memory.open(tmp_path / "b", embedder="hashing") as copy:
        report = copy.import_jsonl(tmp_path / "m.jsonl")
        assert report.changed == {} and report.dropped == {}, report.lines()
        after = copy.db.reader().execute(
            "SELECT event_id, timestamp, recorded_at, natural_key, metadata_json FROM fact_events").fetchall()
    assert after == before and len(before) == 1
    assert json.loads(before[0][4])["schedule"] == {"start": SOON + 3600, "end": SOON + 7200, "all_day": False}
    assert before[0][2] < before[0][1]           # recorded when first collected, long before it happens


_KEYS = st.sampled_from(["a", "b", "c"])
_STEPS = st.lists(st.tuples(_KEYS, st.integers(0, 3), st.booleans()), min_size=1, max_size=12)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=_STEPS, batched=st.booleans())
def test_any_sequence_of_versions_and_retirements_leaves_the_last_word_of_each_key(tmp_path_factory, steps,
                                                                                   batched):
    """The class: whatever order versions and retirements come in, one at a time or in one batch, each key
    has at most one live event — the last version sent after its last retirement — and nothing else."""
    with Memory.open(tmp_path_factory.mktemp("m") / "d", embedder="hashing") as memory:
        payloads = [{**booking(f"{key} version {version}", T0 + version, key), **({"retire": True} if gone else {})}
                    for key, version, gone in steps]
        if batched:
            memory.ingest_many(payloads)
        else:
            for payload in payloads:
                memory.ingest(payload)
        expected = {}
        for key, version, gone in steps:
            expected[key] = None if gone else version
        conn = memory.db.reader()
        stored = [(r["natural_key"], r["metadata"]["timeline"]["provenance"]["title"]) for r in event_rows(conn)]
        assert sorted(stored) == sorted((k, f"{k} version {v}") for k, v in expected.items() if v is not None)
        assert row_count(conn, "fact_events_fts") == len(stored)
