"""Each service of Memory built alone (issue 18): a Database on a temporary path and the real collaborators,
no Memory."""

import threading
import time

import pytest
from payloads import chat, sensor

from magi_desktop.core import extraction, l2
from magi_desktop.core.embed import resolve_embedder
from magi_desktop.core.l0 import WorkingMemory
from magi_desktop.core.llm import RulesLLM
from magi_desktop.core.remember import RememberRejected
from magi_desktop.core.render import TemplateRegistry
from magi_desktop.core.services.agents import AgentDesk
from magi_desktop.core.services.belief_review import BeliefReview
from magi_desktop.core.services.collector_state import CollectorState
from magi_desktop.core.services.fact_book import FactBook
from magi_desktop.core.services.forgetting import Forgetting
from magi_desktop.core.services.ingestion import Ingestion
from magi_desktop.core.services.normalizer import Normalizer
from magi_desktop.core.services.periodic import PeriodicJobs
from magi_desktop.core.services.processing import Processing
from magi_desktop.core.services.redactor import Redactor
from magi_desktop.core.services.search_index import SearchIndex
from magi_desktop.core.services.sessions import Sessions
from magi_desktop.core.services.statistics import Statistics
from magi_desktop.core.services.storage import Storage
from magi_desktop.core.services.transfer import Transfer
from magi_desktop.core.store import Database
from magi_desktop.core.store.entities import EntityLinker
from magi_desktop.core.store.l1 import event_row, insert_events
from magi_desktop.core.store.vectors import ensure_vector_index

TURN = [{"id": "m1", "role": "user", "text": "Note: my sister's name is Anna.", "provenance": "human_input"}]


@pytest.fixture
def db(tmp_path):
    database = Database(tmp_path / "memory.db")
    yield database
    database.close()


@pytest.fixture
def normalizer():
    return Normalizer(TemplateRegistry(), user_id="local", key_secret=b"k" * 32)


def llm():
    return RulesLLM({**l2.RULE_HANDLERS, **extraction.RULE_HANDLERS})


def store(db, normalizer, linker, *payloads):
    events = [normalizer(p, time.time())[0] for p in payloads]
    with db.transaction() as conn:
        stored = insert_events(conn, events)
        linker.link(conn, [(s.rowid, e) for s, e in zip(stored, events, strict=True)])
    return stored


def test_ingestion_and_sessions(db, normalizer):
    linker, l0, notified = EntityLinker(), WorkingMemory(), []
    ingestion = Ingestion(db, normalizer, linker=linker, l0=l0, notify=lambda: notified.append("ingest"))
    ingestion.ingest(sensor("listen_music", {"track_name": "Arabesque"}, source="music", item="m-1",
                            entities=[{"mention_text": "Debussy", "entity_type": "person"}]))
    first = ingestion.ingest(chat("Play more Debussy tonight.", session="s1"))
    again = ingestion.ingest_many([chat("Play more Debussy tonight.", session="s1"), {"source_type": "chat"}],
                                  on_error="report")
    assert event_row(db.reader(), first.event_id)["content"].endswith("Play more Debussy tonight.")
    assert again[0].duplicate and again[1].error is not None and notified == ["ingest", "ingest"]
    sessions = Sessions(db, linker=linker, l0=l0)
    assert sessions.working_memory("s1")["focus_entities"] == ["Debussy"]
    with pytest.raises(ValueError, match="goal is empty"):
        sessions.set_goal("s1", " ")
    sessions.end_session("s1")
    assert sessions.working_memory("s1") is None


def test_fact_book(db):
    facts = FactBook(db, llm())
    fact_id = facts.remember("my sister's name is Anna", "The user's sister is Anna.", TURN, category="relation")
    assert [f["fact_id"] for f in facts.facts()] == [fact_id]
    assert facts.fact(fact_id)["source_message"] is None      # m1 was never stored as an event
    with pytest.raises(RememberRejected):
        facts.remember("my brother", "The user has a brother.", TURN)
    assert facts.delete_fact(fact_id) and facts.facts() == []


def test_collector_state(db):
    state = CollectorState(db)
    assert state.plugin_cursor("git") is None
    state.save_plugin_cursor("git", {"head": "abc"})
    state.save_collector_status("git", {"runs": 2})
    assert state.plugin_cursor("git") == {"head": "abc"} and state.collector_statuses() == {"git": {"runs": 2}}


def test_storage(db):
    storage = Storage(db)
    assert storage.backups() == [] and storage.storage_status()["writable"]
    made = storage.backup_now()
    assert [b["path"] for b in storage.backups()] == [made["path"]]
    assert storage.backup_if_due() == {"made": None}                  # the newest is not a day old


