"""The calendar collector on real calendar programs' files (tests/fixtures/ical, from the icalendar and
recurring-ical-events projects and an Outlook-shaped export): times stored right in UTC whatever zone the file
names — a VTIMEZONE of any name, X-WR-TIMEZONE, floating and all-day in the machine's zone — and moved,
cancelled and THISANDFUTURE-moved occurrences going through the memory's supersede-by-natural-key."""

import os
import shutil
from datetime import datetime, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from collecting import Ctx
from magi_plugins.calendar import CalendarFiles

from magi_desktop.core.store.l1 import event_rows

FIXTURES = Path(__file__).parent / "fixtures" / "ical"
UTC = timezone.utc


def utc(*args):
    return datetime(*args, tzinfo=UTC).timestamp()


def read(name_or_path, now, **settings):
    path = name_or_path if isinstance(name_or_path, Path) else FIXTURES / name_or_path
    collector = CalendarFiles(clock=lambda: now, local_zone=settings.pop("local_zone", None))
    ctx = Ctx({"paths": [str(path)], **settings})
    return list(collector.collect(None, ctx)), ctx


def starts(payloads, summary=None):
    return sorted(p["occurred_at"] for p in payloads
                  if not p.get("retire") and (summary is None or p["provenance"]["summary"] == summary))


def test_a_zone_defined_only_by_the_files_vtimezone_gives_the_right_utc_times_on_both_sides_of_its_dst_change():
    payloads, ctx = read("outlook_zones.ics", utc(2026, 3, 18), days_ahead=30)
    assert not ctx.skips
    # W. Europe Standard Time, 10:00: CET (+01:00) until 2026-03-29, CEST (+02:00) after.
    assert starts(payloads, "Team sync") == [utc(2026, 3, 16, 9), utc(2026, 3, 23, 9), utc(2026, 3, 30, 8),
                                             utc(2026, 4, 6, 8)]
    # Outlook's "Customized Time Zone", 18:00: +05:30, and +06:30 from the file's own rule (2nd Sunday of March).
    assert starts(payloads, "Call with the Pune office") == [utc(2026, 3, 2, 12, 30), utc(2026, 3, 9, 11, 30),
                                                             utc(2026, 3, 16, 11, 30)]
    sync = next(p for p in payloads if p["provenance"]["summary"] == "Team sync")
    assert sync["schedule"] == {"start": utc(2026, 3, 16, 9), "end": utc(2026, 3, 16, 9, 30), "all_day": False}


def test_two_files_zones_of_the_same_name_are_each_their_own_and_one_never_borrows_the_others(tmp_path):
    outlook = (FIXTURES / "outlook_zones.ics").read_text()
    # Another Outlook user's "Customized Time Zone": -03:00 all year. Read first, in the same process.
    other = outlook.replace("TZOFFSETFROM:+0630", "TZOFFSETFROM:-0300").replace("TZOFFSETTO:+0530", "TZOFFSETTO:-0300")
    other = other.replace("TZOFFSETFROM:+0530", "TZOFFSETFROM:-0300").replace("TZOFFSETTO:+0630", "TZOFFSETTO:-0300")
    write = (tmp_path / "other.ics").write_text
    write(other, newline="")
    payloads, _ = read(tmp_path / "other.ics", utc(2026, 3, 18))
    assert starts(payloads, "Call with the Pune office")[0] == utc(2026, 3, 2, 21)          # 18:00 at -03:00
    payloads, _ = read("outlook_zones.ics", utc(2026, 3, 18))
    assert starts(payloads, "Call with the Pune office")[0] == utc(2026, 3, 2, 12, 30)      # 18:00 at +05:30
    # A file naming that zone without defining it: unknown, not the zone of the file read before.
    (tmp_path / "bare.ics").write_text(outlook.split("BEGIN:VTIMEZONE")[0] + "BEGIN:VEVENT" +
                                       outlook.split("BEGIN:VEVENT", 1)[1], newline="")
    payloads, ctx = read(tmp_path / "bare.ics", utc(2026, 3, 18))
    assert starts(payloads, "Call with the Pune office") == [] and ctx.skips["unknown_timezone"] == 1


