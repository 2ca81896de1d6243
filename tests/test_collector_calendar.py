"""The calendar collector against .ics files with recurrence, exceptions and edits."""

import os
from datetime import datetime, timezone

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
    assert texts == ["Calendar: Calendar event “Trip to Suzhou” from 2026-03-20 00:00 UTC to 2026-03-22 00:00 UTC"]
    sup.stop()


def test_a_broken_file_does_not_stop_the_others_and_excluded_paths_are_skipped(tmp_path):
    (tmp_path / "broken.ics").write_text("BEGIN:VCALENDAR\nthis is not ical\n")
    (tmp_path / "private").mkdir()
    (tmp_path / "private" / "x.ics").write_text(ICS)
    (tmp_path / "ok.ics").write_text(ICS)
    ctx = Ctx({"paths": [str(tmp_path)]}, {"paths": ["private"]})
    payloads = list(CalendarFiles(clock=lambda: NOW).collect(None, ctx))
    assert len(payloads) == 5
