"""The store functions the L2 worker's SQL moved into (issue 18, item 2), where a caller's test would not tell
a wrong one apart: the IN-list helper, the savepoint, the belief filters, evidence copies, orphan entities and
the replays' outcome."""
# Raw SQL here: these test the store's L2 functions themselves (placeholders, a review_replays row set up by hand).

import json

import pytest
from payloads import chat, sensor

from magi_desktop.core.l2.constants import LIVE
from magi_desktop.core.store import assertions as store_assertions
from magi_desktop.core.store import beliefs, entities, evidence, graph, l1, review_replays, reviews
from magi_desktop.core.store.connection import placeholders, savepoint
from magi_desktop.core.store.projection import related_event_texts

T0 = 1_700_000_000.0


def test_placeholders_make_an_in_list_of_n_parameters(memory):
    assert placeholders(1) == "?"
    assert placeholders(3) == "?, ?, ?"
    conn = memory.db.reader()
    assert conn.execute(f"SELECT 2 IN ({placeholders(3)})", (1, 2, 3)).fetchone()[0] == 1


def test_a_savepoint_undoes_only_its_own_writes_when_it_fails(memory):
    with memory.db.transaction() as conn:
        entities.add_entity(conn, "Kept", "kept", "person", T0)
        with pytest.raises(RuntimeError), savepoint(conn, "inner"):
            entities.add_entity(conn, "Dropped", "dropped", "person", T0)
            raise RuntimeError("the nested part fails")
        with savepoint(conn, "inner"):
            entities.add_entity(conn, "Also kept", "also kept", "person", T0)
    conn = memory.db.reader()
    assert entities.entity_status_by_key(conn, "kept", "person") is not None
    assert entities.entity_status_by_key(conn, "also kept", "person") is not None
    assert entities.entity_status_by_key(conn, "dropped", "person") is None


def _event(memory, text: str, item: str) -> int:
    memory.ingest(chat(text, at=T0, item=item))
    return memory.db.reader().execute("SELECT id FROM fact_events WHERE source_item_id = ?", (item,)).fetchone()[0]


def test_belief_rows_filter_by_state_entity_and_the_objects_type(memory):
    rowid = _event(memory, "Nothing the rules provider projects.", "e1")
    with memory.db.transaction() as conn:
        anna = entities.add_entity(conn, "Anna", "anna", "person", T0)
        acme = entities.add_entity(conn, "Acme", "acme", "organization", T0)
        live = store_assertions.add_assertion(conn, anna, "works_at", "Acme", "acme", "long", 0.5, T0, None, None,
                                              None)
        denied = store_assertions.add_assertion(conn, anna, "likes", "Jazz", "jazz", "long", 0.5, T0, None, None,
                                                None)
        old = store_assertions.add_assertion(conn, anna, "lives_in", "Rome", "rome", "long", 0.5, T0 - 1, None, None,
                                             None)
        reviews.deny_row(conn, "assertion", str(denied), T0)
        store_assertions.expire(conn, old, T0)
        graph.add_edge(conn, "t-acme", anna, "WORKS_AT", acme, 0.5, T0, None, "Anna WORKS_AT Acme")
        evidence.link_evidence(conn, "edge", "t-acme", rowid)

    conn = memory.db.reader()

    def keys(kind: str, **filters) -> list[str]:
        args = {"state": None, "entity": None, "source": None, "limit": 100} | filters
        return [row[0] for row in beliefs.belief_rows(conn, kind, LIVE, **args)]

    assert keys("assertion", state="current") == [f"assertion:{live}"]
    assert keys("assertion", state="denied") == [f"assertion:{denied}"]
    assert keys("assertion", state="history") == [f"assertion:{old}"]
    assert keys("assertion", entity="jazz") == [f"assertion:{denied}"]       # matched in the value
    assert set(keys("assertion", entity="ANNA")) == {f"assertion:{a}" for a in (live, denied, old)}
    assert keys("edge", object_types=("person", "creator")) == []
    assert keys("edge", object_types=("person", "creator"), other_object_types=True) == ["edge:t-acme"]
    assert keys("edge", source="chat") == ["edge:t-acme"] and keys("edge", source="chrome") == []
    assert beliefs.belief_row(conn, "assertion", live)[0] == f"assertion:{live}"
    assert beliefs.belief_row(conn, "edge", "t-nothing") is None


