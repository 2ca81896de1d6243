"""Calendar: events of iCalendar (.ics) files and folders, recurring events expanded in a window.

Each run reads the files that changed since the last run (by modification
time) and yields every event occurrence from ``days_back`` before now to
``days_ahead`` after it; an unchanged file is read again once a day, for the
occurrences the moving window has newly reached. Recurrences are expanded (RRULE, RDATE, EXDATE and moved
occurrences, through ``recurring_ical_events``). An occurrence's id is its UID,
its start and a hash of what it says, so re-reading a file stores nothing new.
Its *natural key* is its UID and, in a series, its RECURRENCE-ID (the start the
rule gave it): an edited or moved occurrence supersedes the stored one, and a
cancelled one (STATUS:CANCELLED, or gone from the file: an EXDATE, a deleted
event, a deleted file of a folder) is retired. Each occurrence declares its ``schedule``, so future ones are
visible before they happen (architecture §16). Times are stored in UTC: a TZID is read from the file's
VTIMEZONE (any name, Outlook's and custom ones too) or the tz database, floating times and all-day dates
in the machine's zone (``ical_reading.epoch``).

Health (issue 19): every entry of ``paths`` is a source. One that cannot be read at all is *unavailable*
with the reason and the fix (``calendar_sources``): no such file or folder, permission denied, a folder
without ``.ics`` files. A file that is not iCalendar is skipped and counted (``unreadable_file``; a calendar
program may be half-way through writing it) and read again next run; when no file of a source can be read,
the source is *failing* with the reason, so a wrong file in Settings is not a silent "idle".

Hostile or broken files (issue 16): each event is read alone (``ical_reading``), so a broken one is
skipped and counted by reason (``ctx.skipped``) and the rest of the file is stored; a file that cannot
be parsed at all is counted and left for the next run, never marked read. Expansion is bounded per
event, per file and per run; a run that has spent most of its budget leaves the remaining files for
the next run instead of cutting one in half.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone, tzinfo
from pathlib import Path
from typing import Any

from magi_desktop.plugin_api import Unavailable, activity, hookimpl

from .calendar_sources import Listing, Problem, calendar_files, denied
from .ical_reading import (
    MAX_OCCURRENCES_PER_FILE,
    MAX_SECONDS_PER_FILE,
    MAX_STEPS_PER_FILE,
    Bounds,
    FileReading,
    Unreadable,
    epoch,
    occurrences,
)

log = logging.getLogger(__name__)

DAYS_BACK, DAYS_AHEAD = 30, 14
# A run reads files while at least one more file's whole budget fits in what is left.
MAX_OCCURRENCES_PER_RUN = 20_000       # the host cuts a run at 50,000 payloads
MAX_STEPS_PER_RUN = 2 * MAX_STEPS_PER_FILE
MAX_SECONDS_PER_RUN = 3 * MAX_SECONDS_PER_FILE
NOT_CHOSEN = ("no calendar files chosen", "add .ics files or folders under Calendar in Settings")


@dataclass
class _Run:
    """One run's window, cursor and what its reading has cost so far."""

    start: datetime
    end: datetime
    bounds: Bounds
    seen: dict[str, Any]
    reading: FileReading = field(default_factory=FileReading)
    opened: int = 0
    over: bool = False      # the expansion budget is spent, or the host asked to stop: the rest waits


@dataclass(frozen=True)
class _Broken:
    """A file that could not be read this run: ``denied`` when this user may not read it."""

    detail: str
    denied: bool = False


