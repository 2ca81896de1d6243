"""The calendar collector against .ics files with recurrence, exceptions and edits."""

import os
import time
from datetime import datetime, timedelta, timezone

from collecting import Ctx
from magi_plugins.calendar import CalendarFiles

from magi_desktop.collectors import Supervisor
from magi_desktop.core.store.l1 import event_rows

NOW = datetime(2026, 3, 18, 12, 0, tzinfo=timezone.utc).timestamp()

ICS = """BEGIN:VCALENDAR
VERSION:2.0
PRODID:-//magi tests//EN
BEGIN:VEVENT
UID:standup@example.com
DTSTART:20260302T090000Z
DTEND:20260302T091500Z
RRULE:FREQ=WEEKLY;BYDAY=MO;COUNT=6
EXDATE:20260309T090000Z
SUMMARY:Team standup
LOCATION:Room 4
END:VEVENT
BEGIN:VEVENT
UID:standup@example.com
RECURRENCE-ID:20260316T090000Z
DTSTART:20260316T100000Z
DTEND:20260316T101500Z
SUMMARY:Team standup (moved)
END:VEVENT
BEGIN:VEVENT
UID:trip@example.com
DTSTART;VALUE=DATE:20260320
DTEND;VALUE=DATE:20260322
SUMMARY:Trip to Hangzhou
END:VEVENT
BEGIN:VEVENT
UID:old@example.com
DTSTART:20250101T090000Z
DTEND:20250101T100000Z
SUMMARY:Long ago
END:VEVENT
END:VCALENDAR
"""



def when(payload):
    return datetime.fromtimestamp(payload["occurred_at"], timezone.utc).strftime("%m-%d %H:%M")


def test_recurrences_exceptions_and_moved_occurrences_in_the_window(tmp_path):
    folder = tmp_path / "calendars"
    folder.mkdir()
    (folder / "work.ics").write_text(ICS)
    ctx = Ctx({"paths": [str(folder)], "days_back": 30, "days_ahead": 14})
    payloads = sorted(CalendarFiles(clock=lambda: NOW).collect(None, ctx), key=lambda p: p["occurred_at"])
    assert [(when(p), p["provenance"]["summary"]) for p in payloads] == [
        ("03-02 09:00", "Team standup"),                 # 03-09 is an EXDATE
        ("03-16 10:00", "Team standup (moved)"),
        ("03-20 00:00", "Trip to Hangzhou"),
        ("03-23 09:00", "Team standup"),
        ("03-30 09:00", "Team standup"),
    ]
    assert payloads[0]["provenance"]["location"] == "Room 4" and payloads[2]["provenance"]["all_day"] is True
    assert list(CalendarFiles(clock=lambda: NOW).collect(ctx.cursor, ctx)) == []     # unchanged file: skipped
    # A week on, the file unchanged: the window has moved and reaches the last occurrence, only it is new.
    later = list(CalendarFiles(clock=lambda: NOW + 7 * 86400).collect(ctx.cursor, ctx))
    assert [(when(p), p["provenance"]["summary"]) for p in later] == [("04-06 09:00", "Team standup")]
    assert list(CalendarFiles(clock=lambda: NOW + 7 * 86400 + 3600).collect(ctx.cursor, ctx)) == []


def test_an_edited_event_supersedes_what_it_was(tmp_path, memory):
    ics = tmp_path / "home.ics"
    ics.write_text(ICS)
    clock = [NOW]
    sup = Supervisor(memory, [CalendarFiles(clock=lambda: clock[0])], settings={"calendar": {"paths": [str(ics)]}},
                     clock=lambda: clock[0])
    sup.tick()
    assert sup.wait_idle()
    assert sup.status["calendar"].counts["stored"] == 5
    ics.write_text(ICS.replace("SUMMARY:Trip to Hangzhou", "SUMMARY:Trip to Suzhou"))
    os.utime(ics, (NOW + 100, NOW + 100))
    clock[0] += 901
    sup.tick()
    assert sup.wait_idle()
    counts = sup.status["calendar"].counts
    assert counts["stored"] == 6 and counts["duplicates"] == 4
    texts = [r["content"] for r in event_rows(memory.db.reader()) if "trip" in r["content"].lower()]
    # One live version per UID (issue 17): the old title is retired, not kept beside the new one.
    assert texts == ["Calendar: All-day calendar event “Trip to Suzhou” from 2026-03-20 to 2026-03-21"]
    sup.stop()


def test_a_broken_file_does_not_stop_the_others_and_excluded_paths_are_skipped(tmp_path):
    (tmp_path / "broken.ics").write_text("BEGIN:VCALENDAR\nthis is not ical\n")
    (tmp_path / "private").mkdir()
    (tmp_path / "private" / "x.ics").write_text(ICS)
    (tmp_path / "ok.ics").write_text(ICS)
    ctx = Ctx({"paths": [str(tmp_path)]}, {"paths": ["private"]})
    payloads = list(CalendarFiles(clock=lambda: NOW).collect(None, ctx))
    assert len(payloads) == 5