@pytest.mark.filterwarnings("ignore::icalendar.GloballyUniqueTZIDGuessed")   # it guesses right, and says so
def test_other_programs_zone_names_come_out_in_utc():
    brasilia, _ = read("issue_237_fail_to_parse_timezone_with_non_ascii_tzid.ics", utc(2017, 5, 11))
    assert starts(brasilia) == [utc(2017, 5, 11, 16, 30)]              # "(UTC-03:00) Brasília" 13:30
    new_york, _ = read("america_new_york.ics", utc(2014, 8, 29))
    assert starts(new_york) == [utc(2014, 8, 29, 12)]                  # custom_America/New_York 08:00 EDT
    prefixed, _ = read("issue_313_globally_unique_tzid.ics", utc(2020, 4, 26))
    at = {p["provenance"]["summary"].split(" ")[0]: p["occurred_at"] for p in prefixed}
    assert at == {"libical": utc(2020, 4, 26, 12), "Mozilla": utc(2020, 4, 26, 18), "vendor": utc(2020, 4, 26, 17)}


def test_x_wr_timezone_places_a_google_calendars_floating_times(tmp_path):
    payloads, _ = read("issue_86_x_wr_timezone_without_time_zone_in_dt.ics", utc(2021, 9, 16),
                       local_zone=ZoneInfo("Asia/Tokyo"))
    assert starts(payloads) == [utc(2021, 9, 16, 19)]                  # 21:00 Europe/Brussels, not Tokyo nor UTC
    # One that names no zone is left out: the floating times are the machine's, and nothing is skipped.
    path = tmp_path / "mars.ics"
    path.write_text((FIXTURES / "issue_86_x_wr_timezone_without_time_zone_in_dt.ics").read_text()
                    .replace("X-WR-TIMEZONE:Europe/Brussels", "X-WR-TIMEZONE:America"), newline="")
    payloads, ctx = read(path, utc(2021, 9, 16), local_zone=ZoneInfo("Asia/Tokyo"))
    assert starts(payloads) == [utc(2021, 9, 16, 12)] and not ctx.skips      # 21:00 in Tokyo


def test_floating_times_and_all_day_dates_are_the_machines_wall_clock(tmp_path):
    path = tmp_path / "local.ics"
    path.write_text("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//magi tests//EN\r\n"
                    "BEGIN:VEVENT\r\nUID:gym\r\nDTSTART:20260320T090000\r\nSUMMARY:Gym\r\nEND:VEVENT\r\n"
                    "BEGIN:VEVENT\r\nUID:trip\r\nDTSTART;VALUE=DATE:20260320\r\nDTEND;VALUE=DATE:20260322\r\n"
                    "SUMMARY:Trip\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n", newline="")
    payloads, _ = read(path, utc(2026, 3, 18), local_zone=ZoneInfo("America/New_York"))
    at = {p["provenance"]["summary"]: p for p in payloads}
    assert at["Gym"]["occurred_at"] == utc(2026, 3, 20, 13)           # 09:00 EDT
    assert at["Trip"]["schedule"] == {"start": utc(2026, 3, 20, 4), "end": utc(2026, 3, 22, 4), "all_day": True}
    assert at["Trip"]["natural_key"] == "trip"
    assert (at["Trip"]["provenance"]["day"], at["Trip"]["provenance"]["last_day"]) == ("2026-03-20", "2026-03-21")
    assert "day" not in at["Gym"]["provenance"]


