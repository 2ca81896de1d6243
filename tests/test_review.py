"""The user's review of beliefs through Memory: list, evidence trail, confirm, correct, delete, undo,
merge (architecture §11). Real core, rules provider."""
# Raw SQL left: the L2 queue put back to pending by hand, to rebuild L2 over a review (no API does that alone).

import pytest
from payloads import chat, sensor

from magi_desktop.core import Memory, ReviewError
from magi_desktop.core.store.l1 import event_rows

DAY = 86400.0
T0 = 1_760_000_000.0


def lives_in(memory, state=None):
    return [b for b in memory.beliefs("assertions", state=state) if b.relation == "lives_in"]


def reproject_everything(memory):
    """The same evidence processed again (a rebuild, a retried batch)."""
    with memory.db.transaction() as conn:
        conn.execute("UPDATE l2_projection_jobs SET state = 'pending', attempts = 0, next_attempt_at = 0")
    memory.process_pending()


@pytest.fixture
def moved(memory):
    memory.ingest(chat("I live in Shanghai.", at=T0, item="e1"))
    memory.ingest(chat("I moved to Jiaxing.", at=T0 + 30 * DAY, session="s2", item="e2"))
    memory.process_pending()
    return memory


def test_beliefs_by_category_and_state_with_their_evidence_trail(moved):
    current, = lives_in(moved, "current")
    old, = lives_in(moved, "history")
    assert (current.subject, current.value, current.category) == ("the user", "Jiaxing", "assertions")
    assert old.value == "Shanghai" and current.sources == ["chat"]
    trail = moved.evidence_trail(current.key)
    assert [e["source_item_id"] for e in trail["events"]] == ["e2"]
    event = trail["events"][0]
    assert event["author"] == "user" and event["evidence_class"] == "user_self_report"
    assert event["content"].endswith("I moved to Jiaxing.")
    assert [b.value for b in trail["replaced"]] == ["Shanghai"]
    assert moved.evidence_trail(old.key)["replaced_by"].key == current.key
    facts = moved.beliefs("facts", state="current")
    assert [(b.relation, b.value) for b in facts] == [("LIVES_IN", "Jiaxing")]
    assert moved.beliefs("facts", entity="jiaxing") and not moved.beliefs("facts", entity="hangzhou")
    assert moved.beliefs("assertions", source="chat") and not moved.beliefs("assertions", source="chrome")
    with pytest.raises(ValueError):
        moved.beliefs("everything")


def test_relationships_are_edges_between_people(memory):
    """The rules provider states no relation between people; one is written as a model's projection would."""
    from magi_desktop.core.l2 import graph
    from magi_desktop.core.l2.resolve import Resolved

    memory.ingest(chat("My sister Anna works at Alibaba.", at=T0, item="anna"))
    memory.process_pending()
    rowid = event_rows(memory.db.reader(), source_item_id="anna")[0]["id"]
    with memory.db.transaction() as conn:
        user = graph.ensure_entity(conn, Resolved(None, "the user", "person", fixed_key="@user"), T0)
        anna = graph.ensure_entity(conn, Resolved(None, "Anna", "person"), T0)
        graph.write_edge(conn, (user, "the user"), "FAMILY_OF", (anna, "Anna"), event_rowid=rowid, observed_at=T0,
                         confidence=0.7)
    relation, = memory.beliefs("relationships")
    assert (relation.subject, relation.relation, relation.value) == ("the user", "FAMILY_OF", "Anna")
    assert all(b.relation != "FAMILY_OF" for b in memory.beliefs("facts"))
    assert memory.evidence_trail(relation.key)["events"][0]["source_item_id"] == "anna"


def test_confirm_makes_it_stable_and_survives_a_restart(moved, tmp_path):
    current, = lives_in(moved, "current")
    review_id = moved.confirm(current.key)
    path = moved.path.parent
    moved.close()
    with Memory.open(path, embedder="hashing") as again:
        belief = again.belief(current.key)
        assert belief.status == "stable" and belief.confirmed_at is not None and belief.confidence >= 0.95
        edge, = again.beliefs("facts", state="current")
        assert edge.confirmed_at is not None              # the edge that stated it is confirmed with it
        assert again.evidence_trail(current.key)["reviews"][0]["review_id"] == review_id


def test_a_deleted_belief_never_comes_back_from_the_same_evidence(moved):
    current, = lives_in(moved, "current")
    moved.deny(current.key)
    assert lives_in(moved, "current") == [] and [b.value for b in lives_in(moved, "denied")] == ["Jiaxing"]
    assert moved.beliefs("facts", state="current") == []
    reproject_everything(moved)
    assert [b.value for b in lives_in(moved, "current")] == []
    assert [b.value for b in lives_in(moved, "denied")] == ["Jiaxing"]
    # Questions no longer see it, as current or as history.
    pack = moved.query("where do I live now?", now=T0 + 40 * DAY)
    assert not any(f.layer == "L2" and "Jiaxing" in f.text for f in pack.findings)
    # A statement made after the deletion is new evidence: the user said it again.
    moved.ingest(chat("I live in Jiaxing, really.", at=T0 + 50 * DAY, session="s3"))
    moved.process_pending()
    assert [b.value for b in lives_in(moved, "current")] == ["Jiaxing"]