def test_every_setting_has_a_title_and_says_what_it_means_and_its_default_is_the_one_read(tmp_path):
    schema = CalendarFiles.settings_schema
    for key, spec in schema.items():
        assert spec.get("title") and len(spec.get("description", "")) > 40, key
    assert "before they happen" in schema["days_ahead"]["description"]
    # With nothing set, the window is the declared defaults: the last event in it is read, the next one is not.
    ahead, back = schema["days_ahead"]["default"], schema["days_back"]["default"]
    edge = datetime.fromtimestamp(NOW, timezone.utc) + timedelta(days=ahead)
    oldest = datetime.fromtimestamp(NOW, timezone.utc) - timedelta(days=back)
    events = "".join(f"BEGIN:VEVENT\r\nUID:{uid}\r\nDTSTART:{at:%Y%m%dT%H%M%SZ}\r\nSUMMARY:{uid}\r\nEND:VEVENT\r\n"
                     for uid, at in (("last-in", edge - timedelta(hours=1)), ("first-out", edge + timedelta(hours=1)),
                                     ("oldest-in", oldest + timedelta(hours=1)),
                                     ("too-old", oldest - timedelta(hours=1))))
    (tmp_path / "edge.ics").write_text(f"BEGIN:VCALENDAR\r\nVERSION:2.0\r\n{events}END:VCALENDAR\r\n", newline="")
    payloads = list(CalendarFiles(clock=lambda: NOW).collect(None, Ctx({"paths": [str(tmp_path / "edge.ics")]})))
    assert sorted(p["provenance"]["summary"] for p in payloads) == ["last-in", "oldest-in"]


# The memory's clock is the machine's, so a plan is laid out around the real time: collected now, asked an hour on.
ASKED = time.time() + 3600
TOMORROW = datetime.fromtimestamp(ASKED, timezone.utc).replace(hour=10, minute=0, second=0, microsecond=0) \
    + timedelta(days=1)


def planned(start):
    """An Outlook export: a meeting at ``start`` written in a zone only its VTIMEZONE defines (+05:30)."""
    local = (start + timedelta(hours=5, minutes=30)).strftime("%Y%m%dT%H%M%S")
    return "\r\n".join([
        "BEGIN:VCALENDAR", "PRODID:-//Microsoft Corporation//Outlook 16.0 MIMEDIR//EN", "VERSION:2.0",
        "BEGIN:VTIMEZONE", "TZID:Customized Time Zone", "BEGIN:STANDARD", "DTSTART:16010101T000000",
        "TZOFFSETFROM:+0530", "TZOFFSETTO:+0530", "END:STANDARD", "END:VTIMEZONE",
        "BEGIN:VEVENT", "UID:budget-meeting@example.com", f"DTSTART;TZID=Customized Time Zone:{local}",
        "DURATION:PT1H", "SUMMARY:Budget meeting with Priya", "LOCATION:Room 2", "END:VEVENT", "END:VCALENDAR", ""])


def test_whats_on_tomorrow_finds_tomorrows_meeting_and_after_it_moved_only_its_new_day(memory, tmp_path):
    ics = tmp_path / "outlook.ics"
    ics.write_text(planned(TOMORROW), newline="")
    sup = Supervisor(memory, [CalendarFiles(clock=lambda: ASKED)], settings={"calendar": {"paths": [str(ics)]}})
    sup.tick()
    assert sup.wait_idle()
    memory.process_pending()
    pack = memory.query("what's on tomorrow?", now=ASKED, tz=timezone.utc)
    meetings = [f for f in pack.findings if "Budget meeting" in f.text]
    assert len(meetings) == 1 and meetings[0].status == "planned", [f.text for f in pack.findings]
    assert meetings[0].occurred_at == TOMORROW.timestamp()                  # 15:30 at +05:30
    # Moved to the day after: one event, at its new time; tomorrow has nothing left.
    ics.write_text(planned(TOMORROW + timedelta(days=1)), newline="")
    os.utime(ics, (ASKED, ASKED))
    sup.status["calendar"].next_run_at = 0
    sup.tick()
    assert sup.wait_idle()
    sup.stop()
    memory.process_pending()
    assert not any("Budget" in f.text for f in memory.query("what's on tomorrow?", now=ASKED, tz=timezone.utc).findings)
    later = memory.query("what's on the day after tomorrow?", now=ASKED, tz=timezone.utc)
    assert [f.occurred_at for f in later.findings if "Budget" in f.text] == [(TOMORROW + timedelta(days=1)).timestamp()]
    assert len([r for r in event_rows(memory.db.reader()) if "Budget" in r["content"]]) == 1
