"""Memory.ingest / ingest_many: normalisation, dedupe, atomic batches, routing, counters."""

import threading

import pytest
from payloads import chat, sensor

from magi_desktop.core import Memory, PayloadError
from magi_desktop.core.store.l1 import event_rows, trace_rows
from magi_desktop.core.store.tables import row_count

MUSIC = sensor("listen_music", {"track_name": "End Of An Era", "artist_name": "Dua Lipa", "play_duration_sec": 206},
               source="netease_music", item="netease_3381201487_1779005740382", at=1779005740.382,
               entities=[{"mention_text": "Dua Lipa", "entity_type": "person"},
                         {"mention_text": "End Of An Era", "entity_type": "media"}],
               tags=["music"], l2_batch_owner="netease-catchup-1")


def count(memory, table="fact_events"):
    return row_count(memory.db.reader(), table)


def test_sensor_payload_becomes_a_full_memory_event(memory):
    result = memory.ingest(MUSIC)
    assert not result.duplicate and result.target == "l1_and_l2"
    event = memory.get_event(result.event_id)
    assert len(event["event_id"]) == 26
    assert event == {
        **event,
        "timestamp": 1779005740.382,
        "event_type": "SENSOR_EVENT",
        "source": "netease_music",
        "source_item_id": "netease_3381201487_1779005740382",
        "idempotency_key": "netease_3381201487_1779005740382",
        "session_id": None,
        "user_id": "local",
        "content": "NetEase Music: Listened to “End Of An Era” by Dua Lipa for 3 min 26 s",
        "memory_domain": "external_activity",
        "ingest_target": "l1_and_l2",
        "cognition_eligible": True,
        "retention_class": "compressible",
        "author_type": "external",
        "content_type": "observation",
        "evidence_class": "external_observation",
        "l1_retrieval_scope": "fact_authoritative",
    }
    meta = event["metadata"]
    assert meta["structured_entity_hints"] == [{"mention_text": "Dua Lipa", "entity_type": "person"},
                                               {"mention_text": "End Of An Era", "entity_type": "media"}]
    assert meta["timeline"]["provenance"]["play_duration_sec"] == 206
    assert meta["timeline"]["activity"]["action_code"] == "listen_music"
    assert meta["tags"] == ["music"] and meta["l2_batch_owner"] == "netease-catchup-1"


def test_same_payload_twice_is_stored_once(memory):
    first = memory.ingest(MUSIC)
    second = memory.ingest(MUSIC)
    assert second.duplicate and second.event_id == first.event_id
    assert count(memory) == 1 and count(memory, "embedding_jobs") == 1
    assert memory.stats()["sources"]["netease_music"] == {
        "accepted": 1, "duplicates": 1, "rejected": 0, "last_rejection": None}


def test_dedupe_key_is_source_event_type_and_item_id(memory):
    memory.ingest(MUSIC)
    changed_text = {**MUSIC, "provenance": {"track_name": "Other"}}
    assert memory.ingest(changed_text).duplicate  # same item id: a re-send, whatever it says now
    other_source = {**MUSIC, "source_type": "spotify", "activity": {"action_code": "listen_music"}}
    assert not memory.ingest(other_source).duplicate
    assert count(memory) == 2


def test_chat_without_item_id_dedupes_on_what_it_says(memory):
    a = memory.ingest(chat("I have a cat", at=1.7e9))
    assert memory.ingest(chat("I have a cat", at=1.7e9)).duplicate
    assert memory.ingest(chat("I have a cat", at=1.7e9 + 60)).event_id != a.event_id
    assert not memory.ingest(chat("I have two cats", at=1.7e9)).duplicate
    assert count(memory) == 3


def test_ids_that_differ_only_in_a_secret_are_different_events(memory):
    a = sensor("visit_page", {"url": "https://music.example.com/play"}, source="chrome",
               item="https://music.example.com/play?sid=1001")
    b = {**a, "source_item_id": "https://music.example.com/play?sid=2002"}
    first, second = memory.ingest(a), memory.ingest(b)
    assert not second.duplicate and second.event_id != first.event_id
    assert memory.ingest(b).duplicate  # replay still dedupes
    # (The two visits also make an activity block of their site's hour, test_aggregation.py: not looked at here.)
    rows = [(r["source_item_id"], r["idempotency_key"]) for r in event_rows(memory.db.reader())
            if r["event_id"] in (first.event_id, second.event_id)]
    assert [item for item, _ in rows] == ["https://music.example.com/play?sid=[REDACTED]"] * 2
    assert all(key.startswith("hmac:") and "1001" not in key and "2002" not in key for _, key in rows)


