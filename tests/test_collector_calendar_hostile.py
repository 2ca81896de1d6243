"""Hostile calendar files (issue 16, defect 6): one bad VEVENT costs that event only, and is counted by
reason; an unknown TZID is never read as UTC; a file that cannot be parsed is never marked read; expansion
is bounded per event, per file and per run. The files are real .ics text (tests/fixtures/ical, and
written here)."""

import shutil
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

from collecting import Ctx
from magi_plugins.calendar import MAX_OCCURRENCES_PER_RUN, CalendarFiles
from magi_plugins.ical_reading import MAX_OCCURRENCES_PER_FILE, Bounds

from magi_desktop.collectors import Supervisor

NOW = datetime(2026, 3, 18, 12, 0, tzinfo=timezone.utc).timestamp()
HOSTILE = Path(__file__).parent / "fixtures" / "ical" / "hostile.ics"
PER_EVENT = Bounds.for_window(44).per_event          # the default 30 days back + 14 ahead: 1,056


def ics(*events):
    body = "".join(f"BEGIN:VEVENT\r\n{e.strip()}\r\nEND:VEVENT\r\n".replace("\n", "\r\n").replace("\r\r", "\r")
                   for e in events)
    return f"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//magi tests//EN\r\n{body}END:VCALENDAR\r\n"


def collect(paths, since=None, clock=NOW, **collector):
    ctx = Ctx({"paths": [str(p) for p in paths]})
    ctx.cursor = since
    payloads = list(CalendarFiles(clock=lambda: clock, **collector).collect(since, ctx))
    return payloads, ctx


def summaries(payloads):
    return Counter(p["provenance"]["summary"] for p in payloads)


def test_each_bad_event_is_skipped_by_reason_and_the_rest_of_the_file_is_stored(tmp_path):
    path = tmp_path / "hostile.ics"
    shutil.copy(HOSTILE, path)
    payloads, ctx = collect([path])
    assert summaries(payloads) == {"Dentist": 1, "Weekly review": 3, "Standup in the Shanghai office": 1,
                                   "Trip to Hangzhou": 1, "Every second forever": PER_EVENT, "February 30th": 1}
    assert ctx.skips == {"bad_dtstart": 1, "missing_dtstart": 1, "unknown_timezone": 1, "bad_date": 1,
                         "bad_rrule": 4, "expansion_capped": 1}
    said = dict((detail.split(": ")[1], reason) for reason, detail in ctx.details)
    assert said == {"bad-dtstart@example.com": "bad_dtstart", "no-start@example.com": "missing_dtstart",
                    "mars-time@example.com": "unknown_timezone", "ends-before@example.com": "bad_date",
                    "bad-count@example.com": "bad_rrule", "bad-freq@example.com": "bad_rrule",
                    "bad-bysecond@example.com": "bad_rrule", "never@example.com": "bad_rrule",
                    "ticker@example.com": "expansion_capped"}
    assert str(path) in ctx.cursor                       # read, so marked read
    again, ctx2 = collect([path], since=ctx.cursor)
    assert again == [] and not ctx2.skips                # unchanged: not read (nor counted) again


def test_under_the_supervisor_a_hostile_file_is_an_ok_run_with_its_skips_in_the_status(tmp_path, memory):
    shutil.copy(HOSTILE, tmp_path / "hostile.ics")
    sup = Supervisor(memory, [CalendarFiles(clock=lambda: NOW)], settings={"calendar": {"paths": [str(tmp_path)]}},
                     clock=lambda: NOW)
    sup.tick()
    assert sup.wait_idle(60)
    sup.stop()
    status = memory.collector_statuses()["calendar"]
    assert status["failures"] == 0 and status["last_error"] is None
    assert status["counts"]["stored"] == 7 + PER_EVENT
    assert status["skipped"] == {"bad_dtstart": 1, "missing_dtstart": 1, "unknown_timezone": 1, "bad_date": 1,
                                 "bad_rrule": 4, "expansion_capped": 1}


def test_a_tzid_comes_from_the_files_vtimezone_and_an_unknown_one_is_never_read_as_utc(tmp_path):
    payloads, ctx = collect([HOSTILE])
    office = next(p for p in payloads if p["provenance"]["summary"].startswith("Standup in the Shanghai"))
    assert office["occurred_at"] == datetime(2026, 3, 15, 1, 0, tzinfo=timezone.utc).timestamp()   # 09:00 +08:00
    assert "Meeting on Mars time" not in summaries(payloads)
    assert ("unknown_timezone", "hostile.ics: mars-time@example.com: DTSTART;TZID=Mars/Olympus_Mons") in ctx.details
    # A Windows zone name and an Olson name are known without a VTIMEZONE.
    path = tmp_path / "zones.ics"
    path.write_text(ics("UID:w\nDTSTART;TZID=Pacific Standard Time:20260310T090000\nSUMMARY:Windows zone",
                        "UID:o\nDTSTART;TZID=Europe/Berlin:20260310T090000\nSUMMARY:Olson zone"), newline="")
    payloads, ctx = collect([path])
    at = {p["provenance"]["summary"]: p["occurred_at"] for p in payloads}
    assert at == {"Windows zone": datetime(2026, 3, 10, 16, 0, tzinfo=timezone.utc).timestamp(),
                  "Olson zone": datetime(2026, 3, 10, 8, 0, tzinfo=timezone.utc).timestamp()}
    assert not ctx.skips


