"""Issue 21: browsing what the memory holds (``Memory.list_events``, ``recent_activity``) and the dry run of a
forget (``Memory.forget_preview``), which the MCP tools answer from."""

from __future__ import annotations

import pytest
from payloads import chat, sensor

from magi_desktop.core import InvalidInput

T0 = 1_772_000_000.0


def visits(n, *, start=T0, step=4000.0, source="chrome"):
    return [sensor("visit_page", {"url": f"https://site{i}.example/", "title": f"Page {i}"}, source=source,
                   at=start + i * step, item=f"{source}-{i}") for i in range(n)]


def test_pages_of_events_join_up_newest_first_and_filter(memory):
    memory.ingest_many(visits(7))
    memory.ingest(chat("I planted tomatoes today.", session="garden", at=T0 + 100))
    memory.process_pending()
    seen, before = [], None
    while True:
        page = memory.list_events(limit=3, before=before)
        seen += page["events"]
        before = page["next_before"]
        if before is None:
            break
    assert len(seen) == 8 and len({e["id"] for e in seen}) == 8
    assert [e["at"] for e in seen] == sorted((e["at"] for e in seen), reverse=True)
    chats = memory.list_events(session_id="garden")["events"]
    assert [(e["source"], e["author"], e["text"]) for e in chats] == [("chat", "user", "I planted tomatoes today.")]
    window = memory.list_events(source="chrome", start=T0 + 4000, end=T0 + 12000)["events"]
    assert [e["source_item_id"] for e in window] == ["chrome-2", "chrome-1"]       # [start, end)
    with pytest.raises(InvalidInput, match="before"):
        memory.list_events(before="no-such-event")
    with pytest.raises(InvalidInput, match="limit"):
        memory.list_events(limit=0)


def test_visits_folded_into_a_block_are_listed_as_the_block_unless_members_are_asked_for(memory):
    memory.ingest_many([sensor("visit_page", {"url": f"https://docs.example/page{i}", "title": f"Page {i}"},
                               source="chrome", at=T0 + i * 60, item=f"visit-{i}") for i in range(5)])
    memory.process_pending()                            # five visits of one site in one hour: a block
    folded = memory.list_events(source="chrome")["events"]
    members = memory.list_events(source="chrome", members=True)["events"]
    assert [e["source_item_id"] for e in members if e["source_item_id"].startswith("visit-")] == [
        f"visit-{i}" for i in reversed(range(5))]
    assert len(folded) == 1 and "5 visits" in folded[0]["text"]


def test_recent_activity_counts_each_source_in_the_last_hours(memory):
    memory.ingest_many(visits(6, step=1800.0) + visits(2, step=1800.0, source="git"))
    now = T0 + 5 * 1800 + 1
    activity = memory.recent_activity(hours=1.5, now=now, limit=2)
    assert activity["per_source"] == {"chrome": 3}                  # git had nothing in the window
    assert len(activity["events"]) == 2 and activity["next_before"]
    assert activity["end"] == now and activity["start"] == now - 1.5 * 3600
    with pytest.raises(InvalidInput, match="hours"):
        memory.recent_activity(hours=0)


def test_a_forget_preview_says_what_would_go_and_removes_nothing(memory):
    memory.ingest_many(visits(4))
    said = memory.ingest(chat("My sister Anna lives in Porto.", session="s", at=T0 + 50)).event_id
    fact = memory.remember("My sister Anna lives in Porto", "Anna lives in Porto.", [
        {"id": said, "role": "user", "text": "My sister Anna lives in Porto.", "provenance": "human_input"}],
        category="relation")
    memory.process_pending()
    before = memory.stats()["events"]["total"]
    preview = memory.forget_preview(source="chrome", start=T0 + 4000)
    assert (preview["events"], preview["by_source"], preview["traces"]) == (3, {"chrome": 3}, 0)
    assert [e["source_item_id"] for e in preview["newest"]] == ["chrome-3", "chrome-2", "chrome-1"]
    assert preview["facts"] == [] and preview["criteria"] == {"source": "chrome", "start": T0 + 4000}
    assert memory.forget_preview(event_ids=[said])["facts"] == [fact]       # the fact citing it goes too
    assert memory.stats()["events"]["total"] == before and memory.fact(fact)["status"] == "active"
    receipt = memory.forget(source="chrome", start=T0 + 4000)
    assert receipt["removed"]["fact_events"] == preview["events"]
    with pytest.raises(InvalidInput, match="say what to forget"):
        memory.forget_preview()


def test_forgetting_a_name_the_rules_never_made_an_entity_of_finds_the_events_saying_it(memory):
    """Offline, "Anna" and "Porto" are no entities; "forget everything about Anna" must still find her."""
    memory.ingest(chat("My sister Anna lives in Porto.", session="s", at=T0))
    memory.ingest(chat("Annabel called about the invoice.", session="s", at=T0 + 1))
    memory.ingest(chat("我在西湖边散步", session="s", at=T0 + 2))
    memory.ingest(sensor("visit_page", {"url": "https://trains.example/", "title": "Trains to Porto"},
                         source="chrome", at=T0 + 3, item="visit-porto"))
    memory.process_pending()
    assert "Anna" not in {e["name"] for e in memory.entities()}
    assert memory.forget_preview(entity="Anna")["events"] == 1             # not Annabel
    assert memory.forget_preview(entity="西湖")["events"] == 1
    assert memory.forget_preview(entity="Porto")["by_source"] == {"chat": 1, "chrome": 1}
    receipt = memory.forget(entity="Porto")
    assert receipt["removed"]["fact_events"] == 2
    left = [e["text"] for e in memory.list_events()["events"]]
    assert left == ["我在西湖边散步", "Annabel called about the invoice."]


def test_a_range_is_seconds_an_iso_string_or_a_datetime(memory):
    from datetime import datetime, timezone

    from magi_desktop.core import PayloadError

    memory.ingest_many(visits(4))
    start = datetime.fromtimestamp(T0 + 4000, timezone.utc)
    end = datetime.fromtimestamp(T0 + 12000, timezone.utc).isoformat()
    assert [e["source_item_id"] for e in memory.list_events(start=start, end=end)["events"]] == ["chrome-2", "chrome-1"]
    assert memory.forget_preview(source="chrome", start=start, end=end)["events"] == 2
    with pytest.raises(PayloadError) as bad:
        memory.forget(source="chrome", start="last tuesday")
    assert bad.value.field == "start"
    assert memory.forget_preview(source="chrome")["events"] == 4            # the bad call removed nothing