def test_copy_evidence_ties_another_row_to_the_same_events_once(memory):
    rowid = _event(memory, "One event.", "e2")
    with memory.db.transaction() as conn:
        evidence.link_evidence(conn, "assertion", 1, rowid)
        evidence.copy_evidence(conn, "assertion", "1", "2")
        evidence.copy_evidence(conn, "assertion", "1", "2")
        evidence.copy_evidence(conn, "edge", "1", "3")          # another kind's row 1 has no events
    conn = memory.db.reader()
    assert evidence.evidence_events(conn, "assertion", "2") == [rowid]
    assert evidence.evidence_count(conn, "assertion", "2") == 1
    assert evidence.evidence_events(conn, "edge", "3") == []


def test_drop_orphan_entities_keeps_the_user_and_what_is_outside_among(memory):
    with memory.db.transaction() as conn:
        user = entities.add_entity(conn, "the user", "@user", "person", T0)
        lone = entities.add_entity(conn, "Lone", "lone", "thing", T0)
        other = entities.add_entity(conn, "Other", "other", "thing", T0)
        assert entities.drop_orphan_entities(conn, "@user", [lone]) == 1
        assert entities.entity_status(conn, lone) is None and entities.entity_status(conn, other) is not None
        assert entities.drop_orphan_entities(conn, "@user", None) >= 1
        assert entities.entity_status(conn, user) is not None


def test_a_decided_replay_keeps_its_kind_only(memory):
    with memory.db.transaction() as conn:
        replay_id = conn.execute(
            "INSERT INTO review_replays (action, target_json, detail_json, reviewed_at) VALUES (?, ?, ?, ?)",
            ("confirm", json.dumps({"kind": "edge", "subject": ["anna", "person"]}), '{"value": "x"}', T0)).lastrowid
        assert review_replays.first_pending_hold(conn) == (None,)
        review_replays.decide(conn, replay_id, "unmatched", "no such belief", None)
        assert review_replays.first_pending_hold(conn) is None
        assert review_replays.replay_counts(conn) == {"unmatched": 1}
        row = conn.execute("SELECT target_json, detail_json, outcome FROM review_replays").fetchone()
    assert (json.loads(row[0]), row[1], row[2]) == ({"kind": "edge"}, "{}", "no such belief")


def test_related_events_are_the_newest_of_all_history_whether_found_among_the_recent_or_not(memory):
    """store.projection.related_event_texts looks through the ``recent`` events before the batch first and reads
    all history only when they hold fewer than asked: the answer is the same either way (issue 20)."""
    names = ["Ana", "Ana", None, None, "Bo", None, None, None, "Ana", None]
    for i, name in enumerate(names):
        hints = [{"mention_text": name, "entity_type": "person"}] if name else []
        memory.ingest(sensor("listen_music", {"track_name": f"track {i}", "artist_name": "someone"}, source="music",
                             at=T0 + i, item=f"r{i}", entities=hints))
    conn = memory.db.reader()

    def content(i: int) -> str:
        return l1.message_with_item_id(conn, "music", f"r{i}")[1]

    ana, bo = entities.active_entity_id(conn, "ana"), entities.active_entity_id(conn, "bo")
    for recent in (1, 2, 3, 5, 100):
        assert related_event_texts(conn, [ana], T0 + 100, [], 3, recent) == [content(8), content(1), content(0)]
        assert related_event_texts(conn, [ana, bo], T0 + 100, [], 3, recent) == [content(8), content(4), content(1)]
        assert related_event_texts(conn, [ana], T0 + 5, [], 3, recent) == [content(1), content(0)]
        assert related_event_texts(conn, [bo], T0 + 4, [], 3, recent) == []
