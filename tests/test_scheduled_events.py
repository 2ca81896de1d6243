"""Scheduled events (issue 17, item 3): plans visible before they happen, past questions that never see
a plan as done, and one live version per calendar occurrence — moved, edited, cancelled or removed —
from real .ics files read by the calendar collector into a real memory."""
# Raw SQL left: natural keys wiped by hand, as a memory from before migration 0019 holds them.

import time
from datetime import datetime, timedelta, timezone

import pytest
from collecting import Ctx
from magi_plugins.calendar import CalendarFiles

from magi_desktop.core.store.l1 import event_rows
from magi_desktop.core.store.supersede import superseded

UTC = timezone.utc
# The memory's clock is the machine's (ingest time), so the calendar is laid out around the question's
# "now", an hour from the start of the run: a plan is visible from when it was collected, before that.
NOW = time.time() + 3600
TODAY = datetime.fromtimestamp(NOW, UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def at(days: int, hour: int = 0, minute: int = 0) -> datetime:
    return TODAY + timedelta(days=days, hours=hour, minutes=minute)


def ics_time(moment: datetime) -> str:
    return moment.strftime("%Y%m%dT%H%M%SZ")


def ics_date(moment: datetime) -> str:
    return moment.strftime("%Y%m%d")


def calendar(version: int) -> str:
    """A real iCalendar file: a weekly series with an EXDATE (and, in version 2, a moved occurrence and one
    more EXDATE), a single appointment (moved in version 2), meetings cancelled in version 2, an all-day trip
    and a past coffee."""
    exdates = [ics_time(at(-5, 18))] + ([ics_time(at(16, 18))] if version == 2 else [])
    events = [
        "BEGIN:VEVENT", "UID:openlab@test", f"DTSTART:{ics_time(at(-12, 18))}", f"DTEND:{ics_time(at(-12, 20))}",
        "RRULE:FREQ=WEEKLY;COUNT=6", f"EXDATE:{','.join(exdates)}", "SUMMARY:OpenLab meetup", "END:VEVENT",
    ]
    if version == 2:
        events += ["BEGIN:VEVENT", "UID:openlab@test", f"RECURRENCE-ID:{ics_time(at(9, 18))}",
                   f"DTSTART:{ics_time(at(10, 19))}", f"DTEND:{ics_time(at(10, 21))}", "SUMMARY:OpenLab meetup",
                   "END:VEVENT"]
    dentist = at(1, 15) if version == 2 else at(1, 9)
    events += ["BEGIN:VEVENT", "UID:dentist@test", f"DTSTART:{ics_time(dentist)}",
               f"DTEND:{ics_time(dentist + timedelta(hours=1))}", "SUMMARY:Dentist appointment", "END:VEVENT"]
    for uid, day, title in (("board@test", 3, "Board review"), ("budget@test", -2, "Budget review")):
        events += ["BEGIN:VEVENT", f"UID:{uid}", f"DTSTART:{ics_time(at(day, 10))}", f"DTEND:{ics_time(at(day, 11))}",
                   f"SUMMARY:{title}"] + (["STATUS:CANCELLED"] if version == 2 else []) + ["END:VEVENT"]
    events += ["BEGIN:VEVENT", "UID:trip@test", f"DTSTART;VALUE=DATE:{ics_date(at(1))}",
               f"DTEND;VALUE=DATE:{ics_date(at(3))}", "SUMMARY:Trip to Hangzhou", "END:VEVENT",
               "BEGIN:VEVENT", "UID:coffee@test", f"DTSTART:{ics_time(at(-1, 10))}", f"DTEND:{ics_time(at(-1, 11))}",
               "SUMMARY:Coffee with Anna", "END:VEVENT"]
    return "\r\n".join(["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//magi tests//EN", *events, "END:VCALENDAR", ""])


def collect(memory, ics, ctx, clock=NOW):
    payloads = list(CalendarFiles(clock=lambda: clock).collect(ctx.cursor, ctx))
    return memory.ingest_many(payloads)


@pytest.fixture
def planned(memory, tmp_path):
    """The memory after the calendar's first version was collected."""
    ics = tmp_path / "home.ics"
    ics.write_text(calendar(1))
    ctx = Ctx({"paths": [str(ics)], "days_back": 30, "days_ahead": 30})
    collect(memory, ics, ctx)
    memory.process_pending()
    return memory, ics, ctx


def updated(memory, ics, ctx):
    """Collect the calendar's second version (the file changed)."""
    import os

    ics.write_text(calendar(2))
    os.utime(ics, (NOW + 100, NOW + 100))
    results = collect(memory, ics, ctx, clock=NOW + 60)
    memory.process_pending()
    return results


def ask(memory, question):
    return memory.query(question, now=NOW + 120, tz=UTC)


def events_naming(memory, word):
    """The stored events whose text holds ``word`` in any case (as SQL's LIKE matches ASCII), by rowid."""
    return [r for r in event_rows(memory.db.reader()) if word.lower() in r["content"].lower()]


def texts(pack):
    return [f.text for f in pack.findings]


def test_what_is_on_my_calendar_tomorrow_lists_the_plans_of_tomorrow(planned):
    memory, _, _ = planned
    pack = ask(memory, "What is on my calendar tomorrow?")
    assert pack.status == "ok"
    said = texts(pack)
    assert any("Dentist appointment" in t for t in said) and any("Trip to Hangzhou" in t for t in said), said
    assert not any("Coffee with Anna" in t or "Budget review" in t for t in said), said   # not last week's
    assert {f.status for f in pack.findings} == {"planned"}
    assert any("plans" in hint for hint in pack.answering_hints)
    assert pack.trace["temporal"]["window"]["ahead"] is True


@pytest.mark.parametrize("question", ["What did I schedule for tomorrow?", "What have I planned for tomorrow?",
                                      "What did I book for tomorrow?"])
def test_asking_what_was_planned_sees_the_plans(planned, question):
    memory, _, _ = planned
    pack = ask(memory, question)
    assert pack.status == "ok" and any("Dentist appointment" in t for t in texts(pack)), texts(pack)


def test_chinese_tomorrow_and_next_week_look_ahead(planned):
    memory, _, _ = planned
    assert any("Dentist appointment" in t for t in texts(ask(memory, "明天有什么安排？")))
    week = ask(memory, "What is on next week?")
    starts = [f.occurred_at for f in week.findings]
    monday = (TODAY - timedelta(days=TODAY.weekday()) + timedelta(days=7)).timestamp()
    assert starts and all(monday <= s < monday + 7 * 86400 for s in starts), texts(week)


def test_when_is_the_next_openlab_answers_the_soonest_future_occurrence(planned):
    memory, _, _ = planned
    pack = ask(memory, "When is the next OpenLab?")
    assert pack.status == "ok"
    first = pack.findings[0]
    assert "OpenLab" in first.text and first.occurred_at == at(2, 18).timestamp(), texts(pack)
    assert first.status == "planned"
    events = [f for f in pack.findings if f.layer == "L1"]
    assert all(f.occurred_at > NOW for f in events)
    assert [f.occurred_at for f in events] == sorted(f.occurred_at for f in events)
    assert any("OpenLab" in t for t in texts(memory.query("下次OpenLab什么时候？", now=NOW + 120, tz=UTC)))


def test_a_question_about_what_was_done_never_sees_a_plan(planned):
    memory, _, _ = planned
    yesterday = ask(memory, "Which calendar events did I have yesterday?")
    assert any("Coffee with Anna" in t for t in texts(yesterday))
    assert all(f.occurred_at <= NOW for f in yesterday.findings if f.layer == "L1")
    did = ask(memory, "Did I go to the OpenLab meetup?")
    events = [f for f in did.findings if f.layer == "L1"]
    assert events and all(f.occurred_at <= NOW for f in events), texts(did)
    assert did.trace["plans_dropped"] >= 1          # the future occurrences were found, and left out
    assert not any(f.status == "planned" for f in did.findings)


def test_a_moved_meeting_is_answered_at_its_new_time_only(planned):
    memory, ics, ctx = planned
    updated(memory, ics, ctx)
    said = [t for t in texts(ask(memory, "When is the dentist appointment?")) if "Dentist" in t]
    assert len(said) == 1 and f"{at(1, 15):%Y-%m-%d} 15:00" in said[0], said
    assert len(events_naming(memory, "Dentist")) == 1
    # The series' occurrence moved by a RECURRENCE-ID override: one live version, at its new time.
    openlab = event_rows(memory.db.reader(), natural_key=f"openlab@test@{int(at(9, 18).timestamp())}")
    assert [r["timestamp"] for r in openlab] == [at(10, 19).timestamp()]


def test_the_collector_host_counts_retirements_apart(memory, tmp_path):
    from magi_desktop.collectors import Supervisor

    ics = tmp_path / "home.ics"
    ics.write_text(calendar(1))
    clock = [NOW]
    sup = Supervisor(memory, [CalendarFiles(clock=lambda: clock[0])],
                     settings={"calendar": {"paths": [str(ics)], "days_ahead": 30}}, clock=lambda: clock[0])
    sup.tick()
    assert sup.wait_idle()
    ics.write_text(calendar(2))
    import os
    os.utime(ics, (NOW + 100, NOW + 100))
    clock[0] += 901
    sup.tick()
    assert sup.wait_idle()
    assert sup.status["calendar"].counts["retired"] == 3
    sup.stop()


def test_cancelled_and_removed_occurrences_are_gone(planned):
    memory, ics, ctx = planned
    results = updated(memory, ics, ctx)
    assert sum(r.target == "retired" for r in results) == 3       # two cancelled, one new EXDATE
    for question in ("When is the board review?", "When was the budget review?"):
        assert not any("review" in t.lower() for t in texts(ask(memory, question))), question
    upcoming = ask(memory, "When is the next OpenLab?")
    assert at(16, 18).timestamp() not in [f.occurred_at for f in upcoming.findings]
    retired = [old for old, new in superseded(memory.db.reader()).items() if new is None]
    assert len(retired) == 3


def test_a_plan_counts_as_recorded_when_collected_and_keeps_that_time_when_it_moves(planned):
    memory, ics, ctx = planned
    row = events_naming(memory, "Dentist")[0]
    first_recorded = row["recorded_at"]
    assert row["recorded_at"] == row["ingested_at"] < row["timestamp"]   # a plan: visible from when it was collected
    past = events_naming(memory, "Coffee")[0]
    assert past["recorded_at"] == past["timestamp"]      # about the past: recorded at its occurred_at
    updated(memory, ics, ctx)
    moved = events_naming(memory, "Dentist")[0]
    assert moved["recorded_at"] == first_recorded < moved["ingested_at"]
    # Asked as of a time before the plan was first collected, it is not known yet.
    assert not any("Dentist" in t for t in texts(memory.query("What is on my calendar tomorrow?",
                                                              now=first_recorded - 60, tz=UTC)))


# A Tuesday noon: each phrase names a window after it, where only plans live.
TUESDAY = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(("question", "first_day", "days"), [
    ("What is on my calendar tomorrow?", 1, 1),
    ("Anything the day after tomorrow?", 2, 1),
    ("What do I have in 3 days?", 3, 1),
    ("What is on in two weeks?", 14, 1),
    ("Plans for this weekend?", 4, 2),
    ("And next weekend?", 11, 2),
    ("What is on next week?", 6, 7),
    ("明天有什么安排？", 1, 1),
    ("后天呢", 2, 1),
    ("下周有什么会？", 6, 7),
    ("这个周末去哪", 4, 2),
    ("What's on Friday?", 3, 1),
    ("Do I have anything on Monday?", 6, 1),
    ("Am I free this Thursday?", 2, 1),
    ("Is there a meeting next Tuesday?", 7, 1),
    ("周五有什么安排？", 3, 1),
    ("这周五有什么会", 3, 1),
    ("What did I schedule for tomorrow?", 1, 1),
])
def test_questions_about_the_future_keep_their_window(question, first_day, days):
    from magi_desktop.core.retrieval.temporal import parse_temporal

    window = parse_temporal(question, TUESDAY.timestamp(), UTC).window
    start = datetime(2026, 12, 1, tzinfo=UTC) + timedelta(days=first_day)
    assert window is not None and window.ahead, question
    assert (window.start, window.end) == (start.timestamp(), (start + timedelta(days=days)).timestamp())


@pytest.mark.parametrize("question", ["When is my next dentist appointment?", "What is coming up?",
                                      "Any upcoming trips?", "下次OpenLab什么时候？"])
def test_next_and_upcoming_look_from_now_on(question):
    from magi_desktop.core.retrieval.temporal import parse_temporal

    window = parse_temporal(question, TUESDAY.timestamp(), UTC).window
    assert window is not None and window.ahead and window.start == TUESDAY.timestamp() and window.label == "upcoming"


@pytest.mark.parametrize("question", ["What did I do yesterday?", "What did I do the next day?",
                                      "Where did I go last weekend?", "When did I last see the dentist?",
                                      "What did I do on Friday?", "Who did I meet on Monday?",
                                      "What was on my calendar on Friday?", "What was due on Monday?",
                                      "What happened this Monday?", "What's on this Monday?", "周一做了什么"])
def test_questions_about_the_past_do_not_look_ahead(question):
    from magi_desktop.core.retrieval.temporal import parse_temporal

    window = parse_temporal(question, TUESDAY.timestamp(), UTC).window
    assert window is None or (not window.ahead and window.end <= TUESDAY.timestamp() + 86400), question


def test_occurrences_stored_before_natural_keys_take_them_and_are_superseded_later(planned):
    """A memory upgraded from before migration 0019: its calendar rows have no natural key and the
    collector's cursor knows none. The next run reads the file in full, the stored rows take their keys,
    and the next edit supersedes them instead of adding a second version."""
    memory, ics, ctx = planned
    with memory.db.transaction() as conn:
        conn.execute("UPDATE fact_events SET natural_key = NULL")
    ctx.cursor = {path: {"mtime": state["mtime"], "until": state["until"]} for path, state in ctx.cursor.items()}
    again = collect(memory, ics, ctx, clock=NOW + 30)
    assert again and all(r.duplicate for r in again)
    assert [r for r in event_rows(memory.db.reader()) if r["natural_key"] is None] == []
    updated(memory, ics, ctx)
    rows = events_naming(memory, "Dentist")
    assert len(rows) == 1 and f"{at(1, 15):%Y-%m-%d} 15:00" in rows[0]["content"]
