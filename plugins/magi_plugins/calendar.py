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
event) is retired. Each occurrence declares its ``schedule``, so future ones are
visible before they happen (architecture §16).

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
from datetime import datetime, timedelta, timezone
from pathlib import Path

from magi_desktop.plugin_api import activity, hookimpl

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

# A run reads files while at least one more file's whole budget fits in what is left.
MAX_OCCURRENCES_PER_RUN = 20_000       # the host cuts a run at 50,000 payloads
MAX_STEPS_PER_RUN = 2 * MAX_STEPS_PER_FILE
MAX_SECONDS_PER_RUN = 3 * MAX_SECONDS_PER_FILE


def ics_files(paths: list[str]) -> list[Path]:
    found: list[Path] = []
    for item in paths:
        path = Path(item).expanduser()
        if path.is_dir():
            found += sorted(p for p in path.rglob("*.ics") if p.is_file())
        elif path.is_file():
            found.append(path)
    return found


class CalendarFiles:
    name = "calendar"
    source_type = "calendar"
    interval_seconds = 900
    settings_schema = {
        "paths": {"type": "array", "items": {"type": "string"}, "description": ".ics files or folders of them"},
        "days_back": {"type": "number", "default": 30},
        "days_ahead": {"type": "number", "default": 14},
    }
    privacy_note = ("Reads the titles, times and places of events in the calendar files you list. Excluded paths "
                    "are skipped. Nothing leaves this machine.")

    def __init__(self, clock=time.time, bounds: Bounds | None = None):
        self.clock = clock
        self.bounds = bounds

    def collect(self, since, ctx):
        seen = dict(since or {})
        now = datetime.fromtimestamp(self.clock(), timezone.utc)
        days_back, days_ahead = float(ctx.settings.get("days_back", 30)), float(ctx.settings.get("days_ahead", 14))
        start, end = now - timedelta(days=days_back), now + timedelta(days=days_ahead)
        bounds = self.bounds or Bounds.for_window(days_back + days_ahead)
        run, opened = FileReading(), 0
        for path in ics_files(ctx.settings.get("paths") or []):
            if ctx.stopping:
                return
            if ctx.excluded("paths", str(path)):
                continue
            key, mtime = str(path), path.stat().st_mtime
            state = seen.get(key)
            if not isinstance(state, dict):
                state = {"mtime": state, "until": None}     # a cursor from before the window was kept
            window_start = start
            # A cursor without the natural keys (written before they existed) reads the file once in full,
            # so the occurrences stored then take their keys before any of them is edited.
            if state["mtime"] == mtime and "keys" in state:
                if state["until"] is not None and end.timestamp() - state["until"] < 86400:
                    continue      # unchanged, and the window has not moved a day yet
                if state["until"] is not None:
                    window_start = max(start, datetime.fromtimestamp(state["until"], timezone.utc))
            if opened and not _room_for_a_file(run, bounds):
                log.info("calendar: this run's expansion budget is spent; %s and the rest wait for the next", path)
                return
            file, opened = FileReading(), opened + 1
            known = dict(state.get("keys") or {})       # natural key -> start, of what earlier runs stored
            found: dict[str, float] = {}
            retired: set[str] = set()
            try:
                data = path.read_bytes()
                for event in occurrences(path.name, data, window_start, end, bounds, ctx.skipped, file):
                    payload = _payload(path, event)
                    if payload is None:
                        ctx.skipped("bad_date", f"{path.name}: {str(event.get('UID', ''))[:80]}: an occurrence "
                                                "without a usable start or end")
                        continue
                    found[payload["natural_key"]] = payload["occurred_at"]    # a retirement too: said once
                    if payload.get("retire"):
                        retired.add(payload["natural_key"])
                    yield payload
                    if ctx.stopping:
                        return      # not marked read: the next run reads the file again
                # What an earlier run stored in this window that the file no longer has (an EXDATE added, an
                # event deleted) is retired.
                for natural_key, begins in known.items():
                    if natural_key not in found and window_start.timestamp() <= begins <= end.timestamp():
                        yield _retirement(natural_key, begins)
            except (Unreadable, OSError) as exc:
                # Not marked read: a file being written now is whole next time. Counted on every run until then.
                ctx.skipped("unreadable_file", f"{path.name}: {exc}")
                continue
            finally:
                run.occurrences += file.occurrences
                run.steps += file.steps
            # Remembered until they leave the window: what this read covered is what it found.
            kept = {k: t for k, t in known.items()
                    if t >= start.timestamp() and not window_start.timestamp() <= t <= end.timestamp()}
            stored = {k: t for k, t in found.items() if k not in retired}
            seen[key] = {"mtime": mtime, "until": end.timestamp(), "keys": kept | stored}
            ctx.save_cursor(dict(seen))


def _room_for_a_file(run: FileReading, bounds: Bounds) -> bool:
    return (run.occurrences + min(bounds.per_file, MAX_OCCURRENCES_PER_FILE) <= MAX_OCCURRENCES_PER_RUN
            and run.steps + bounds.steps_per_file <= MAX_STEPS_PER_RUN
            and time.monotonic() - run.started + bounds.seconds_per_file <= MAX_SECONDS_PER_RUN)


def _payload(path: Path, event) -> dict | None:
    try:
        begins, all_day = epoch(event.get("DTSTART").dt)
        ends = epoch(event.get("DTEND").dt)[0] if event.get("DTEND") else begins
    except (AttributeError, ValueError, TypeError):
        return None
    summary = str(event.get("SUMMARY", "")).strip() or "(no title)"
    provenance = {"summary": summary, "start": begins, "end": ends, "all_day": all_day}
    if event.get("LOCATION"):
        provenance["location"] = str(event.get("LOCATION"))
    uid = str(event.get("UID", f"{path.name}:{summary}"))
    said = hashlib.sha1(f"{summary}\0{begins}\0{ends}\0{provenance.get('location', '')}".encode()).hexdigest()[:10]
    try:
        recurrence = epoch(event.get("RECURRENCE-ID").dt)[0] if event.get("RECURRENCE-ID") else None
    except (AttributeError, ValueError, TypeError):
        return None
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
