"""Time windows of L3 summaries, in local time: an hour, a day, a week (Monday first), a month."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, tzinfo

GRANULARITIES = ("hour", "day", "week", "month")
SPAN_SECONDS = {"hour": 3600.0, "day": 86400.0, "week": 7 * 86400.0, "month": 30.4 * 86400.0}


def _local(ts: float, tz: tzinfo | None) -> datetime:
    """The wall-clock time (naive) at ``ts`` in ``tz`` (None: this machine's zone)."""
    return datetime.fromtimestamp(ts, tz).replace(tzinfo=None) if tz else datetime.fromtimestamp(ts)


def _ts(wall: datetime, tz: tzinfo | None) -> float:
    """The moment a wall-clock time happens (DST included)."""
    return wall.replace(tzinfo=tz).timestamp() if tz else wall.timestamp()


def _start(moment: datetime, granularity: str) -> datetime:
    if granularity == "hour":
        return moment.replace(minute=0, second=0, microsecond=0)
    day = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    if granularity == "day":
        return day
    if granularity == "week":
        return day - timedelta(days=day.weekday())
    if granularity == "month":
        return day.replace(day=1)
    raise ValueError(f"unknown granularity {granularity!r}")


def _next(start: datetime, granularity: str) -> datetime:
    if granularity == "month":
        year, month = (start.year + 1, 1) if start.month == 12 else (start.year, start.month + 1)
        return start.replace(year=year, month=month, day=1)
    return start + {"hour": timedelta(hours=1), "day": timedelta(days=1), "week": timedelta(days=7)}[granularity]


# Per granularity: a window's key (stable, sortable) and its label (what a person reads), from its start.
_NAMES: dict[str, tuple[Callable[[datetime], str], Callable[[datetime], str]]] = {
    "hour": (lambda start: f"hour:{start:%Y-%m-%dT%H}",
             lambda start: f"{start:%a %d %b %Y, %H:00}–{(start + timedelta(hours=1)):%H:00}"),
    "day": (lambda start: f"day:{start:%Y-%m-%d}", lambda start: f"{start:%A %d %B %Y}"),
    "week": (lambda start: f"week:{start.isocalendar().year}-W{start.isocalendar().week:02d}",
             lambda start: f"the week of {start:%d %B %Y}"),
    "month": (lambda start: f"month:{start:%Y-%m}", lambda start: f"{start:%B %Y}"),
}


def key_of(granularity: str, start: datetime) -> str:
    return _NAMES.get(granularity, _NAMES["month"])[0](start)


def label_of(granularity: str, start: datetime) -> str:
    return _NAMES.get(granularity, _NAMES["month"])[1](start)


def window_of(granularity: str, ts: float, tz: tzinfo | None = None) -> tuple[float, float, str]:
    """(start, end, key) of the window holding ``ts``."""
    start = _start(_local(ts, tz), granularity)
    return _ts(start, tz), _ts(_next(start, granularity), tz), key_of(granularity, start)


def window_at(granularity: str, ts: float, tz: tzinfo | None = None) -> tuple[float, float, str, str]:
    """(start, end, key, label) of the window holding ``ts``."""
    start = _start(_local(ts, tz), granularity)
    return _ts(start, tz), _ts(_next(start, granularity), tz), key_of(granularity, start), label_of(granularity, start)


def closed_windows(granularity: str, since: float, now: float,
                   tz: tzinfo | None = None) -> Iterator[tuple[float, float, str, str]]:
    """(start, end, key, label) of every window that starts at or after ``since``'s window and has
    ended by ``now``, oldest first."""
    start = _start(_local(since, tz), granularity)
    while True:
        end = _next(start, granularity)
        if _ts(end, tz) > now:
            return
        yield _ts(start, tz), _ts(end, tz), key_of(granularity, start), label_of(granularity, start)
        start = end


def day_of(ts: float) -> str:
    """The local date of a moment, as YYYY-MM-DD."""
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d")