def test_replay_dedupes_after_the_redaction_rules_grew(tmp_path):
    from magi_desktop.core.redact import CURRENT

    payload = sensor("run_command", {"command": "ls"}, source="terminal", item="cmd?sid=4711")
    older = CURRENT.without("url_param")           # as if an older version did not redact "sid="
    with Memory.open(tmp_path / "m", embedder="hashing", redaction=older) as memory:
        first = memory.ingest(payload)
    assert first.event_id
    with Memory.open(tmp_path / "m", embedder="hashing") as memory:
        assert memory.get_event(first.event_id)["idempotency_key"] == "cmd?sid=4711"
        again = memory.ingest(payload)
        assert again.duplicate and again.event_id == first.event_id
        memory.redact_stored()                    # the stored id and key lose the secret; replays still dedupe
        stored = memory.get_event(first.event_id)
        assert "4711" not in stored["source_item_id"] and stored["idempotency_key"].startswith("hmac:")
        again = memory.ingest(payload)
        assert again.duplicate and again.event_id == first.event_id
        assert count(memory) == 1


def test_texts_that_differ_only_in_a_secret_are_different_events(memory):
    one = memory.ingest(chat("my password is hunter2", at=1.7e9))
    two = memory.ingest(chat("my password is swordfish", at=1.7e9))
    assert not two.duplicate and one.event_id != two.event_id
    assert memory.ingest(chat("my password is swordfish", at=1.7e9)).duplicate


def test_dedupe_survives_reopening(tmp_path):
    path = tmp_path / "reopen"
    with Memory.open(path, embedder="hashing") as mem:
        mem.ingest(chat("I have a cat"))
    with Memory.open(path, embedder="hashing") as mem:
        assert mem.ingest(chat("I have a cat")).duplicate


def test_duplicates_inside_one_batch(memory):
    results = memory.ingest_many([MUSIC, chat("hello"), MUSIC])
    assert [r.duplicate for r in results] == [False, False, True]
    assert results[2].event_id == results[0].event_id
    assert count(memory) == 2


def test_batch_with_a_bad_payload_writes_nothing_and_names_the_field(memory):
    bad = chat("hi")
    bad["chat"]["role"] = "robot"
    batch = [MUSIC, chat("I have a cat"), bad, chat("I live in Paris")]
    with pytest.raises(PayloadError) as caught:
        memory.ingest_many(batch)
    assert caught.value.index == 2 and caught.value.field == "chat.role"
    assert "payloads[2].chat.role" in str(caught.value)
    for table in ("fact_events", "embedding_jobs", "chat_sessions", "runtime_traces", "fact_events_fts"):
        assert count(memory, table) == 0, table
    assert memory.stats()["sources"]["chat"]["rejected"] == 1


def test_report_mode_stores_the_good_and_reports_the_bad(memory):
    batch = [chat("I have a cat"), {"source_type": "chat"}, "garbage", MUSIC]
    results = memory.ingest_many(batch, on_error="report")
    assert [r.ok for r in results] == [True, False, False, True]
    assert results[1].error.field == "chat" and results[1].error.index == 1
    assert results[2].error.field == "payload"
    assert count(memory) == 2
    sources = memory.stats()["sources"]
    assert sources["chat"]["rejected"] == 1 and sources["(invalid source)"]["rejected"] == 1
    assert "payloads[1].chat" in sources["chat"]["last_rejection"]


def test_single_bad_payload_raises_without_batch_position(memory):
    with pytest.raises(PayloadError) as caught:
        memory.ingest({"source_type": "chat", "session_id": "s", "occurred_at": 1.7e9})
    assert caught.value.index is None and str(caught.value).startswith("chat:")


def test_tool_runs_and_system_turns_go_to_runtime_traces(memory):
    run = {"source_type": "runtime", "occurred_at": 1.7e9, "session_id": "s1",
           "action": {"tool": "web_search", "category": "search", "ok": False, "duration_ms": 1200.0,
                      "input": {"q": "air fryer"}, "error": "HTTP 503"}}
    timer = chat("Reminder: stand up", provenance="timer")
    results = memory.ingest_many([run, timer])
    assert [r.target for r in results] == ["runtime_trace", "runtime_trace"]
    assert count(memory) == 0 and count(memory, "embedding_jobs") == 0
    rows = [tuple(t[c] for c in ("tool", "category", "ok", "duration_ms", "error", "evidence_class", "author_type"))
            for t in trace_rows(memory.db.reader())]
    assert rows == [("web_search", "search", 0, 1200.0, "HTTP 503", "system_runtime", "tool"),
                    (None, None, None, None, None, "system_runtime", "system")]
    assert memory.ingest(run).duplicate