def test_correct_writes_the_users_value_as_their_statement_and_supersedes(moved):
    current, = lives_in(moved, "current")
    review_id = moved.correct(current.key, "Hangzhou")
    now, = lives_in(moved, "current")
    assert now.value == "Hangzhou" and now.status == "stable" and now.confirmed_at is not None
    trail = moved.evidence_trail(now.key)
    statement, = trail["events"]
    assert statement["author"] == "user" and statement["evidence_class"] == "user_self_report"
    assert "Hangzhou" in statement["content"] and "Jiaxing" in statement["content"]
    assert {b.value for b in trail["replaced"]} == {"Jiaxing"}
    assert moved.belief(current.key).state == "history"
    assert [(b.relation, b.value) for b in moved.beliefs("facts", state="current")] == [("LIVES_IN", "Hangzhou")]
    # The correction is L1 evidence too: a question finds it.
    moved.process_pending()
    pack = moved.query("where do I live now?")
    assert any("Hangzhou" in f.text for f in pack.findings)
    assert moved.reviews()[0]["review_id"] == review_id
    with pytest.raises(ReviewError):
        moved.correct(now.key, "hangzhou")          # the same value


def test_undo_puts_back_confirm_delete_and_correct(moved):
    current, = lives_in(moved, "current")
    before = moved.belief(current.key)
    moved.undo(moved.confirm(current.key))
    assert moved.belief(current.key).status == before.status and moved.belief(current.key).confirmed_at is None
    moved.undo(moved.deny(current.key))
    assert moved.belief(current.key).state == "current"
    reproject_everything(moved)                     # the denial is gone with the undo
    assert [b.value for b in lives_in(moved, "current")] == ["Jiaxing"]
    events = moved.stats()["events"]["total"]
    correction = moved.correct(current.key, "Hangzhou")
    assert moved.stats()["events"]["total"] == events + 1
    moved.undo(correction)
    assert [b.value for b in lives_in(moved, "current")] == ["Jiaxing"]
    assert moved.stats()["events"]["total"] == events               # the correction's statement is gone
    assert not any(b.value == "Hangzhou" for b in moved.beliefs("assertions") + moved.beliefs("facts"))
    with pytest.raises(ReviewError):
        moved.undo(correction)                                         # twice
    assert [r["undone_at"] is not None for r in moved.reviews()] == [True, True, True]


def test_undo_out_of_order_is_refused(moved):
    current, = lives_in(moved, "current")
    first = moved.confirm(current.key)
    moved.deny(current.key)
    with pytest.raises(ReviewError, match="first"):
        moved.undo(first)


def test_actions_on_unknown_or_denied_beliefs_say_why(moved):
    with pytest.raises(ReviewError):
        moved.confirm("assertion:999999")
    with pytest.raises(ReviewError):
        moved.deny("edge:nope")
    current, = lives_in(moved, "current")
    moved.deny(current.key)
    with pytest.raises(ReviewError, match="already"):
        moved.deny(current.key)
    with pytest.raises(ReviewError):
        moved.confirm(current.key)


def test_entities_aliases_and_a_merge(memory):
    memory.ingest(sensor("listen_music", {"track_name": "Clair de lune", "artist_name": "Debussy"}, source="music",
                         at=T0, entities=[{"mention_text": "Debussy", "entity_type": "person"}]))
    memory.ingest(sensor("listen_music", {"track_name": "Arabesque", "artist_name": "C. Debussy"}, source="music",
                         at=T0 + 60, entities=[{"mention_text": "C. Debussy", "entity_type": "person"}]))
    memory.process_pending()
    found = {e["name"]: e for e in memory.entities()}
    keep, drop = found["Debussy"], found["C. Debussy"]
    memory.add_alias(keep["entity_id"], "Claude Debussy")
    memory.merge_entities(keep["entity_id"], drop["entity_id"])
    merged, = [e for e in memory.entities("debussy")]
    assert merged["entity_id"] == keep["entity_id"] and merged["events"] == 2
    assert set(merged["aliases"]) >= {"Claude Debussy", "C. Debussy"}
    with pytest.raises(ReviewError):
        memory.merge_entities(keep["entity_id"], drop["entity_id"])     # already merged
    assert memory.reviews()[0]["action"] == "merge"


def test_activity_by_day_counts_per_source(memory):
    memory.ingest(sensor("visit_page", {"url": "https://a.example"}, source="chrome", at=T0, item="v1"))
    memory.ingest(sensor("visit_page", {"url": "https://b.example"}, source="chrome", at=T0 + 60, item="v2"))
    memory.ingest(chat("hello", at=T0 + DAY))
    days = memory.activity_by_day(days=7, now=T0 + 2 * DAY)
    assert sum(days["chrome"].values()) == 2 and sum(days["chat"].values()) == 1
    assert memory.activity_by_day(days=1, now=T0 + 10 * DAY) == {}