def test_an_all_day_event_reads_as_its_dates_not_as_utc_clock_times(tmp_path, memory):
    path = tmp_path / "days.ics"
    path.write_text("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//magi tests//EN\r\n"
                    "BEGIN:VEVENT\r\nUID:trip\r\nDTSTART;VALUE=DATE:20260320\r\nDTEND;VALUE=DATE:20260322\r\n"
                    "SUMMARY:Trip\r\nEND:VEVENT\r\n"
                    "BEGIN:VEVENT\r\nUID:holiday\r\nDTSTART;VALUE=DATE:20260325\r\nSUMMARY:Holiday\r\n"
                    "LOCATION:Lisbon\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n", newline="")
    payloads, _ = read(path, utc(2026, 3, 18), local_zone=ZoneInfo("Asia/Shanghai"))
    contents = sorted(memory.get_event(r.event_id)["content"] for r in memory.ingest_many(payloads))
    assert contents == ["Calendar: All-day calendar event “Holiday” on 2026-03-25 at Lisbon",
                        "Calendar: All-day calendar event “Trip” from 2026-03-20 to 2026-03-21"]


def test_an_exdate_in_a_files_own_zone_leaves_out_that_week_only():
    payloads, _ = read("each_week_but_one_deleted.ics", utc(2019, 3, 20))
    # 00:30 Europe/Berlin each Monday: 23:30 UTC the evening before, 22:30 once summer time began (03-31).
    assert starts(payloads) == [utc(2019, 3, 3, 23, 30), utc(2019, 3, 17, 23, 30), utc(2019, 3, 24, 23, 30),
                                utc(2019, 3, 31, 22, 30)]             # 03-10 is the EXDATE; the window ends 04-03


def collect_into(memory, path, ctx, now):
    payloads = list(CalendarFiles(clock=lambda: now).collect(ctx.cursor, ctx))
    results = memory.ingest_many(payloads)
    return payloads, results


def change(path, text, when):
    path.write_text(text, newline="")
    os.utime(path, (when, when))


def live(memory, uid):
    rows = [r for r in event_rows(memory.db.reader()) if (r["natural_key"] or "").startswith(uid)]
    return sorted((r["timestamp"], r["natural_key"]) for r in rows)


def without(text, summary_line):
    """The calendar without the VEVENT holding ``summary_line`` — what the file said before it was added."""
    head, *events = text.split("BEGIN:VEVENT")
    kept = [e for e in events if summary_line not in e]
    last = kept[-1] if kept else ""
    return head + "".join("BEGIN:VEVENT" + e for e in kept) + ("" if "END:VCALENDAR" in last else "END:VCALENDAR\r\n")


def test_a_moved_occurrence_supersedes_the_stored_one_and_stays_one_event_at_its_new_time(memory, tmp_path):
    moved = (FIXTURES / "recurring_events_moved.ics").read_text()
    path = tmp_path / "thunderbird.ics"
    # Before the moves: the series as its rule gives it (the overrides of the 8th and 9th not yet written).
    change(path, without(without(moved, "RECURRENCE-ID;TZID=Europe/Berlin:20190308"),
                         "RECURRENCE-ID;TZID=Europe/Berlin:20190309"), utc(2019, 3, 5))
    ctx = Ctx({"paths": [str(path)]})
    collect_into(memory, path, ctx, utc(2019, 3, 6))
    uid = "a0c78729-30b1-4ba3-a86e-6aedd995d788"
    assert [t for t, _ in live(memory, uid)] == [utc(2019, 3, 7, 1), utc(2019, 3, 8, 1), utc(2019, 3, 9, 1),
                                                  utc(2019, 3, 10, 1)]
    change(path, moved, utc(2019, 3, 7))
    _, results = collect_into(memory, path, ctx, utc(2019, 3, 7, 12))
    # The 8th moved an hour earlier, the 9th an hour later: the same two occurrences (their keys), new times.
    assert live(memory, uid) == [(utc(2019, 3, 7, 1), f"{uid}@{int(utc(2019, 3, 7, 1))}"),
                                 (utc(2019, 3, 8, 0), f"{uid}@{int(utc(2019, 3, 8, 1))}"),
                                 (utc(2019, 3, 9, 2), f"{uid}@{int(utc(2019, 3, 9, 1))}"),
                                 (utc(2019, 3, 10, 1), f"{uid}@{int(utc(2019, 3, 10, 1))}")]
    assert sum(not r.duplicate for r in results) == 3       # the two moved, and test7's 20th, newly in the window