def test_ephemeral_payloads_stay_in_working_memory_only(memory):
    result = memory.ingest(chat("scratch: trying option B", session="w1", ephemeral=True))
    assert result.target == "l0_only" and not result.duplicate
    assert count(memory) == 0
    [event] = memory.working_events("w1")
    assert event.content == "scratch: trying option B" and event.l1_retrieval_scope == "ephemeral"
    memory.end_session("w1")
    assert memory.working_events("w1") == []


def test_assistant_turn_is_stored_but_not_fact_scope(memory):
    event = memory.get_event(memory.ingest(chat("You live by West Lake.", role="assistant")).event_id)
    assert (event["evidence_class"], event["l1_retrieval_scope"], event["author_type"]) == \
        ("assistant_response", "conversation_only", "assistant")


def test_user_id_from_memory_or_payload(tmp_path):
    """Deprecated (tests/test_one_person.py), and stored as before for this release."""
    with pytest.warns(DeprecationWarning, match="one memory is one person"):
        mem = Memory.open(tmp_path / "u", embedder="hashing", user_id="alice")
    a = mem.get_event(mem.ingest(chat("hi there friend")).event_id)
    with pytest.warns(DeprecationWarning, match="one memory is one person"):
        b = mem.get_event(mem.ingest(chat("hi there friend", user_id="bob")).event_id)
    assert (a["user_id"], b["user_id"]) == ("alice", "bob")
    mem.close()


def test_unknown_llm_provider_is_refused(tmp_path):
    with pytest.raises(ValueError, match="not available"):
        Memory.open(tmp_path / "x", embedder="hashing", llm="gpt-9")


def test_concurrent_ingest_from_threads(memory):
    errors = []

    def worker(n):
        try:
            for i in range(100):
                memory.ingest(chat(f"thread {n} message {i}", session=f"t{n}", at=1.7e9 + i))
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert count(memory) == 400
    assert count(memory, "chat_sessions") == 4


def test_a_field_no_template_can_show_falls_back_to_another_form(memory):
    event = memory.get_event(memory.ingest(
        sensor("calendar_event", {"summary": "Launch", "start": 1e20, "end": 1e20 + 60}, source="calendar")).event_id)
    assert event["content"] == "Calendar: Calendar event “Launch”"


def test_a_payload_that_breaks_normalisation_is_rejected_alone(memory, monkeypatch, caplog):
    good = chat("I have a cat")
    odd = sensor("explode", {"x": 1}, source="lab")
    original = memory.templates.render

    def render(payload):
        if payload.source_type == "lab":
            raise RuntimeError("template bug")
        return original(payload)

    monkeypatch.setattr(memory.templates, "render", render)
    results = memory.ingest_many([good, odd], on_error="report")
    assert results[0].ok and not results[1].ok
    assert results[1].error.field == "payload" and "bug" in results[1].error.reason
    assert count(memory) == 1
    assert "template bug" in caplog.text


def test_a_failed_batch_leaves_no_stale_entity_ids(memory, monkeypatch):
    import magi_desktop.core.services.ingestion as ingestion_module

    music = sensor("listen_music", {"track_name": "Arabesque"}, source="music", item="m-1",
                   entities=[{"mention_text": "Debussy", "entity_type": "person"}])

    def explode(*args, **kwargs):
        raise RuntimeError("disk full")

    with monkeypatch.context() as failing:
        failing.setattr(ingestion_module, "count_ingest", explode)
        with pytest.raises(RuntimeError):
            memory.ingest(music)
    assert count(memory, "entity_catalog") == 0
    memory.ingest(music)  # would hit a foreign-key error if a rolled-back entity id were reused
    assert count(memory, "l1_event_entities") == 1


def test_empty_batch(memory):
    assert memory.ingest_many([]) == []


def test_closed_memory_refuses_work(tmp_path):
    mem = Memory.open(tmp_path / "c", embedder="hashing")
    mem.close()
    with pytest.raises(RuntimeError, match="closed"):
        mem.ingest(chat("hello"))
