"""Calendar: events of iCalendar (.ics) files and folders, recurring events expanded in a window.

Each run reads the files that changed since the last run (by modification
time) and yields every event occurrence from ``days_back`` before now to
``days_ahead`` after it; an unchanged file is read again once a day, for the
occurrences the moving window has newly reached. Recurrences are expanded (RRULE, RDATE, EXDATE and moved
occurrences, through ``recurring_ical_events``). An occurrence's id is its UID,
its start and a hash of what it says, so re-reading a file stores nothing new
and an edited event is stored as what it became. Future occurrences stay
invisible to questions until their time comes.
"""

from __future__ import annotations

import hashlib
import time
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

from magi_desktop.plugin_api import activity, hookimpl


def ics_files(paths: list[str]) -> list[Path]:
    found: list[Path] = []
    for item in paths:
        path = Path(item).expanduser()
        if path.is_dir():
            found += sorted(p for p in path.rglob("*.ics") if p.is_file())
        elif path.is_file():
            found.append(path)
    return found


def _epoch(value) -> tuple[float, bool]:
    """(UNIX seconds, all-day?) of an iCalendar date or date-time (floating times read as UTC)."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        return value.timestamp(), False
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=timezone.utc).timestamp(), True
    raise ValueError(f"not a date: {value!r}")


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

    def __init__(self, clock=time.time):
        self.clock = clock

    def collect(self, since, ctx):
        import icalendar
        import recurring_ical_events

        seen = dict(since or {})
        now = datetime.fromtimestamp(self.clock(), timezone.utc)
        start = now - timedelta(days=float(ctx.settings.get("days_back", 30)))
        end = now + timedelta(days=float(ctx.settings.get("days_ahead", 14)))
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
            if state["mtime"] == mtime:
                if state["until"] is not None and end.timestamp() - state["until"] < 86400:
                    continue      # unchanged, and the window has not moved a day yet
                if state["until"] is not None:
                    window_start = max(start, datetime.fromtimestamp(state["until"], timezone.utc))
            done = {"mtime": mtime, "until": end.timestamp()}
            try:
                calendar = icalendar.Calendar.from_ical(path.read_bytes())
                occurrences = recurring_ical_events.of(calendar).between(window_start, end)
            except Exception:  # noqa: BLE001 - one broken file must not stop the others
                seen[key] = done
                continue
            for event in occurrences:
                try:
                    begins, all_day = _epoch(event.get("DTSTART").dt)
                    ends = _epoch(event.get("DTEND").dt)[0] if event.get("DTEND") else begins
                except (AttributeError, ValueError):
                    continue
                summary = str(event.get("SUMMARY", "")).strip() or "(no title)"
                provenance = {"summary": summary, "start": begins, "end": ends, "all_day": all_day}
                if event.get("LOCATION"):
                    provenance["location"] = str(event.get("LOCATION"))
                uid = str(event.get("UID", f"{path.name}:{summary}"))
                said = hashlib.sha1(f"{summary}\0{begins}\0{ends}\0{provenance.get('location', '')}".encode()
                                    ).hexdigest()[:10]
                yield activity("calendar", "calendar_event", begins, provenance,
                               item_id=f"{uid}:{int(begins)}:{said}")
            seen[key] = done
            ctx.save_cursor(dict(seen))


@hookimpl
def register_collectors(register):
    register(CalendarFiles())