def test_a_cancelled_occurrence_retires_the_stored_one_and_a_new_exdate_too(memory, tmp_path):
    cancelled = (FIXTURES / "issue_18_cancel_status.ics").read_text()
    path = tmp_path / "lightning.ics"
    change(path, without(cancelled, "STATUS:CANCELLED"), utc(2020, 1, 20))
    ctx = Ctx({"paths": [str(path)]})
    collect_into(memory, path, ctx, utc(2020, 1, 25))
    uid = "b65c2b5b-b785-4edc-9560-e0379036d1f2"
    assert [t for t, _ in live(memory, uid)] == [utc(2020, 1, 28, 21), utc(2020, 1, 29, 21), utc(2020, 1, 30, 21)]
    change(path, cancelled, utc(2020, 1, 26))
    _, results = collect_into(memory, path, ctx, utc(2020, 1, 26, 12))
    assert [t for t, _ in live(memory, uid)] == [utc(2020, 1, 28, 21), utc(2020, 1, 30, 21)]
    assert sum(r.target == "retired" for r in results) == 1
    # The user then deletes the 30th in Thunderbird: an EXDATE. Read again, that one is retired too.
    change(path, cancelled.replace("RRULE:FREQ=DAILY;COUNT=3", "RRULE:FREQ=DAILY;COUNT=3\r\n"
                                   "EXDATE;TZID=Europe/Berlin:20200130T220000"), utc(2020, 1, 27))
    collect_into(memory, path, ctx, utc(2020, 1, 27, 12))
    assert [t for t, _ in live(memory, uid)] == [utc(2020, 1, 28, 21)]
    # Nothing changed: nothing stored, nothing retired.
    again, _ = collect_into(memory, path, ctx, utc(2020, 1, 27, 13))
    assert again == []


def test_occurrences_moved_this_and_future_keep_each_their_own_key(memory, tmp_path):
    path = tmp_path / "reservas.ics"
    shutil.copy(FIXTURES / "issue_75_range_parameter.ics", path)
    ctx = Ctx({"paths": [str(path)]})
    payloads, _ = collect_into(memory, path, ctx, utc(2024, 9, 15))
    keys = [p["natural_key"] for p in payloads]
    assert len(keys) == len(set(keys)) == 15                # 09-01 … 09-28 (14 days ahead), each its own
    stored = live(memory, "210@")
    assert len(stored) == 15
    # The RDATE of 09-14 09:00, moved with everything after 09-13 by -3 h, is still the occurrence of 09-14 09:00.
    assert (utc(2024, 9, 14, 6), f"210@{int(utc(2024, 9, 14, 9))}") in stored
    # And the occurrence of 09-25 12:00, after the second THISANDFUTURE move (+1 day 2 h 22 min), keeps its key.
    assert (utc(2024, 9, 26, 14, 22), f"210@{int(utc(2024, 9, 25, 12))}") in stored


def test_a_google_export_moves_an_occurrence_under_its_own_key():
    payloads, _ = read("issue_62_moved_event.ics", utc(2021, 12, 20), days_ahead=30)
    uid = "38m812jicsrer5gorh3mlp7qhc@google.com"
    # Every last Friday at 21:30 Europe/Berlin; the one of 12-31 moved to 12-17: the rule's 12-31, at 12-17.
    assert {p["natural_key"]: p["occurred_at"] for p in payloads} == {
        f"{uid}@{int(utc(2021, 11, 26, 20, 30))}": utc(2021, 11, 26, 20, 30),
        f"{uid}@{int(utc(2021, 12, 31, 20, 30))}": utc(2021, 12, 17, 20, 30)}