class CalendarFiles:
    name = "calendar"
    source_type = "calendar"
    interval_seconds = 900
    settings_schema = {
        "paths": {"type": "array", "items": {"type": "string"}, "title": "Calendar files",
                  "description": ".ics files, or folders whose .ics files (in subfolders too) are read: a calendar "
                                 "you exported, Evolution's calendar.ics, a vdirsyncer or khal folder, "
                                 "~/Library/Calendars on macOS"},
        "days_back": {"type": "number", "default": DAYS_BACK, "minimum": 0, "title": "Days back",
                      "description": "How far back events are read, in days, so what you did can be asked about; "
                                     "older events stored before stay"},
        "days_ahead": {"type": "number", "default": DAYS_AHEAD, "minimum": 0, "title": "Days ahead",
                       "description": "How far ahead plans are read, in days: events up to this many days from now "
                                      "are stored before they happen, so \"what's on next week?\" finds them; "
                                      "recurring events are expanded up to here"},
    }
    privacy_note = ("Reads the titles, times and places of events in the calendar files you list. Excluded paths "
                    "are skipped. Nothing leaves this machine.")

    def __init__(self, clock: Callable[[], float] = time.time, bounds: Bounds | None = None,
                 local_zone: tzinfo | None = None):
        self.clock = clock
        self.bounds = bounds
        self.local_zone = local_zone        # of floating times and all-day dates; None: the machine's

    def collect(self, since, ctx):
        paths = [str(item) for item in ctx.settings.get("paths") or [] if str(item).strip()]
        if not paths:
            raise Unavailable(*NOT_CHOSEN)
        now = datetime.fromtimestamp(self.clock(), timezone.utc)
        days_back = max(0.0, float(ctx.settings.get("days_back", DAYS_BACK)))
        days_ahead = max(0.0, float(ctx.settings.get("days_ahead", DAYS_AHEAD)))
        run = _Run(now - timedelta(days=days_back), now + timedelta(days=days_ahead),
                   self.bounds or Bounds.for_window(days_back + days_ahead), dict(since or {}))
        for setting in paths:
            if ctx.stopping or run.over:
                return
            if ctx.excluded("paths", str(Path(setting).expanduser())):
                continue
            ctx.source(setting)
            listing = calendar_files(setting)
            if listing.problem is not None:
                # Nothing it stored is retired: a folder on a drive not mounted now is back later.
                ctx.unavailable(setting, listing.problem.reason, listing.problem.fix)
                continue
            for folder in listing.unlisted:
                ctx.skipped("permission_denied", f"{setting}: {folder}: a folder it may not list")
            yield from self._retire_removed_files(setting, listing, run, ctx)
            broken: list[_Broken] = []
            tried = 0
            for path in listing.files:
                if ctx.stopping:
                    return
                if ctx.excluded("paths", str(path)):
                    continue
                outcome = yield from self._read_file(path, run, ctx)
                if run.over:
                    return
                tried += 1
                if isinstance(outcome, _Broken):
                    broken.append(outcome)
            if broken and len(broken) == tried:
                _say_unreadable(ctx, setting, broken, tried)

    def _read_file(self, path: Path, run: _Run, ctx) -> Generator[dict, None, _Broken | None]:
        """Yield the payloads of one file (a generator whose value is a :class:`_Broken` when it could not be
        read); marks it read in the cursor once all of it was yielded."""
        key = str(path)
        try:
            mtime = path.stat().st_mtime
        except OSError as exc:
            return _unreadable(ctx, path, exc)
        state = run.seen.get(key)
        if not isinstance(state, dict):
            state = {"mtime": state, "until": None}     # a cursor from before the window was kept
        window_start = run.start
        # A cursor without the natural keys (written before they existed) reads the file once in full,
        # so the occurrences stored then take their keys before any of them is edited.
        if state["mtime"] == mtime and "keys" in state:
            if state["until"] is not None and run.end.timestamp() - state["until"] < 86400:
                return None      # unchanged, and the window has not moved a day yet
            if state["until"] is not None:
                window_start = max(run.start, datetime.fromtimestamp(state["until"], timezone.utc))
        if run.opened and not _room_for_a_file(run.reading, run.bounds):
            log.info("calendar: this run's expansion budget is spent; %s and the rest wait for the next", path)
            run.over = True
            return None
        run.opened += 1
        try:
            data = path.read_bytes()
        except OSError as exc:
            return _unreadable(ctx, path, exc)
        file = FileReading()
        known = dict(state.get("keys") or {})       # natural key -> start, of what earlier runs stored
        found: dict[str, float] = {}
        retired: set[str] = set()
        try:
            for event in occurrences(path.name, data, window_start, run.end, run.bounds, ctx.skipped, file):
                payload = _payload(path, event, self.local_zone)
                if payload is None:
                    ctx.skipped("bad_date", f"{path.name}: {str(event.get('UID', ''))[:80]}: an occurrence "
                                            "without a usable start or end")
                    continue
                found[payload["natural_key"]] = payload["occurred_at"]    # a retirement too: said once
                if payload.get("retire"):
                    retired.add(payload["natural_key"])
                yield payload
                if ctx.stopping:
                    run.over = True
                    return None      # not marked read: the next run reads the file again
            # What an earlier run stored in this window that the file no longer has (an EXDATE added, an
            # event deleted) is retired.
            for natural_key, begins in known.items():
                if natural_key not in found and window_start.timestamp() <= begins <= run.end.timestamp():
                    yield _retirement(natural_key, begins)
        except Unreadable as exc:
            # Not marked read: a file being written now is whole next time. Counted on every run until then.
            ctx.skipped("unreadable_file", f"{path.name}: {exc}")
            return _Broken(f"{path.name} is not an iCalendar file: {exc}")
        finally:
            run.reading.occurrences += file.occurrences
            run.reading.steps += file.steps
        # Remembered until they leave the window: what this read covered is what it found.
        kept = {k: t for k, t in known.items()
                if t >= run.start.timestamp() and not window_start.timestamp() <= t <= run.end.timestamp()}
        stored = {k: t for k, t in found.items() if k not in retired}
        run.seen[key] = {"mtime": mtime, "until": run.end.timestamp(), "keys": kept | stored}
        ctx.save_cursor(dict(run.seen))
        return None

    def _retire_removed_files(self, setting: str, listing: Listing, run: _Run, ctx) -> Iterator[dict]:
        """A file read before that is gone from a folder it listed whole (an event deleted in a folder of one file
        per event) retires what it stored; another file holding the same occurrence keeps it."""
        root = Path(setting).expanduser()
        present = {str(path) for path in listing.files}
        unlisted = [root / folder for folder in listing.unlisted]     # what is in them is unknown, not gone
        gone = [key for key in run.seen if key not in present and Path(key).is_relative_to(root)
                and not any(Path(key).is_relative_to(folder) for folder in unlisted)]
        if not gone:
            return
        elsewhere = {k for key, state in run.seen.items() if key not in gone and isinstance(state, dict)
                     for k in state.get("keys") or {}}
        for key in gone:
            state = run.seen.pop(key)
            for natural_key, begins in (state.get("keys") or {}).items() if isinstance(state, dict) else ():
                if natural_key not in elsewhere:
                    yield _retirement(natural_key, begins)
        ctx.save_cursor(dict(run.seen))


