"""``now`` in every Memory method that takes it: UNIX seconds, an ISO-8601 string with an offset, or a datetime
(aware, or naive for local time) — one conversion (contracts.parse_now), one error naming ``now``."""

import math
import time
from datetime import date, datetime, timedelta, timezone

import pytest
from payloads import chat

from magi_desktop.core import PayloadError
from magi_desktop.core.contracts import parse_now
from magi_desktop.core.session_constants import SESSION_IDLE_SECONDS

T0 = 1_765_000_000.0        # 2025-12-06 05:46:40 UTC
HOUR = 3600.0


def forms(ts: float) -> list:
    """The same moment in each form ``now`` takes."""
    aware = datetime.fromtimestamp(ts, timezone.utc)
    return [ts, int(ts) if ts.is_integer() else ts, aware, aware.astimezone(timezone(timedelta(hours=8))),
            datetime.fromtimestamp(ts), aware.isoformat(), aware.isoformat().replace("+00:00", "Z"),
            aware.astimezone(timezone(timedelta(hours=-5))).isoformat()]


BAD = [("yesterday", "is not an ISO-8601 date-time"), ("2025-12-06T05:46:40", "has no UTC offset"),
       (True, "must be a datetime, an ISO-8601 string with an offset or UNIX seconds, got bool"),
       (date(2025, 12, 6), "got date"), ([T0], "got list"), (math.nan, "finite"),
       (datetime(1900, 1, 1, tzinfo=timezone.utc), "outside 1970-01-02 .. 2100-01-01"),
       (datetime(2200, 1, 1, tzinfo=timezone.utc), "outside 1970-01-02 .. 2100-01-01"),
       (T0 * 1000, "looks like milliseconds")]


@pytest.mark.parametrize("value", forms(T0), ids=repr)
def test_every_form_is_the_same_moment(value):
    assert parse_now(value) == T0
    assert parse_now(None) is None


def test_a_naive_datetime_is_local_time(monkeypatch):
    if not hasattr(time, "tzset"):
        pytest.skip("the process timezone can be changed only where time.tzset exists")
    monkeypatch.setenv("TZ", "Asia/Shanghai")
    time.tzset()
    try:
        assert parse_now(datetime(2026, 11, 30, 9, 15)) == parse_now("2026-11-30T09:15:00+08:00")
    finally:
        monkeypatch.undo()
        time.tzset()


@pytest.mark.parametrize(("value", "reason"), BAD, ids=lambda v: repr(v)[:30])
def test_a_bad_now_names_the_field(value, reason):
    with pytest.raises(PayloadError, match=reason) as raised:
        parse_now(value)
    assert raised.value.field == "now"


def test_query_answers_as_of_now_in_every_form(memory):
    memory.ingest(chat("I adopted a cat called Miso.", at=T0, item="miso"))
    for before, after in zip(forms(T0 - HOUR), forms(T0 + HOUR), strict=True):
        assert "miso" not in {f.source_item_id for f in memory.query("What is my cat called?", now=before).findings}
        assert "miso" in {f.source_item_id for f in memory.query("What is my cat called?", now=after).findings}


def runtime(ok: bool, at: float) -> dict:
    return {"source_type": "runtime", "session_id": "agent", "occurred_at": at,
            "action": {"tool": "web_search", "category": "search", "ok": ok, "error": None if ok else "HTTP 503"}}


def test_tool_decision_in_every_form(memory):
    for i in range(3):
        memory.ingest(runtime(False, T0 + i))
    for soon, later in zip(forms(T0 + 60), forms(T0 + 2 * HOUR), strict=True):
        assert memory.tool_decision("web_search", "search", now=soon).state == "open"
        assert memory.tool_decision("web_search", "search", now=later).state == "half_open"


def test_the_snapshot_usage_and_activity_in_every_form(memory):
    memory.ingest(chat("I live in Porto.", at=T0, item="porto"))
    for value in forms(T0):
        assert memory.user_snapshot(now=value)["as_of"] == T0
        memory.record_agent_call("agent", "memory_query", now=value)
        assert memory.agent_usage()[0]["last_used_at"] == T0
    for before, after in zip(forms(T0 - 60), forms(T0 + 60), strict=True):
        assert memory.activity_by_day(3, now=before) == {}
        assert sum(memory.activity_by_day(3, now=after)["chat"].values()) == 1


def test_recent_activity_and_the_current_turn_in_every_form(memory):
    memory.ingest(chat("I live in Porto.", at=T0, item="porto"))
    for before, after in zip(forms(T0 - 60), forms(T0 + 60), strict=True):
        assert memory.recent_activity(1, now=before)["events"] == []
        assert [e["source_item_id"] for e in memory.recent_activity(1, now=after)["events"]] == ["porto"]
    arrived = float(int(time.time()))   # a turn is what the memory received in the idle window before now
    memory.ingest(chat("Book the Saturday train.", at=arrived, session="s-turn", item="train"))
    for soon, ended in zip(forms(arrived + 60), forms(arrived + SESSION_IDLE_SECONDS + HOUR), strict=True):
        assert [m["text"] for m in memory.current_turn("s-turn", now=soon)] == ["Book the Saturday train."]
        assert memory.current_turn("s-turn", now=ended) is None


def test_process_pending_and_extract_facts_in_every_form(memory):
    start = float(int(time.time()))       # a conversation goes quiet counted from when its turns arrived
    memory.ingest(chat("Remember that my badge number is 4471.", at=start, item="badge"))
    for talking in forms(start + 60):
        assert memory.process_pending(now=talking, queues=("facts",))["facts"]["runs"] == 0   # still talking
        assert memory.extract_facts(now=talking)["runs"] == 0
    quiet = datetime.fromtimestamp(start + SESSION_IDLE_SECONDS + HOUR, timezone.utc).isoformat()
    assert memory.process_pending(now=quiet, queues=("facts",))["facts"]["runs"] == 1
    assert [f["content"] for f in memory.facts()] == ["My badge number is 4471"]


def test_run_due_in_every_form(memory):
    memory.ingest(chat("Book the Saturday train.", at=T0, session="s-train", item="train"))
    for soon in forms(T0 + 60):
        assert memory.run_due(now=soon, jobs=["maintenance"]).l0_sessions_ended == 0
    idle = datetime.fromtimestamp(T0 + SESSION_IDLE_SECONDS + 60, timezone.utc)
    assert memory.run_due(now=idle, jobs=["maintenance"]).l0_sessions_ended == 1
    assert memory.working_memory("s-train") is None


@pytest.mark.parametrize(("value", "reason"), BAD[:3], ids=lambda v: repr(v)[:30])
def test_every_method_refuses_a_bad_now_naming_it_and_does_nothing(memory, value, reason):
    calls = [lambda: memory.query("anything?", now=value), lambda: memory.tool_decision("t", now=value),
             lambda: memory.extract_facts(now=value), lambda: memory.activity_by_day(now=value),
             lambda: memory.record_agent_call("agent", "memory_query", now=value),
             lambda: memory.user_snapshot(now=value), lambda: memory.process_pending(now=value),
             lambda: memory.run_due(now=value), lambda: memory.recent_activity(now=value),
             lambda: memory.current_turn("s1", now=value)]
    for call in calls:
        with pytest.raises(PayloadError, match=reason) as raised:
            call()
        assert raised.value.field == "now"
    assert memory.agent_usage() == []
