"""Hostile sources, as properties (issue 16, defect 6): generated calendar files, shell histories and
browser History files never crash a collector run, never yield more than the bounds, lose no good item
next to bad ones, and every item left out is counted."""
# Raw SQL left builds a real-format browser History file, never the memory.

from __future__ import annotations

import random
import re
import sqlite3
import tempfile
import unicodedata
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import pytest
from collecting import Ctx
from hypothesis import example, given
from hypothesis import strategies as st
from magi_plugins.browser import BrowserHistory, _profile_id
from magi_plugins.calendar import CalendarFiles
from magi_plugins.history_lines import MAX_LINE_BYTES
from magi_plugins.ical_reading import Bounds
from magi_plugins.terminal import TerminalHistory

from .fuzzing import count, nasty_text

pytestmark = pytest.mark.fuzz

NOW = datetime(2026, 3, 18, 12, 0, tzinfo=timezone.utc).timestamp()
CALENDAR_REASONS = {"bad_dtstart", "missing_dtstart", "bad_date", "bad_rrule", "unknown_timezone", "bad_event",
                    "expansion_capped", "unreadable_file"}
# Small bounds so that a generated FREQ=SECONDLY costs milliseconds; the defaults are tested in
# test_collector_calendar_hostile.py.
BOUNDS = Bounds(per_event=40, per_file=150, steps_per_event=5_000, steps_per_file=20_000)

_STARTS = st.sampled_from([
    "DTSTART:20260310T090000Z", "DTSTART:20260301T000000Z", "DTSTART;VALUE=DATE:20260320",
    "DTSTART;TZID=Europe/Berlin:20260310T090000", "DTSTART:20260310T090000",           # floating
    "DTSTART:20261345T250000Z", "DTSTART:yesterday", "DTSTART;TZID=Nowhere/Atlantis:20260310T090000",
    "DTSTART;VALUE=DATE:20260230", "", "DTSTART:20260310T090000Z\r\nDTSTART:20260311T090000Z",
])
_ENDS = st.sampled_from(["", "DTEND:20260310T100000Z", "DTEND:20250101T000000Z", "DTEND:garbage",
                         "DURATION:PT1H", "DURATION:-PT1H", "DTEND;VALUE=DATE:20260322"])
_RULES = st.sampled_from([
    "", "RRULE:FREQ=DAILY;COUNT=3", "RRULE:FREQ=WEEKLY;BYDAY=MO,WE", "RRULE:FREQ=DAILY;COUNT=-1",
    "RRULE:FREQ=SECONDLY", "RRULE:FREQ=MINUTELY;INTERVAL=0", "RRULE:FREQ=FOO", "RRULE:FREQ=SECONDLY;BYSECOND=61",
    "RRULE:FREQ=HOURLY;BYMONTH=2;BYMONTHDAY=30", "RRULE:FREQ=DAILY;UNTIL=20200101T000000Z",
    "RRULE:FREQ=YEARLY;BYMONTH=13", "RRULE:FREQ=DAILY;UNTIL=20260315", "RRULE:COUNT=2",
    "RRULE:FREQ=DAILY;COUNT=2\r\nRRULE:FREQ=SECONDLY", "RRULE:FREQ=MONTHLY;BYDAY=1MO,-1FR",
])
_EXTRA = st.sampled_from(["", "RDATE:20260312T090000Z,20260313T090000Z", "RDATE:nonsense", "EXDATE:garbage",
                          "RECURRENCE-ID:20260311T090000Z", "LOCATION:Room 4", "X-WEIRD;P=1:value"])


@st.composite
def hostile_events(draw):
    parts = [draw(_STARTS), draw(_ENDS), draw(_RULES), draw(_EXTRA)]
    summary = draw(nasty_text).replace("\r", " ").replace("\n", " ")
    return "\r\n".join(p for p in parts if p) + f"\r\nSUMMARY:{summary}"


ANCHOR = "UID:anchor@test\r\nDTSTART:20260310T090000Z\r\nDTEND:20260310T100000Z\r\nSUMMARY:Anchor"


def _calendar(events: list[str]) -> str:
    body = "".join(f"BEGIN:VEVENT\r\nUID:ev{i}@test\r\n{e}\r\nEND:VEVENT\r\n" for i, e in enumerate(events))
    return f"BEGIN:VCALENDAR\r\nVERSION:2.0\r\n{body}BEGIN:VEVENT\r\n{ANCHOR}\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"


@given(events=st.lists(hostile_events(), min_size=1, max_size=6), damage=st.sampled_from(["none", "cut", "bytes"]),
       where=st.floats(0, 1))
def test_a_hostile_calendar_never_crashes_stays_bounded_and_counts_what_it_drops(events, damage, where):
    count("collector.calendar")
    text = _calendar(events).encode("utf-8", "surrogatepass")
    at = int(len(text) * where)
    if damage == "cut":
        text = text[:at]
    elif damage == "bytes":
        text = text[:at] + b"\x00\xff\xfe\r\n\x80garbage" + text[at:]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "hostile.ics"
        path.write_bytes(text)
        ctx = Ctx({"paths": [str(path)]}, temp_dir=tmp)
        payloads = list(CalendarFiles(clock=lambda: NOW, bounds=BOUNDS).collect(None, ctx))
    assert set(ctx.skips) <= CALENDAR_REASONS
    if ctx.skips["unreadable_file"]:
        assert payloads == [] and ctx.cursor is None        # nothing read, so never marked read
        return
    assert len(payloads) <= BOUNDS.per_file
    per_uid = Counter(p["source_item_id"].split(":")[0] for p in payloads)
    assert max(per_uid.values(), default=0) <= BOUNDS.per_event
    if damage == "none":
        # The good event next to the bad ones is always read, and every generated event — each starts in
        # the window when it starts at all — is either stored or counted with a reason naming it.
        assert per_uid["anchor@test"] == 1
        counted = {detail.split(": ")[1] for _, detail in ctx.details}
        for i in range(len(events)):
            uid = f"ev{i}@test"
            assert per_uid[uid] or uid in counted, (events[i], ctx.details)


