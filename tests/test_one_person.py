"""One memory is one person: ``user_id`` is deprecated wherever it is accepted (core/deprecation.py) — a warning
that points at the caller, and the behaviour of before for this release."""

import warnings

import pytest
from payloads import chat

from magi_desktop.core import Memory
from magi_desktop.core.store.l1 import event_rows

ONE_PERSON = "one memory is one person"


def test_opening_for_another_user_warns_at_the_caller_and_still_stores_for_them(tmp_path):
    with pytest.warns(DeprecationWarning, match=ONE_PERSON) as caught:
        memory = Memory.open(tmp_path / "m", embedder="hashing", user_id="bob")
    try:
        assert [w.filename for w in caught] == [__file__]
        assert "separate data folders" in str(caught[0].message)
        with warnings.catch_warnings():
            warnings.simplefilter("error")          # the rest of the memory's calls say nothing more
            stored = memory.ingest(chat("I live in Porto."))
            assert memory.get_event(stored.event_id)["user_id"] == "bob"
            assert memory.user_id == "bob"
    finally:
        memory.close()


def test_a_memory_opened_for_another_user_still_answers_from_everything(tmp_path):
    """Why it is deprecated: the separation it names was never there."""
    with Memory.open(tmp_path / "m", embedder="hashing") as mine:
        mine.ingest(chat("My cat is called Miso.", item="mine"))
    with pytest.warns(DeprecationWarning), Memory.open(tmp_path / "m", embedder="hashing", user_id="bob") as bob:
        pack = bob.query("What is my cat called?", now=1_700_000_100.0)
    assert "mine" in {f.source_item_id for f in pack.findings}


def test_the_default_user_is_no_warning(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with Memory.open(tmp_path / "a", embedder="hashing") as memory:
            memory.ingest(chat("hello there", user_id="local"))
            memory.ingest_many([chat("and again", item="x"), chat("once more", item="y", user_id=None)])
            memory.ingest_turn(chat("a turn", item="t"), retry_within=120)
            memory.user_id = "local"
        Memory.open(tmp_path / "b", embedder="hashing", user_id="local").close()


def test_setting_another_user_warns_at_the_assignment(memory):
    with pytest.warns(DeprecationWarning, match=ONE_PERSON) as caught:
        memory.user_id = "anna"
    assert [w.filename for w in caught] == [__file__]
    assert memory.get_event(memory.ingest(chat("hi there")).event_id)["user_id"] == "anna"


@pytest.mark.parametrize("call", ["ingest", "ingest_many", "ingest_turn"])
def test_a_payloads_user_id_warns_once_per_call_at_the_caller(memory, call):
    payloads = [chat("first", item="a", user_id="bob"), chat("second", item="b", user_id="carol")]
    with pytest.warns(DeprecationWarning, match="a payload's user_id: " + ONE_PERSON) as caught:
        if call == "ingest":
            stored = [memory.ingest(payloads[0])]
        elif call == "ingest_many":
            stored = memory.ingest_many(payloads)
        else:
            stored = [memory.ingest_turn(payloads[0], retry_within=120)]
    assert [w.filename for w in caught] == [__file__]
    assert [memory.get_event(r.event_id)["user_id"] for r in stored] == ["bob", "carol"][:len(stored)]


def test_an_import_restores_other_users_events_without_a_warning(tmp_path):
    """An export holds what was stored: importing it asks for no separation, so it stays quiet."""
    with pytest.warns(DeprecationWarning), Memory.open(tmp_path / "old", embedder="hashing") as old:
        old.ingest(chat("hello from bob", item="b", user_id="bob"))
        old.export_jsonl(tmp_path / "out.jsonl")
    with warnings.catch_warnings(), Memory.open(tmp_path / "new", embedder="hashing") as new:
        warnings.simplefilter("error")
        new.import_jsonl(tmp_path / "out.jsonl")
        assert [e["user_id"] for e in event_rows(new.db.reader())] == ["bob"]