def _unreadable(ctx, path: Path, exc: OSError) -> _Broken:
    if isinstance(exc, PermissionError):
        ctx.skipped("permission_denied", f"{path.name}: this user may not read it")
        return _Broken(str(path), denied=True)
    ctx.skipped("unreadable_file", f"{path.name}: {exc.strerror or exc}")
    return _Broken(f"cannot read {path.name}: {exc.strerror or exc}")


def _say_unreadable(ctx, setting: str, broken: list[_Broken], tried: int) -> None:
    """No file of the source could be read: unavailable when this user may read none, else failing."""
    if all(b.denied for b in broken):
        problem: Problem = denied(broken[0].detail if tried == 1 else f"{setting} ({tried} files)")
        ctx.unavailable(setting, problem.reason, problem.fix)
        return
    first = next(b for b in broken if not b.denied)
    ctx.failing(setting, first.detail if tried == 1 else f"none of its {tried} files can be read; {first.detail}")


def _room_for_a_file(run: FileReading, bounds: Bounds) -> bool:
    return (run.occurrences + min(bounds.per_file, MAX_OCCURRENCES_PER_FILE) <= MAX_OCCURRENCES_PER_RUN
            and run.steps + bounds.steps_per_file <= MAX_STEPS_PER_RUN
            and time.monotonic() - run.started + bounds.seconds_per_file <= MAX_SECONDS_PER_RUN)


def _payload(path: Path, event, local: tzinfo | None) -> dict | None:
    try:
        begins, all_day = epoch(event.get("DTSTART").dt, local)
        ends = epoch(event.get("DTEND").dt, local)[0] if event.get("DTEND") else begins
        # The key reads a floating RECURRENCE-ID as UTC, whatever the machine's zone: it names the occurrence,
        # and stays the same when the user travels (and as keys were stored before floating times were local).
        recurrence = epoch(event.get("RECURRENCE-ID").dt, timezone.utc)[0] if event.get("RECURRENCE-ID") else None
    except (AttributeError, ValueError, TypeError, OverflowError, OSError):
        return None
    summary = str(event.get("SUMMARY", "")).strip() or "(no title)"
    provenance = {"summary": summary, "start": begins, "end": ends, "all_day": all_day}
    if all_day:      # its dates as written: a day is the same day wherever the user is, never a UTC clock time
        first = event.get("DTSTART").dt
        last = event.get("DTEND").dt if event.get("DTEND") else None
        provenance["day"] = first.isoformat()
        if type(last) is date and last - timedelta(days=1) > first:      # DTEND is the day after the last
            provenance["last_day"] = (last - timedelta(days=1)).isoformat()
    if event.get("LOCATION"):
        provenance["location"] = str(event.get("LOCATION"))
    uid = str(event.get("UID", f"{path.name}:{summary}"))
    said = hashlib.sha1(f"{summary}\0{begins}\0{ends}\0{provenance.get('location', '')}".encode()).hexdigest()[:10]
    # A series' occurrence is the one the rule gave that start, wherever it was moved; a single event is its UID.
    natural_key = uid if recurrence is None else f"{uid}@{int(recurrence)}"
    if str(event.get("STATUS", "")).strip().upper() == "CANCELLED":
        return _retirement(natural_key, begins)
    return activity("calendar", "calendar_event", begins, provenance, item_id=f"{uid}:{int(begins)}:{said}",
                    schedule={"start": begins, "end": max(begins, ends), "all_day": all_day}, natural_key=natural_key)


def _retirement(natural_key: str, begins: float) -> dict:
    """The payload that retires the stored occurrence of ``natural_key`` (a cancelled or removed one)."""
    return activity("calendar", "calendar_event", begins, {"summary": "(cancelled)", "start": begins, "end": begins},
                    natural_key=natural_key, retire=True)


@hookimpl
def register_collectors(register):
    register(CalendarFiles())