# ------------------------------------------------------------------ terminal

_typed = st.text(st.characters(categories=["L", "N", "P", "S", "Zs"]), min_size=1, max_size=60).map(str.strip).filter(
    lambda c: c and not c.startswith("#"))
_segment = st.one_of(st.lists(_typed, min_size=2, max_size=4).map(lambda cs: ("typed", cs)),
                     st.binary(min_size=1, max_size=3000).map(lambda b: ("garbage", b)),
                     st.integers(MAX_LINE_BYTES + 1, MAX_LINE_BYTES + 50).map(lambda n: ("garbage", b"y" * n)))


@given(segments=st.lists(_segment, min_size=1, max_size=8))
def test_garbage_in_a_shell_history_never_becomes_commands_and_every_line_is_accounted_for(segments):
    count("collector.terminal")
    data = b"".join((b"".join(c.encode() + b"\n" for c in body) if kind == "typed" else body + b"\n")
                    for kind, body in segments)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ".bash_history"
        path.write_bytes(data)
        ctx = Ctx({"files": [str(path)]}, temp_dir=tmp)
        got = [p["provenance"]["command"] for p in TerminalHistory().collect(None, ctx)]
    typed = [c for kind, body in segments if kind == "typed" for c in body]
    assert [c for c in got if c in typed] == typed             # every real command, in order
    for command in got:                                         # and nothing that is not text
        assert "\0" not in command and len(command.encode()) <= MAX_LINE_BYTES
        controls = sum(unicodedata.category(ch) == "Cc" and ch != "\t" for ch in command)
        assert controls <= 0.25 * len(command)
    raw_lines = data.split(b"\n")[:-1]
    quiet = sum(1 for raw in raw_lines if not raw.strip() or re.fullmatch(rb"#\d{9,11}\r?", raw))
    assert len(got) + sum(ctx.skips.values()) + quiet >= len(raw_lines)   # each line: a command, counted, or blank
    assert len(got) + sum(ctx.skips.values()) <= len(raw_lines)


# ------------------------------------------------------------------ browser


def _history(path: Path, visits: int) -> None:
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE urls(id INTEGER PRIMARY KEY AUTOINCREMENT, url LONGVARCHAR, title LONGVARCHAR,
                          visit_count INTEGER DEFAULT 0 NOT NULL, typed_count INTEGER DEFAULT 0 NOT NULL,
                          last_visit_time INTEGER NOT NULL, hidden INTEGER DEFAULT 0 NOT NULL);
        CREATE TABLE visits(id INTEGER PRIMARY KEY, url INTEGER NOT NULL, visit_time INTEGER NOT NULL,
                            from_visit INTEGER, transition INTEGER DEFAULT 0 NOT NULL,
                            segment_id INTEGER, visit_duration INTEGER DEFAULT 0 NOT NULL);
    """)
    raw = int((NOW - 3600 + 11_644_473_600) * 1e6)
    for i in range(visits):
        conn.execute("INSERT INTO urls (url, title, last_visit_time) VALUES (?, ?, ?)",
                     (f"https://example.com/{i}", f"Page {i} " + "x" * 200, raw + i))
        conn.execute("INSERT INTO visits (url, visit_time) VALUES (?, ?)", (i + 1, raw + i))
    conn.commit()
    conn.close()


@given(damage=st.sampled_from(["cut", "overwrite", "flip"]), where=st.floats(0, 1), size=st.integers(1, 5000),
       seed=st.integers(0, 2**16))
@example(damage="flip", where=0.40625, size=25, seed=3)        # found by this property: sqlite3 raised
@example(damage="flip", where=0.8801742095937775, size=28, seed=65535)   # UnicodeDecodeError; an int address
def test_a_damaged_history_never_stops_the_other_profiles(damage, where, size, seed):
    count("collector.browser")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        paths = [folder / name / "History" for name in ("Default", "Profile 1", "Profile 2")]
        for path in paths:
            path.parent.mkdir()
            _history(path, 60)
        data = bytearray(paths[1].read_bytes())
        at = int(len(data) * where)
        noise = random.Random(seed).randbytes(size)
        if damage == "cut":
            data = data[:at]
        elif damage == "overwrite":
            data[at:at + size] = noise
        else:
            for i, byte in enumerate(noise[:64]):
                data[(at + i * 977) % len(data)] ^= byte or 1
        paths[1].write_bytes(bytes(data))
        scratch = folder / "scratch"
        scratch.mkdir()
        ctx = Ctx({"profiles": [str(p) for p in paths]}, temp_dir=scratch)
        payloads = list(BrowserHistory(now=lambda: NOW).collect(None, ctx))
        assert list(scratch.iterdir()) == []
    by_profile = Counter(p["source_item_id"].split(":")[1] for p in payloads)
    ids = [_profile_id(p) for p in paths]
    assert by_profile[ids[0]] == 60 and by_profile[ids[2]] == 60
    assert by_profile[ids[1]] <= 60 and set(ctx.skips) <= {"unreadable_history", "bad_url", "bad_visit"}
    assert (str(paths[1]) in ctx.cursor) != bool(ctx.skips["unreadable_history"])