def test_agent_desk(db):
    facts = FactBook(db, llm())
    desk = AgentDesk(db, facts)
    desk.record_agent_call("claude", "memory_query")
    desk.record_agent_call("claude", "remember", rejected="quote_not_found")
    usage = desk.agent_usage()
    assert [(u["client"], u["queries"], u["rejections"]) for u in usage] == [("claude", 1, 1)]
    facts.remember("my sister's name is Anna", "The user's sister is Anna.", TURN)
    assert [f["content"] for f in desk.user_snapshot()["facts"]] == ["The user's sister is Anna."]


def test_belief_review_and_search_index(db, normalizer):
    linker, notified = EntityLinker(), []
    review = BeliefReview(db, linker, normalizer, lambda: notified.append("review"))
    store(db, normalizer, linker, chat("I live in Oslo"))
    l2.process(db, llm(), linker)
    assert review.entities(search="Oslo")
    with pytest.raises(l2.review.ReviewError):
        review.correct("no-such-belief", "Hangzhou")
    index = SearchIndex(db, lambda: notified.append("index"))
    assert index.reindex() == 1 and notified == ["index"]


def test_processing_and_periodic_jobs(db, normalizer):
    embedder, linker, lock, l0 = resolve_embedder("hashing"), EntityLinker(), threading.Lock(), WorkingMemory()
    with db.writer() as conn:
        ensure_vector_index(conn, embedder.name, embedder.dimension)
    processing = Processing(db, embedder, llm(), linker=linker, lock=lock, vectors_ready=lambda: True)
    store(db, normalizer, linker, chat("I have a cat called Miso"))
    assert processing.queue_state().due == {"embedding": 1, "l2": 1, "l4": 0, "facts": 0}
    report = processing.process_pending()
    assert (report.embedded, report.projected, report.handled) == (1, 1, 2)
    assert processing.queue_state().done and processing.process_pending().handled == 0
    storage, forgetting = Storage(db), Forgetting(db, lock=lock, linker=linker, l0=l0)
    periodic = PeriodicJobs(db, llm(), lock=lock, linker=linker, l0=l0, storage=storage, forgetting=forgetting,
                            notify=lambda: None)
    due = periodic.run_due(jobs=("maintenance",))
    assert set(due) == {"forget", "l2_maintenance", "l0_sessions_ended"} and due.l3 is None


def test_forgetting(db, normalizer):
    linker, l0 = EntityLinker(), WorkingMemory()
    store(db, normalizer, linker, chat("I have a cat called Miso", item="e1"), chat("I live in Oslo", item="e2"))
    forgetting = Forgetting(db, lock=threading.Lock(), linker=linker, l0=l0)
    receipt = forgetting.forget(source_item_ids=["e1"])
    assert receipt["removed"]["fact_events"] == 1 and not forgetting.forget_pending()
    assert [r["receipt_id"] for r in forgetting.forget_receipts(source_item_id="e1")] == [receipt["receipt_id"]]


def test_redactor_transfer_and_statistics(db, normalizer, tmp_path):
    linker, lock, l0 = EntityLinker(), threading.Lock(), WorkingMemory()
    redactor = Redactor(db, lock=lock, linker=linker, normalize=normalizer, notify=lambda: None)
    assert redactor.redact_stored(dry_run=True)["changed"] == {}
    store(db, normalizer, linker, chat("I have a cat called Miso"))
    review = BeliefReview(db, linker, normalizer, lambda: None)
    transfer = Transfer(db, lock=lock, linker=linker, normalize=normalizer, belief_review=review,
                        notify=lambda: None)
    assert transfer.export_jsonl(tmp_path / "out.jsonl")["fact_events"] == 1
    embedder = resolve_embedder("hashing")
    statistics = Statistics(db, embedder, llm(), vectors_ready=lambda: True, l0=l0,
                            collector_state=CollectorState(db), storage=Storage(db), redactor=redactor)
    stats = statistics.stats()
    assert stats.event_count == 1 and stats["events"]["by_source"] == {"chat": 1} and stats.writable
    assert stats.to_dict()["redaction"] == redactor.redaction_status()


def test_memory_settings_that_ingest_uses_live_on_its_normalizer(tmp_path):
    from magi_desktop.core import Memory
    from magi_desktop.core.redact import CURRENT

    memory = Memory.open(tmp_path / "m", embedder="hashing")
    try:
        with pytest.warns(DeprecationWarning, match="one memory is one person"):
            memory.user_id = "anna"
        older = CURRENT.without("high_entropy")
        memory.redaction = older
        stored = memory.ingest(chat("I live in Porto."))
        event = memory.get_event(stored.event_id)
        assert event["user_id"] == "anna" and memory.redaction is older and memory._normalize.rules is older
        assert memory.templates is memory._normalize.templates
        assert Memory.user_id.__doc__.startswith("The user new events are stored for. Deprecated")
    finally:
        memory.close()