def test_a_file_that_cannot_be_parsed_is_counted_and_read_once_it_is_whole(tmp_path):
    whole = HOSTILE.read_bytes()
    path = tmp_path / "being-written.ics"
    path.write_bytes(whole[: len(whole) // 2])           # a calendar program half-way through saving
    (tmp_path / "ok.ics").write_text(ics("UID:ok\nDTSTART:20260310T090000Z\nSUMMARY:Other file"), newline="")
    payloads, ctx = collect([tmp_path])
    assert summaries(payloads) == {"Other file": 1}
    assert ctx.skips == {"unreadable_file": 1} and ctx.details[0][1].startswith("being-written.ics: ")
    assert str(path) not in ctx.cursor and str(tmp_path / "ok.ics") in ctx.cursor
    path.write_bytes(whole)
    payloads, ctx2 = collect([tmp_path], since=ctx.cursor)
    assert summaries(payloads)["Dentist"] == 1 and str(path) in ctx2.cursor
    (tmp_path / "binary.ics").write_bytes(bytes(range(256)) * 40)
    payloads, ctx3 = collect([tmp_path / "binary.ics"])
    assert payloads == [] and ctx3.skips == {"unreadable_file": 1}


def test_a_rule_is_bounded_per_event_and_one_that_cannot_reach_the_window_is_not_walked_there(tmp_path):
    path = tmp_path / "dense.ics"
    path.write_text(ics("UID:tick\nDTSTART:20260301T000000Z\nRRULE:FREQ=SECONDLY\nSUMMARY:Tick",
                        "UID:old-tick\nDTSTART:20000101T000000Z\nRRULE:FREQ=SECONDLY\nSUMMARY:Old tick",
                        "UID:hourly\nDTSTART:20250101T000000Z\nRRULE:FREQ=HOURLY\nSUMMARY:Hourly",
                        "UID:dentist\nDTSTART:20260310T090000Z\nSUMMARY:Dentist"), newline="")
    payloads, ctx = collect([path])
    got = summaries(payloads)
    assert got["Tick"] == PER_EVENT and got["Dentist"] == 1 and "Old tick" not in got
    assert got["Hourly"] == 44 * 24                     # every hour of the window (its end excluded): not capped
    ticks = sorted(p["occurred_at"] for p in payloads if p["provenance"]["summary"] == "Tick")
    assert ticks[0] == datetime(2026, 3, 1, tzinfo=timezone.utc).timestamp() and ticks[1] - ticks[0] == 1
    assert ctx.skips == {"expansion_capped": 2}
    assert any("old-tick" in d and "before the window" in d for _, d in ctx.details)


def test_expansion_is_bounded_per_file_and_a_run_leaves_whole_files_for_the_next(tmp_path):
    dense = ics(*[f"UID:tick{i}\nDTSTART:20260301T000000Z\nRRULE:FREQ=SECONDLY\nSUMMARY:Tick {i}" for i in range(12)],
                "UID:dentist\nDTSTART:20260310T090000Z\nSUMMARY:Dentist")
    for name in ("a", "b", "c"):
        (tmp_path / f"{name}.ics").write_text(dense.replace("Dentist", f"Dentist {name}"), newline="")
    payloads, ctx = collect([tmp_path])
    per_file = Counter(p["provenance"]["summary"].startswith("Dentist") for p in payloads)
    assert len(payloads) == 2 * MAX_OCCURRENCES_PER_FILE == MAX_OCCURRENCES_PER_RUN
    assert per_file[True] == 2                           # each read file's plain event is in, budget or not
    assert ctx.skips == {"expansion_capped": 2 * 12}     # 9 capped at 1,056, one cut short, two not expanded
    assert sorted(Path(k).name for k in ctx.cursor) == ["a.ics", "b.ics"]   # c.ics waits, untouched
    later, ctx2 = collect([tmp_path], since=ctx.cursor, clock=NOW + 60)
    assert len(later) == MAX_OCCURRENCES_PER_FILE and summaries(later)["Dentist c"] == 1
    assert sorted(Path(k).name for k in ctx2.cursor) == ["a.ics", "b.ics", "c.ics"]


def test_a_spent_time_budget_skips_recurring_series_but_never_plain_events(tmp_path):
    path = tmp_path / "slow.ics"
    path.write_text(ics("UID:weekly\nDTSTART:20260302T080000Z\nRRULE:FREQ=WEEKLY;COUNT=3\nSUMMARY:Weekly",
                        "UID:dentist\nDTSTART:20260310T090000Z\nSUMMARY:Dentist"), newline="")
    payloads, ctx = collect([path], bounds=Bounds.for_window(44, seconds_per_file=0.0))
    assert summaries(payloads) == {"Dentist": 1}
    assert ctx.skips == {"expansion_capped": 1} and "weekly" in ctx.details[0][1]
